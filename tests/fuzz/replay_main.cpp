// Standalone driver for a fuzz target without libFuzzer: runs
// LLVMFuzzerTestOneInput once on every file named on the command line and
// every regular file in the directories named there (in sorted order;
// names starting with '.' and README files are skipped).  This is how the
// seed corpora and the regression inputs run as ctest entries in every
// build, with any compiler (tests/fuzz/CMakeLists.txt).
//
//   fuzz_replay_<target> [--min-files N] PATH...
//
// Exits 0 when every input ran (a failing check in the target aborts), 1
// when a path cannot be read or fewer than N inputs were found (default 1:
// a seed corpus that went missing is an error, not a pass).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
// Tells the targets that they run under this driver (tests/fuzz/fuzz_input.h).
extern "C" int fz_replay_driver;
int fz_replay_driver = 1;
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

namespace fs = std::filesystem;

namespace {

bool skipped(const fs::path &p) {
    const std::string n = p.filename().string();
    return n.empty() || n[0] == '.' || n.rfind("README", 0) == 0;
}

bool read_file(const fs::path &p, std::vector<uint8_t> *out) {
    std::ifstream f(p, std::ios::binary);
    if (!f) return false;
    out->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    return !f.bad();
}

}  // namespace

int main(int argc, char **argv) {
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    long min_files = 1;
    std::vector<fs::path> files;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--min-files") == 0 && i + 1 < argc) {
            min_files = std::strtol(argv[++i], nullptr, 10);
            continue;
        }
        const fs::path p(argv[i]);
        std::error_code ec;
        if (fs::is_directory(p, ec)) {
            std::vector<fs::path> dir;
            for (const auto &e : fs::directory_iterator(p, ec))
                if (e.is_regular_file() && !skipped(e.path())) dir.push_back(e.path());
            if (ec) {
                std::fprintf(stderr, "replay: cannot list %s: %s\n", argv[i], ec.message().c_str());
                return 1;
            }
            std::sort(dir.begin(), dir.end());
            files.insert(files.end(), dir.begin(), dir.end());
        } else if (fs::is_regular_file(p, ec)) {
            files.push_back(p);
        } else {
            std::fprintf(stderr, "replay: no such file or directory: %s\n", argv[i]);
            return 1;
        }
    }
    std::vector<uint8_t> data;
    for (const fs::path &p : files) {
        if (!read_file(p, &data)) {
            std::fprintf(stderr, "replay: cannot read %s\n", p.c_str());
            return 1;
        }
        std::printf("replay: %s (%zu bytes)\n", p.c_str(), data.size());
        std::fflush(stdout);
        // A copy of exactly the input's size, as libFuzzer passes it (ASan
        // sees a read past the end).
        std::vector<uint8_t> copy(data);
        LLVMFuzzerTestOneInput(copy.empty() ? nullptr : copy.data(), copy.size());
    }
    std::printf("replay: %zu inputs ran\n", files.size());
    if (long(files.size()) < min_files) {
        std::fprintf(stderr, "replay: expected at least %ld inputs\n", min_files);
        return 1;
    }
    return 0;
}
