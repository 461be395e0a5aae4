// anvil-bench: double-precision reference and the error bound.
//
// For C = alpha*op(A)*op(B) + beta*C0 computed in fp32 with any summation
// order, |C - C_exact| <= gamma_{K+2} * (|alpha| * sum_k |a_ik||b_kj| + |beta||c0|)
// with gamma_n = n*u / (1 - n*u), u = 2^-24 (Higham, Accuracy and Stability
// of Numerical Algorithms, 3.1).  With `ints` data the result is exact and the
// bound is 0.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "anvil_bench_data.h"
#include "anvil_bench_problem.h"

namespace anvil_bench {

struct point {
    int64_t i = 0, j = 0;
};

double gamma_n(int64_t n);

// Every point when M*N*K is small (<= full_limit multiply-adds), else `count`
// points: the four corners, points in the last rows/columns (tails) and
// random ones.
std::vector<point> choose_points(const gemm_problem &p, int64_t count, double full_limit,
                                 uint64_t seed);

struct check_result {
    int64_t checked = 0;
    int64_t bad = 0;
    double worst_ratio = 0;  // max |err| / bound (or |err| when exact)
    std::string first_bad;   // "C(i,j)=got want=... bound=..."
    bool ok() const { return bad == 0; }
    std::string summary() const;
};

// Reference values at fixed points for one (A, B, C0) triple.
class reference {
public:
    reference(const gemm_problem &p, const float *A, const float *B, float alpha, float beta,
              const float *C0, data_kind kind, std::vector<point> pts);
    check_result check(const float *C) const;
    bool exact() const { return exact_; }
    size_t size() const { return pts_.size(); }

private:
    gemm_problem p_;
    std::vector<point> pts_;
    std::vector<double> want_, bound_;
    bool exact_ = false;
};

}  // namespace anvil_bench
