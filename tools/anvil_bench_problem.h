// anvil-bench: GEMM problem descriptors and the shape/batch-file parsers.
//
// Accepted shape forms (one problem per line in batch files, '#' starts a comment):
//   MxNxK                    anvil's form: C (M x N) = A (M x K) * B (K x N)
//   MxK:KxN[_]n"name"        benchdnn matmul form (the name suffix is ignored)
//   BxMxK:BxKxN (or more batch dims, e.g. 2x12xMxK:2x12xKxN)
//                            a batch of independent GEMMs (anvil's strided
//                            batch calls); a side whose batch dims are all 1
//                            is shared by every item (broadcast)
// Either may be followed by a transpose token (NN, NT, TN, TT).  Lines that
// cannot be run (partial batch broadcasts, benchdnn option lines,
// mismatched K) are skipped with a reason.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace anvil_bench {

struct gemm_problem {
    int64_t M = 0, N = 0, K = 0;
    char ta = 'N', tb = 'N';
    // A batch of independent GEMMs (batch > 1), each item's operands packed
    // one after another; a shared A or B is one matrix for every item.
    int64_t batch = 1;
    bool share_a = false, share_b = false;
    std::string source;  // "file:line" or "--shape"

    bool batched() const { return batch > 1; }
    int64_t lda() const { return ta == 'N' ? K : M; }
    int64_t ldb() const { return tb == 'N' ? N : K; }
    int64_t ldc() const { return N; }
    // Element strides between items (0: shared).
    int64_t stride_a() const { return share_a ? 0 : M * K; }
    int64_t stride_b() const { return share_b ? 0 : K * N; }
    int64_t stride_c() const { return M * N; }
    int64_t elems_a() const { return (share_a ? 1 : batch) * M * K; }
    int64_t elems_b() const { return (share_b ? 1 : batch) * K * N; }
    int64_t elems_c() const { return batch * M * N; }
    double flops() const { return 2.0 * double(batch) * double(M) * double(N) * double(K); }
    double weight_bytes() const { return 4.0 * double(elems_b()); }
    // One item as a plain problem.
    gemm_problem item() const;
    std::string shape() const;   // "MxNxK", batched "b12:MxNxK" (+ "A"/"B" when shared)
    std::string trans() const { return std::string(1, ta) + std::string(1, tb); }
};

struct skipped_line {
    std::string where;   // "file:line"
    std::string text;
    std::string reason;
};

bool parse_trans(const std::string &s, char *ta, char *tb);

// Parses one shape (either form, optional trailing trans token).  Returns
// false with *why set when the text is not a runnable 2-D GEMM.
bool parse_problem(const std::string &text, char default_ta, char default_tb, gemm_problem *out,
                   std::string *why);

// Reads a batch file; lines that do not parse are appended to *skipped.
// Returns false only when the file cannot be opened.
bool load_batch(const std::string &path, char default_ta, char default_tb,
                std::vector<gemm_problem> *out, std::vector<skipped_line> *skipped);

}  // namespace anvil_bench
