// anvil-bench: results as text, CSV and JSON.
//
// CSV: a header, then one line per problem with the columns
//   op,dt,trans,M,N,K,threads,isa,anvil_gflops,peer,peer_gflops,ratio,pct_peak,status
// followed by extra columns (variant,anvil_spread_pct,peer_spread_pct,
// anvil_gbps,peer_gbps,peer_pct_peak,peer_impl,backend,peer2,peer2_gflops,
// ratio2,peer2_pct_peak,peer2_spread_pct,peer2_gbps,peer2_impl,attrs,
// base_anvil_gflops,chain_cost_pct,base_peer_gflops,peer_chain_cost_pct,
// read_gbps,anvil_pct_bw,peer_pct_bw).  For M <= 4 (weights streamed once:
// memory-bound) *_pct_bw is the weights' GB/s in % of the measured read
// bandwidth read_gbps.
// attrs: the low-precision matmul handle's attributes ("dst=bf16 bias
// po=gelu_tanh+add:f32"; empty otherwise); base_* / *chain_cost_pct: with
// --chain-cost, the same matmul without attributes and the cost of the
// attributes in % of it (t_attrs / t_plain - 1).  The *_gflops
// columns are GOP/s for the integer types (u8s8s32, s8s8s32).  peer2 is the
// second oneDNN peer of the low-precision types (prepacked matmul); empty
// for f32.  JSON holds the same rows plus the run's metadata (CPU, peak,
// versions) and per-trial figures.
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include "anvil_bench_cli.h"
#include "anvil_bench_problem.h"

namespace anvil_bench {

struct row {
    gemm_problem p;
    std::string dt = "f32";          // f32 | bf16 | u8s8s32 | s8s8s32
    int threads = 1;
    std::string isa, backend;
    std::string variant = "plain";   // plain | planned
    bool cold = false;
    std::string status;              // PASS | FAIL | ERROR
    std::string detail;              // check details / error text
    // perf
    bool timed = false;
    double anvil_gflops = 0, anvil_spread = 0, anvil_gbps = 0;
    std::vector<double> anvil_trials;   // GFLOP/s per trial
    std::string peer, peer_impl;
    double peer_gflops = 0, peer_spread = 0, peer_gbps = 0;
    std::vector<double> peer_trials;
    double ratio = 0, pct_peak = 0, peer_pct_peak = 0;
    // second peer (low-precision types: oneDNN matmul with prepacked weights)
    std::string peer2, peer2_impl;
    double peer2_gflops = 0, peer2_spread = 0, peer2_gbps = 0, ratio2 = 0, peer2_pct_peak = 0;
    std::vector<double> peer2_trials;
    // low-precision matmul handle (--planned): attributes and chain cost
    std::string attrs;
    bool chain = false;
    double base_gflops = 0, chain_cost = 0;            // anvil without attributes
    double peer_base_gflops = 0, peer_chain_cost = 0;  // the peer without attributes
};

struct run_info {
    std::string anvil_version, onednn_version;
    std::string cpu, features;
    std::string mode;
    std::string dt = "f32";
    int threads = 1;
    std::string isa, backend;
    std::string peak_probe;
    double peak_gflops = 0;
    double read_gbps = 0;     // measured read bandwidth (perf with M <= 4 problems; 0 = not measured)
    bool pinned = false;
    std::string affinity;
};

// "GOP/s" for the integer types, "GFLOP/s" otherwise.
const char *dt_unit(const std::string &dt);

// A CSV field, quoted (quotes doubled) when it holds ',', '"' or a newline.
std::string csv_field(const std::string &s);
// The file at `path` opened for writing; `fallback` when path is empty or
// the file cannot be opened (with a note on stderr).
std::FILE *open_or(const std::string &path, std::FILE *fallback);

class reporter {
public:
    reporter(const options &o, const run_info &info);
    ~reporter();
    // Where human-readable text goes (stderr when CSV or JSON use stdout).
    std::FILE *text() const { return text_; }
    void add(const row &r);
    void finish(int failures, const std::vector<skipped_line> &skipped);

private:
    void text_row(const row &r);
    void csv_row(const row &r);
    const options &o_;
    run_info info_;
    std::FILE *text_ = stdout;
    std::FILE *csv_ = nullptr;
    std::FILE *json_ = nullptr;
    std::vector<row> rows_;
};

}  // namespace anvil_bench
