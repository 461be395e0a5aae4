// anvil-bench: GEMM problem descriptors and the shape/batch-file parsers.
//
// Accepted shape forms (one problem per line in batch files, '#' starts a comment):
//   MxNxK                    anvil's form: C (M x N) = A (M x K) * B (K x N)
//   MxK:KxN[_]n"name"        benchdnn matmul form (the name suffix is ignored)
// Either may be followed by a transpose token (NN, NT, TN, TT).  Lines that
// cannot be run as one 2-D fp32 GEMM (batched 3-D shapes, benchdnn option
// lines, mismatched K) are skipped with a reason.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace anvil_bench {

struct gemm_problem {
    int64_t M = 0, N = 0, K = 0;
    char ta = 'N', tb = 'N';
    std::string source;  // "file:line" or "--shape"

    int64_t lda() const { return ta == 'N' ? K : M; }
    int64_t ldb() const { return tb == 'N' ? N : K; }
    int64_t ldc() const { return N; }
    double flops() const { return 2.0 * double(M) * double(N) * double(K); }
    double weight_bytes() const { return 4.0 * double(K) * double(N); }
    std::string shape() const;   // "MxNxK"
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
