#include "anvil_bench_replay.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace anvil_bench {

namespace {

std::string field(const std::map<std::string, std::string> &f, const std::string &k) {
    const auto it = f.find(k);
    return it == f.end() ? std::string() : it->second;
}

// "bf16bf16f32" -> {"bf16", "bf16", "f32"}; false for anything else.
bool split_types(const std::string &s, std::vector<std::string> *out) {
    static const char *const names[] = {"bf16", "f32", "s32", "u8", "s8"};
    out->clear();
    size_t at = 0;
    while (at < s.size()) {
        bool found = false;
        for (const char *n : names) {
            const std::string t = n;
            if (s.compare(at, t.size(), t) == 0) {
                out->push_back(t);
                at += t.size();
                found = true;
                break;
            }
        }
        if (!found) return false;
    }
    return true;
}

// anvil-bench's --dt for a matmul recorded as A and B types (f32 with
// --dst given runs the fp32 matmul handle).
std::string lowp_dt(const std::string &a, const std::string &b) {
    if (a == "f32" && b == "f32") return "f32";
    if (a == "bf16" && b == "bf16") return "bf16";
    if (a == "u8" && b == "s8") return "u8s8s32";
    if (a == "s8" && b == "s8") return "s8s8s32";
    return "";
}

// The chain fields of matmul / conv lines as anvil-bench attribute options.
void chain_args(const std::map<std::string, std::string> &f, std::vector<std::string> *args) {
    const std::string scales = field(f, "scales");
    if (!scales.empty() && scales != "none") args->push_back("--attr-scales=" + scales);
    std::string zp = field(f, "zero_points");
    if (!zp.empty() && zp != "none") {
        // "src:3:dst:5" -> "src:3,dst:5"
        std::string out;
        int colons = 0;
        for (char c : zp) {
            if (c == ':' && ++colons % 2 == 0) c = ',';
            out += c;
        }
        args->push_back("--attr-zero-points=" + out);
    }
    if (field(f, "bias") == "1") args->push_back("--bias");
    const std::string ops = field(f, "post_ops");
    if (!ops.empty() && ops != "none") args->push_back("--attr-post-ops=" + ops);
}

}  // namespace

