// anvil-bench: text, CSV and JSON writers.
#include "anvil_bench_output.h"

#include <cmath>

namespace anvil_bench {
namespace {

std::string json_str(const std::string &s) {
    std::string o = "\"";
    for (char c : s) {
        switch (c) {
            case '"': o += "\\\""; break;
            case '\\': o += "\\\\"; break;
            case '\n': o += "\\n"; break;
            case '\t': o += "\\t"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char b[8];
                    std::snprintf(b, sizeof b, "\\u%04x", c);
                    o += b;
                } else {
                    o += c;
                }
        }
    }
    return o + "\"";
}

std::string num(double v, const char *fmt = "%.3f") {
    if (!std::isfinite(v)) return "null";
    char b[64];
    std::snprintf(b, sizeof b, fmt, v);
    return b;
}

}  // namespace

std::string csv_field(const std::string &s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string o = "\"";
    for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
    return o + "\"";
}

std::FILE *open_or(const std::string &path, std::FILE *fallback) {
    if (path.empty()) return fallback;
    std::FILE *f = std::fopen(path.c_str(), "w");
    if (!f) std::fprintf(stderr, "anvil-bench: cannot write %s; using stdout\n", path.c_str());
    return f ? f : fallback;
}

reporter::reporter(const options &o, const run_info &info) : o_(o), info_(info) {
    if (o.csv) csv_ = open_or(o.csv_path, stdout);
    if (o.json) json_ = open_or(o.json_path, stdout);
    if (csv_ == stdout || json_ == stdout) text_ = stderr;
    if (csv_) {
        std::fprintf(csv_,
                     "op,dt,trans,M,N,K,threads,isa,anvil_gflops,peer,peer_gflops,ratio,pct_peak,"
                     "status,variant,anvil_spread_pct,peer_spread_pct,anvil_gbps,peer_gbps,"
                     "peer_pct_peak,peer_impl,backend,peer2,peer2_gflops,ratio2,peer2_pct_peak,"
                     "peer2_spread_pct,peer2_gbps,peer2_impl,attrs,base_anvil_gflops,chain_cost_pct,"
                     "base_peer_gflops,peer_chain_cost_pct,read_gbps,anvil_pct_bw,peer_pct_bw\n");
        std::fflush(csv_);
    }
}

reporter::~reporter() {
    if (csv_ && csv_ != stdout) std::fclose(csv_);
    if (json_ && json_ != stdout) std::fclose(json_);
}

const char *dt_unit(const std::string &dt) {
    return dt == "u8s8s32" || dt == "s8s8s32" ? "GOP/s" : "GFLOP/s";
}

void reporter::text_row(const row &r) {
    std::FILE *f = text_;
    std::fprintf(f, "%-5s %s%s%s %s %-16s%s%s%s T=%d %s%s: ", r.status.c_str(),
                 r.dt == "f32" ? "" : r.dt.c_str(), r.dt == "f32" ? "" : " ", r.variant.c_str(),
                 r.p.trans().c_str(), r.p.shape().c_str(), r.attrs.empty() ? "" : " [",
                 r.attrs.c_str(), r.attrs.empty() ? "" : "]", r.threads, r.isa.c_str(),
                 r.cold ? " cold" : "");
    if (r.timed) {
        const char *unit = dt_unit(r.dt);
        if (r.pct_peak > 0)
            std::fprintf(f, "anvil %8.2f %s (%5.1f%% peak, spread %4.1f%%)", r.anvil_gflops, unit,
                         r.pct_peak, 100 * r.anvil_spread);
        else
            std::fprintf(f, "anvil %8.2f %s (spread %4.1f%%)", r.anvil_gflops, unit,
                         100 * r.anvil_spread);
        // The BLAS-style peers (dnnl_*) need no implementation name.
        auto peer = [f](const std::string &name, const std::string &impl, double g, double pct,
                        double spread, double ratio) {
            const bool show = !impl.empty() && impl.rfind("dnnl_", 0) != 0;
            char p[32] = "";
            if (pct > 0) std::snprintf(p, sizeof p, "%5.1f%%, ", pct);
            std::fprintf(f, " | %s%s%s%s %8.2f (%sspread %4.1f%%) | ratio %.2f", name.c_str(),
                         show ? " [" : "", show ? impl.c_str() : "", show ? "]" : "", g, p,
                         100 * spread, ratio);
        };
        if (!r.peer.empty())
            peer(r.peer, r.peer_impl, r.peer_gflops, r.peer_pct_peak, r.peer_spread, r.ratio);
        if (!r.peer2.empty())
            peer(r.peer2, r.peer2_impl, r.peer2_gflops, r.peer2_pct_peak, r.peer2_spread, r.ratio2);
        if (r.chain) {
            std::fprintf(f, " | chain cost: anvil %+.1f%% (plain %.2f)", r.chain_cost,
                         r.base_gflops);
            if (r.peer_base_gflops > 0)
                std::fprintf(f, ", %s %+.1f%% (plain %.2f)", r.peer.c_str(), r.peer_chain_cost,
                             r.peer_base_gflops);
        }
        if (r.p.M <= 4) {
            const double bw = info_.read_gbps;
            auto pct = [&](double gbps) {
                if (bw > 0) std::fprintf(f, " (%.0f%% bw)", 100 * gbps / bw);
            };
            std::fprintf(f, " | weights GB/s anvil %.1f", r.anvil_gbps);
            pct(r.anvil_gbps);
            if (!r.peer.empty()) {
                std::fprintf(f, " %s %.1f", r.peer.c_str(), r.peer_gbps);
                pct(r.peer_gbps);
            }
            if (!r.peer2.empty()) std::fprintf(f, " %s %.1f", r.peer2.c_str(), r.peer2_gbps);
        }
    }
    if (!r.detail.empty()) std::fprintf(f, "%s%s", r.timed ? "\n      " : "", r.detail.c_str());
    std::fputc('\n', f);
    std::fflush(f);
}

