// anvil-bench: reference values at chosen points and the comparison.
#include "anvil_bench_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace anvil_bench {

double gamma_n(int64_t n) {
    const double u = std::ldexp(1.0, -24);
    return double(n) * u / (1.0 - double(n) * u);
}

std::vector<point> choose_points(const gemm_problem &p, int64_t count, double full_limit,
                                 uint64_t seed) {
    std::vector<point> pts;
    const int64_t M = p.M, N = p.N;
    if (double(M) * double(N) * double(p.K) <= full_limit || M * N <= count) {
        pts.reserve(size_t(M * N));
        for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) pts.push_back({i, j});
        return pts;
    }
    uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
    auto rnd = [&](int64_t n) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        return int64_t((s >> 33) % uint64_t(n));
    };
    pts.push_back({0, 0});
    pts.push_back({0, N - 1});
    pts.push_back({M - 1, 0});
    pts.push_back({M - 1, N - 1});
    const int64_t tail = count / 4;
    for (int64_t t = 0; t < tail; ++t) {
        // last few rows / columns, where partial register tiles live
        pts.push_back({M - 1 - rnd(std::min<int64_t>(M, 17)), rnd(N)});
        pts.push_back({rnd(M), N - 1 - rnd(std::min<int64_t>(N, 65))});
    }
    while (int64_t(pts.size()) < count) pts.push_back({rnd(M), rnd(N)});
    return pts;
}

std::string check_result::summary() const {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%lld points, %lld bad, worst err/bound %.3g",
                  (long long)checked, (long long)bad, worst_ratio);
    return buf + (first_bad.empty() ? std::string() : "; first: " + first_bad);
}

reference::reference(const gemm_problem &p, const float *A, const float *B, float alpha,
                     float beta, const float *C0, data_kind kind, std::vector<point> pts)
    : p_(p), pts_(std::move(pts)) {
    exact_ = kind == data_kind::ints && ints_exact(p.K) && alpha == 1.0f &&
             (beta == 0.0f || beta == 1.0f);
    const double g = gamma_n(p.K + 2);
    const int64_t lda = p.lda(), ldb = p.ldb(), ldc = p.ldc();
    want_.resize(pts_.size());
    bound_.resize(pts_.size());
    for (size_t n = 0; n < pts_.size(); ++n) {
        const int64_t i = pts_[n].i, j = pts_[n].j;
        double acc = 0, mag = 0;
        for (int64_t k = 0; k < p.K; ++k) {
            const double a = p.ta == 'N' ? A[i * lda + k] : A[k * lda + i];
            const double b = p.tb == 'N' ? B[k * ldb + j] : B[j * ldb + k];
            acc += a * b;
            mag += std::fabs(a * b);
        }
        double want = double(alpha) * acc;
        mag *= std::fabs(double(alpha));
        if (beta != 0.0f) {
            const double c0 = C0[i * ldc + j];
            want += double(beta) * c0;
            mag += std::fabs(double(beta) * c0);
        }
        want_[n] = want;
        bound_[n] = exact_ ? 0.0 : g * mag;
    }
}

check_result reference::check(const float *C) const {
    check_result r;
    const int64_t ldc = p_.ldc();
    for (size_t n = 0; n < pts_.size(); ++n) {
        const double got = C[pts_[n].i * ldc + pts_[n].j];
        const double err = std::fabs(got - want_[n]);
        ++r.checked;
        const bool good = err <= bound_[n];  // false for NaN
        const double ratio = bound_[n] > 0 ? err / bound_[n] : err;
        if (!(ratio <= r.worst_ratio)) r.worst_ratio = ratio;
        if (!good) {
            if (r.bad == 0) {
                char buf[160];
                std::snprintf(buf, sizeof buf, "C(%lld,%lld)=%.9g want %.9g (bound %.3g)",
                              (long long)pts_[n].i, (long long)pts_[n].j, got, want_[n],
                              bound_[n]);
                r.first_bad = buf;
            }
            ++r.bad;
        }
    }
    return r;
}

}  // namespace anvil_bench