bool parse_exec_line(const std::string &line, std::map<std::string, std::string> *fields) {
    const std::string prefix = "anvil_verbose,exec,";
    const size_t at = line.find(prefix);
    if (at == std::string::npos) return false;
    fields->clear();
    std::istringstream in(line.substr(at + prefix.size()));
    std::string kv;
    while (std::getline(in, kv, ',')) {
        while (!kv.empty() && (kv.back() == '\r' || kv.back() == '\n')) kv.pop_back();
        const size_t eq = kv.find('=');
        if (eq == std::string::npos) continue;
        (*fields)[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    return !fields->empty();
}

bool replay_args(const std::map<std::string, std::string> &f, std::vector<std::string> *args,
                 std::string *why) {
    args->clear();
    const std::string op = field(f, "op"), dt = field(f, "dt");
    const std::string trans = field(f, "trans").empty() ? "NN" : field(f, "trans");
    std::vector<std::string> types;
    if (!split_types(dt, &types)) {
        *why = "unknown dt '" + dt + "'";
        return false;
    }
    if (op == "gemm" || op == "gemm_plan") {
        if (types.size() == 1 && types[0] == "f32") {
            *args = {"gemm", "--dt", "f32", "--shape", field(f, "shape"), "--trans", trans};
            if (op == "gemm_plan") args->push_back("--planned");
            const std::string alpha = field(f, "alpha"), beta = field(f, "beta");
            if (!alpha.empty()) args->insert(args->end(), {"--alpha", alpha});
            if (!beta.empty()) args->insert(args->end(), {"--beta", beta});
            return true;
        }
        if (types.size() == 3 && !lowp_dt(types[0], types[1]).empty()) {
            *args = {"gemm", "--dt", lowp_dt(types[0], types[1]), "--shape", field(f, "shape"),
                     "--trans", trans};
            return true;
        }
    } else if (op == "gemm_batch") {
        // benchdnn's batched form, a batch of 1 on a shared side.
        const std::string shape = field(f, "shape"), batch = field(f, "batch"),
                          shared = field(f, "shared");
        const size_t x1 = shape.find('x'), x2 = shape.rfind('x');
        const bool f32 = types.size() == 1 && types[0] == "f32";
        const bool bf16 = types.size() == 3 && lowp_dt(types[0], types[1]) == "bf16";
        if ((f32 || bf16) && x1 != std::string::npos && x2 != x1 && !batch.empty()) {
            const std::string M = shape.substr(0, x1), N = shape.substr(x1 + 1, x2 - x1 - 1),
                              K = shape.substr(x2 + 1);
            const bool sa = shared.find('A') != std::string::npos,
                       sb = shared.find('B') != std::string::npos;
            const std::string line = (sa ? "1" : batch) + "x" + M + "x" + K + ":" +
                                     (sb ? "1" : batch) + "x" + K + "x" + N;
            *args = {"gemm", "--dt", f32 ? "f32" : "bf16", "--shape", line, "--trans", trans};
            const std::string alpha = field(f, "alpha"), beta = field(f, "beta");
            if (!alpha.empty()) args->insert(args->end(), {"--alpha", alpha});
            if (!beta.empty()) args->insert(args->end(), {"--beta", beta});
            return true;
        }
    } else if (op == "matmul") {
        if (types.size() == 3 && !lowp_dt(types[0], types[1]).empty()) {
            *args = {"gemm", "--dt", lowp_dt(types[0], types[1]), "--planned", "--dst", types[2],
                     "--shape", field(f, "shape"), "--trans", trans};
            chain_args(f, args);
            return true;
        }
    } else if (op == "conv2d") {
        if (types.size() == 3) {
            *args = {"conv", "--dt", types[0] + types[1] + types[2], field(f, "problem")};
            if (types[0] == "f32" && types[2] == "f32") (*args)[2] = "f32";
            chain_args(f, args);
            return true;
        }
    } else {
        *why = "op '" + op + "' has no anvil-bench problem";
        return false;
    }
    *why = "types '" + dt + "' of op '" + op + "' have no anvil-bench problem";
    return false;
}

int run_replay(int argc, char **argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: anvil-bench replay LOG [ANVIL_BENCH_ARGS...]\n");
        return 2;
    }
    const std::string path = argv[2];
    std::vector<std::string> extra(argv + 3, argv + argc);
    std::ifstream in(path);
    if (!in) {
        std::fprintf(stderr, "anvil-bench replay: cannot read %s\n", path.c_str());
        return 2;
    }
    // Distinct problems in first-seen order, with how often each was called.
    std::vector<std::vector<std::string>> problems;
    std::vector<int> counts;
    std::vector<std::string> first_line;
    std::string line;
    int n = 0, skipped = 0;
    while (std::getline(in, line)) {
        ++n;
        std::map<std::string, std::string> f;
        if (!parse_exec_line(line, &f)) continue;
        std::vector<std::string> args;
        std::string why;
        if (!replay_args(f, &args, &why)) {
            std::printf("# skip %s:%d: %s\n", path.c_str(), n, why.c_str());
            ++skipped;
            continue;
        }
        size_t i = 0;
        while (i < problems.size() && problems[i] != args) ++i;
        if (i == problems.size()) {
            problems.push_back(args);
            counts.push_back(0);
            first_line.push_back(path + ":" + std::to_string(n));
        }
        ++counts[i];
    }
    std::printf("# anvil-bench replay %s: %zu distinct problem(s), %d line(s) skipped\n", path.c_str(),
                problems.size(), skipped);
    std::fflush(stdout);
    int failures = 0;
    for (size_t i = 0; i < problems.size(); ++i) {
        std::vector<std::string> args = problems[i];
        args.insert(args.end(), extra.begin(), extra.end());
        std::string shown = "anvil-bench";
        for (const auto &a : args) shown += " " + a;
        std::printf("\n# replay %zu/%zu (%s, called %d time(s)): %s\n", i + 1, problems.size(),
                    first_line[i].c_str(), counts[i], shown.c_str());
        std::fflush(stdout);
        std::vector<char *> cargv;
        std::string self = "/proc/self/exe";
        cargv.push_back(argv[0]);
        for (auto &a : args) cargv.push_back(&a[0]);
        cargv.push_back(nullptr);
        const pid_t pid = fork();
        if (pid == 0) {
            execv(self.c_str(), cargv.data());
            std::perror("anvil-bench replay: execv");
            _exit(127);
        }
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            std::printf("# replay %zu FAILED\n", i + 1);
            ++failures;
        }
        std::fflush(stdout);
    }
    std::printf("\n# replay: %zu problem(s), %d failure(s)\n", problems.size(), failures);
    return failures ? 1 : 0;
}

}  // namespace anvil_bench