void reporter::csv_row(const row &r) {
    const bool t = r.timed, peer = r.timed && !r.peer.empty(), gb = r.p.M <= 4;
    const bool peer2 = r.timed && !r.peer2.empty();
    auto g = [](bool on, double v) { return on ? num(v, "%.2f") : std::string(); };
    const std::vector<std::string> f = {
        "gemm", r.dt, r.p.trans(), std::to_string(r.p.M), std::to_string(r.p.N),
        std::to_string(r.p.K), std::to_string(r.threads), r.isa,
        g(t, r.anvil_gflops), csv_field(r.peer), g(peer, r.peer_gflops),
        peer ? num(r.ratio, "%.3f") : "", g(t && r.pct_peak > 0, r.pct_peak), r.status,
        // extra columns
        r.variant + (r.cold ? "_cold" : ""), g(t, 100 * r.anvil_spread),
        g(peer, 100 * r.peer_spread), g(t && gb, r.anvil_gbps), g(peer && gb, r.peer_gbps),
        g(peer && r.peer_pct_peak > 0, r.peer_pct_peak), csv_field(r.peer_impl),
        csv_field(r.backend), csv_field(r.peer2), g(peer2, r.peer2_gflops),
        peer2 ? num(r.ratio2, "%.3f") : "", g(peer2 && r.peer2_pct_peak > 0, r.peer2_pct_peak),
        g(peer2, 100 * r.peer2_spread), g(peer2 && gb, r.peer2_gbps), csv_field(r.peer2_impl),
        csv_field(r.attrs), g(t && r.chain, r.base_gflops), g(t && r.chain, r.chain_cost),
        g(t && r.chain && r.peer_base_gflops > 0, r.peer_base_gflops),
        g(t && r.chain && r.peer_base_gflops > 0, r.peer_chain_cost),
        g(t && gb && info_.read_gbps > 0, info_.read_gbps),
        g(t && gb && info_.read_gbps > 0, 100 * r.anvil_gbps / info_.read_gbps),
        g(peer && gb && info_.read_gbps > 0, 100 * r.peer_gbps / info_.read_gbps)};
    std::string line;
    for (size_t i = 0; i < f.size(); ++i) line += (i ? "," : "") + f[i];
    std::fprintf(csv_, "%s\n", line.c_str());
    std::fflush(csv_);
}

void reporter::add(const row &r) {
    text_row(r);
    if (csv_) csv_row(r);
    rows_.push_back(r);
}

void reporter::finish(int failures, const std::vector<skipped_line> &skipped) {
    if (!json_) return;
    std::FILE *f = json_;
    std::fprintf(f, "{\n  \"tool\": \"anvil-bench\",\n");
    std::fprintf(f, "  \"anvil_version\": %s,\n  \"onednn_version\": %s,\n",
                 json_str(info_.anvil_version).c_str(), json_str(info_.onednn_version).c_str());
    std::fprintf(f, "  \"cpu\": %s,\n  \"features\": %s,\n", json_str(info_.cpu).c_str(),
                 json_str(info_.features).c_str());
    std::fprintf(f, "  \"mode\": %s,\n  \"threads\": %d,\n  \"isa\": %s,\n  \"backend\": %s,\n",
                 json_str(info_.mode).c_str(), info_.threads, json_str(info_.isa).c_str(),
                 json_str(info_.backend).c_str());
    std::fprintf(f, "  \"dt\": %s,\n  \"peak_probe\": %s,\n  \"peak_gflops\": %s,\n",
                 json_str(info_.dt).c_str(), json_str(info_.peak_probe).c_str(),
                 num(info_.peak_gflops, "%.2f").c_str());
    std::fprintf(f, "  \"peak_unit\": %s,\n", json_str(dt_unit(info_.dt)).c_str());
    std::fprintf(f, "  \"read_gbps\": %s,\n", num(info_.read_gbps, "%.2f").c_str());
    std::fprintf(f, "  \"pinned\": %s,\n  \"affinity\": %s,\n", info_.pinned ? "true" : "false",
                 json_str(info_.affinity).c_str());
    std::fprintf(f, "  \"failures\": %d,\n  \"skipped\": [", failures);
    for (size_t i = 0; i < skipped.size(); ++i)
        std::fprintf(f, "%s\n    {\"where\": %s, \"text\": %s, \"reason\": %s}", i ? "," : "",
                     json_str(skipped[i].where).c_str(), json_str(skipped[i].text).c_str(),
                     json_str(skipped[i].reason).c_str());
    std::fprintf(f, "%s],\n  \"results\": [", skipped.empty() ? "" : "\n  ");
    for (size_t i = 0; i < rows_.size(); ++i) {
        const row &r = rows_[i];
        std::fprintf(f, "%s\n    {\"op\": \"gemm\", \"dt\": %s, \"unit\": %s, \"trans\": %s, ",
                     i ? "," : "", json_str(r.dt).c_str(), json_str(dt_unit(r.dt)).c_str(),
                     json_str(r.p.trans()).c_str());
        std::fprintf(f, "\"M\": %lld, \"N\": %lld, \"K\": %lld, \"source\": %s, ",
                     (long long)r.p.M, (long long)r.p.N, (long long)r.p.K,
                     json_str(r.p.source).c_str());
        std::fprintf(f, "\"threads\": %d, \"isa\": %s, \"backend\": %s, \"variant\": %s, ",
                     r.threads, json_str(r.isa).c_str(), json_str(r.backend).c_str(),
                     json_str(r.variant).c_str());
        std::fprintf(f, "\"cold\": %s, \"status\": %s, \"detail\": %s", r.cold ? "true" : "false",
                     json_str(r.status).c_str(), json_str(r.detail).c_str());
        if (!r.attrs.empty()) std::fprintf(f, ", \"attrs\": %s", json_str(r.attrs).c_str());
        if (r.timed) {
            auto list = [](const std::vector<double> &v) {
                std::string s = "[";
                for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + num(v[k], "%.2f");
                return s + "]";
            };
            std::fprintf(f, ",\n     \"anvil_gflops\": %s, \"anvil_spread\": %s, ",
                         num(r.anvil_gflops, "%.3f").c_str(), num(r.anvil_spread, "%.4f").c_str());
            std::fprintf(f, "\"anvil_trials_gflops\": %s, \"pct_peak\": %s",
                         list(r.anvil_trials).c_str(), num(r.pct_peak, "%.2f").c_str());
            if (r.p.M <= 4) std::fprintf(f, ", \"anvil_gbps\": %s", num(r.anvil_gbps, "%.2f").c_str());
            if (!r.peer.empty()) {
                std::fprintf(f, ",\n     \"peer\": %s, \"peer_impl\": %s, \"peer_gflops\": %s, ",
                             json_str(r.peer).c_str(), json_str(r.peer_impl).c_str(),
                             num(r.peer_gflops, "%.3f").c_str());
                std::fprintf(f, "\"peer_spread\": %s, \"peer_trials_gflops\": %s, ",
                             num(r.peer_spread, "%.4f").c_str(), list(r.peer_trials).c_str());
                std::fprintf(f, "\"peer_pct_peak\": %s, \"ratio\": %s",
                             num(r.peer_pct_peak, "%.2f").c_str(), num(r.ratio, "%.4f").c_str());
                if (r.p.M <= 4)
                    std::fprintf(f, ", \"peer_gbps\": %s", num(r.peer_gbps, "%.2f").c_str());
            }
            if (!r.peer2.empty()) {
                std::fprintf(f, ",\n     \"peer2\": %s, \"peer2_impl\": %s, \"peer2_gflops\": %s, ",
                             json_str(r.peer2).c_str(), json_str(r.peer2_impl).c_str(),
                             num(r.peer2_gflops, "%.3f").c_str());
                std::fprintf(f, "\"peer2_spread\": %s, \"peer2_trials_gflops\": %s, ",
                             num(r.peer2_spread, "%.4f").c_str(), list(r.peer2_trials).c_str());
                std::fprintf(f, "\"peer2_pct_peak\": %s, \"ratio2\": %s",
                             num(r.peer2_pct_peak, "%.2f").c_str(), num(r.ratio2, "%.4f").c_str());
                if (r.p.M <= 4)
                    std::fprintf(f, ", \"peer2_gbps\": %s", num(r.peer2_gbps, "%.2f").c_str());
            }
            if (r.chain) {
                std::fprintf(f, ",\n     \"base_anvil_gflops\": %s, \"chain_cost_pct\": %s",
                             num(r.base_gflops, "%.3f").c_str(), num(r.chain_cost, "%.2f").c_str());
                if (r.peer_base_gflops > 0)
                    std::fprintf(f, ", \"base_peer_gflops\": %s, \"peer_chain_cost_pct\": %s",
                                 num(r.peer_base_gflops, "%.3f").c_str(),
                                 num(r.peer_chain_cost, "%.2f").c_str());
            }
        }
        std::fprintf(f, "}");
    }
    std::fprintf(f, "%s]\n}\n", rows_.empty() ? "" : "\n  ");
    std::fflush(f);
}

}  // namespace anvil_bench
