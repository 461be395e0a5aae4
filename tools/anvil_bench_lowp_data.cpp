// anvil-bench: bf16 / int8 operands, anvil's calls, the references and the
// full comparison with a peer (see anvil_bench_lowp.h for the rules).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "anvil_bench_lowp.h"

namespace anvil_bench {
namespace {

constexpr int32_t kSentinel = 0x5a5a5a5a;

uint64_t mix(uint64_t &s) {  // splitmix64
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

bool cpu_has_vnni() {
#if defined(ANVIL_BENCH_X86_PROBES)
    return __builtin_cpu_supports("avx512vnni") || __builtin_cpu_supports("avxvnni");
#else
    return false;
#endif
}

// The documented int8 result for a dot product (offsets all 0).
int32_t int8_result(int64_t dot64, float alpha, float beta, int32_t c0) {
    const int32_t dot = int32_t(uint32_t(uint64_t(dot64)));
    if (alpha == 1.0f && (beta == 0.0f || beta == 1.0f)) {
        const int64_t v = (beta == 0.0f ? 0 : int64_t(c0)) + int64_t(dot);
        return int32_t(std::min<int64_t>(INT32_MAX, std::max<int64_t>(INT32_MIN, v)));
    }
    double v = double(alpha) * double(dot);
    if (beta != 0.0f) v += double(beta) * double(c0);
    if (v <= double(INT32_MIN)) return INT32_MIN;
    if (v >= double(INT32_MAX)) return INT32_MAX;
    return int32_t(std::nearbyint(v));
}

bool int8_tie(int64_t dot64, float alpha, float beta, int32_t c0) {
    const int32_t dot = int32_t(uint32_t(uint64_t(dot64)));
    double v = double(alpha) * double(dot);
    if (beta != 0.0f) v += double(beta) * double(c0);
    return v - std::floor(v) == 0.5;
}

}  // namespace

bool fill_int8_operands(uint8_t *a, int64_t na, bool a_signed, uint8_t *b, int64_t nb,
                        uint64_t seed) {
    // Without VNNI oneDNN's u8 x s8 pair sums saturate at 16 bits: 7-bit data.
    const bool full_range = cpu_has_vnni();
    const bool sa = a_signed;
    uint64_t s = seed * 0x2545f4914f6cdd1dull + 7;
    for (int64_t i = 0; i < na; ++i) {
        const uint64_t r = mix(s);
        a[i] = full_range ? uint8_t(r) : sa ? uint8_t(int8_t(int(r % 128) - 64)) : uint8_t(r % 128);
    }
    for (int64_t i = 0; i < nb; ++i) {
        const uint64_t r = mix(s);
        b[i] = full_range || !sa ? uint8_t(r) : uint8_t(int8_t(int(r % 128) - 64));
    }
    return full_range;
}

bool parse_lowp_dt(const std::string &s, lowp_dt *dt) {
    if (s == "bf16") *dt = lowp_dt::bf16;
    else if (s == "u8s8s32") *dt = lowp_dt::u8s8s32;
    else if (s == "s8s8s32") *dt = lowp_dt::s8s8s32;
    else if (s == "f32") *dt = lowp_dt::f32;
    else return false;
    return true;
}

const char *lowp_name(lowp_dt dt) {
    return dt == lowp_dt::f32    ? "f32"
           : dt == lowp_dt::bf16 ? "bf16"
           : dt == lowp_dt::u8s8s32 ? "u8s8s32" : "s8s8s32";
}

std::string peak_kind(const std::string &dt) {
    if (dt == "bf16") return "bf16";
    if (dt == "u8s8s32" || dt == "s8s8s32") return "int8";
    return "";
}

uint16_t f32_to_bf16_rne(float v) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return uint16_t(u >> 16);
}

float bf16_to_f32(uint16_t v) {
    const uint32_t u = uint32_t(v) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

bool lowp_data::init(lowp_dt t, const gemm_problem &prob, data_kind k, uint64_t seed) {
    dt = t;
    p = prob;
    kind = k;
    const int64_t nA = p.M * p.K, nB = p.K * p.N, es = elem_bytes(dt);
    A = buffer(size_t(nA * es));
    B = buffer(size_t(nB * es));
    if (!A.ok() || !B.ok()) return false;
    if (dt == lowp_dt::bf16) {
        Af.resize(size_t(nA));
        Bf.resize(size_t(nB));
        fill(Af.data(), nA, kind, seed * 3 + 1);
        fill(Bf.data(), nB, kind, seed * 3 + 2);
        uint16_t *a16 = static_cast<uint16_t *>(A.data()), *b16 = static_cast<uint16_t *>(B.data());
        for (int64_t i = 0; i < nA; ++i) Af[size_t(i)] = bf16_to_f32(a16[i] = f32_to_bf16_rne(Af[size_t(i)]));
        for (int64_t i = 0; i < nB; ++i) Bf[size_t(i)] = bf16_to_f32(b16[i] = f32_to_bf16_rne(Bf[size_t(i)]));
        return true;
    }
    if (dt == lowp_dt::f32) {
        Af.resize(size_t(nA));
        Bf.resize(size_t(nB));
        fill(Af.data(), nA, kind, seed * 3 + 1);
        fill(Bf.data(), nB, kind, seed * 3 + 2);
        std::memcpy(A.data(), Af.data(), size_t(nA) * 4);
        std::memcpy(B.data(), Bf.data(), size_t(nB) * 4);
        return true;
    }
    full_range = fill_int8_operands(static_cast<uint8_t *>(A.data()), nA,
                                    dt == lowp_dt::s8s8s32, static_cast<uint8_t *>(B.data()), nB,
                                    seed);
    const bool sa = dt == lowp_dt::s8s8s32;
    uint8_t *a = static_cast<uint8_t *>(A.data()), *b = static_cast<uint8_t *>(B.data());
    if (full_range && nA > 0 && nB > 0) {  // the corner of a saturating pair sum
        a[0] = sa ? 0x80 : 0xff;
        b[0] = 0x80;
    }
    return true;
}

int64_t lowp_data::a(int64_t i, int64_t k) const {
    const uint8_t v = static_cast<const uint8_t *>(A.data())[p.ta == 'N' ? i * p.lda() + k
                                                                          : k * p.lda() + i];
    return dt == lowp_dt::s8s8s32 ? int64_t(int8_t(v)) : int64_t(v);
}

int64_t lowp_data::b(int64_t k, int64_t j) const {
    return int8_t(static_cast<const uint8_t *>(B.data())[p.tb == 'N' ? k * p.ldb() + j
                                                                      : j * p.ldb() + k]);
}

int64_t lowp_data::dot(int64_t i, int64_t j) const {
    int64_t acc = 0;
    for (int64_t k = 0; k < p.K; ++k) acc += a(i, k) * b(k, j);
    return acc;
}

bool lowp_data::exact(float alpha, float beta) const {
    return is_float(dt) && kind == data_kind::ints && ints_exact(p.K) && alpha == 1.0f &&
           (beta == 0.0f || beta == 1.0f);
}

void fill_c(lowp_dt dt, void *C, int64_t n, float beta, data_kind kind, uint64_t seed) {
    if (is_float(dt)) {
        float *c = static_cast<float *>(C);
        if (beta != 0.0f)
            fill(c, n, kind, seed);
        else
            std::fill(c, c + n, std::numeric_limits<float>::quiet_NaN());  // must not be read
        return;
    }
    int32_t *c = static_cast<int32_t *>(C);
    uint64_t s = seed + 11;
    for (int64_t i = 0; i < n; ++i)
        c[i] = beta != 0.0f ? int32_t(int64_t(mix(s) % 2001) - 1000) : kSentinel;
}

anvil_status_t run_anvil_lowp(const lowp_data &d, float alpha, float beta, void *C) {
    const gemm_problem &p = d.p;
    static const int32_t co = 0;
    switch (d.dt) {
        case lowp_dt::f32:  // the f32 BLAS call is run_perf / run_check's
            break;
        case lowp_dt::bf16:
            return anvil_gemm_bf16bf16f32(p.ta, p.tb, p.M, p.N, p.K, alpha,
                                          static_cast<const anvil_bf16_t *>(d.A.data()), p.lda(),
                                          static_cast<const anvil_bf16_t *>(d.B.data()), p.ldb(),
                                          beta, static_cast<float *>(C), p.ldc());
        case lowp_dt::u8s8s32:
            return anvil_gemm_u8s8s32(p.ta, p.tb, 'F', p.M, p.N, p.K, alpha,
                                      static_cast<const uint8_t *>(d.A.data()), p.lda(), 0,
                                      static_cast<const int8_t *>(d.B.data()), p.ldb(), 0, beta,
                                      static_cast<int32_t *>(C), p.ldc(), &co);
        case lowp_dt::s8s8s32:
            return anvil_gemm_s8s8s32(p.ta, p.tb, 'F', p.M, p.N, p.K, alpha,
                                      static_cast<const int8_t *>(d.A.data()), p.lda(), 0,
                                      static_cast<const int8_t *>(d.B.data()), p.ldb(), 0, beta,
                                      static_cast<int32_t *>(C), p.ldc(), &co);
    }
    return anvil_invalid_argument;
}

lowp_reference::lowp_reference(const lowp_data &d, float alpha, float beta, const void *C0,
                               std::vector<point> pts)
    : d_(d), int8_(is_int8(d.dt)), pts_(std::move(pts)) {
    const int64_t ldc = d.p.ldc();
    if (int8_) {
        const int32_t *c0 = static_cast<const int32_t *>(C0);
        for (const point &q : pts_) {
            const int64_t dot = d.dot(q.i, q.j);
            const int32_t c = beta != 0.0f ? c0[q.i * ldc + q.j] : 0;
            want_i_.push_back(int8_result(dot, alpha, beta, c));
            tie_.push_back(int8_tie(dot, alpha, beta, c));
        }
        return;
    }
    // bf16: the double value of the float copies (the products are exact)
    // and anvil_bench_check.h's bound; 0 when the data make fp32 exact.
    exact_ = d.exact(alpha, beta);
    const double g = gamma_n(d.p.K + 2);
    const float *c0 = static_cast<const float *>(C0);
    for (const point &q : pts_) {
        double acc = 0, mag = 0;
        for (int64_t k = 0; k < d.p.K; ++k) {
            const double x = d.Af[size_t(d.p.ta == 'N' ? q.i * d.p.lda() + k : k * d.p.lda() + q.i)];
            const double y = d.Bf[size_t(d.p.tb == 'N' ? k * d.p.ldb() + q.j : q.j * d.p.ldb() + k)];
            acc += x * y;
            mag += std::fabs(x * y);
        }
        double want = double(alpha) * acc;
        mag *= std::fabs(double(alpha));
        if (beta != 0.0f) {
            want += double(beta) * c0[q.i * ldc + q.j];
            mag += std::fabs(double(beta) * c0[q.i * ldc + q.j]);
        }
        want_.push_back(want);
        bound_.push_back(exact_ ? 0.0 : g * mag);
    }
}

check_result lowp_reference::check(const void *C, bool tie_slack) const {
    check_result r;
    const int64_t ldc = d_.p.ldc();
    for (size_t n = 0; n < pts_.size(); ++n) {
        const int64_t at = pts_[n].i * ldc + pts_[n].j;
        double got, want, err, bound;
        if (int8_) {
            got = static_cast<const int32_t *>(C)[at];
            want = want_i_[n];
            err = std::fabs(got - want);
            bound = tie_slack && tie_[n] ? 1.0 : 0.0;
        } else {
            got = static_cast<const float *>(C)[at];
            want = want_[n];
            err = std::fabs(got - want);
            bound = bound_[n];
        }
        ++r.checked;
        const double ratio = bound > 0 ? err / bound : err;
        if (!(ratio <= r.worst_ratio)) r.worst_ratio = ratio;
        if (!(err <= bound)) {
            if (r.bad++ == 0) {
                char buf[160];
                std::snprintf(buf, sizeof buf, "C(%lld,%lld)=%.9g want %.9g (bound %.3g)",
                              (long long)pts_[n].i, (long long)pts_[n].j, got, want, bound);
                r.first_bad = buf;
            }
        }
    }
    return r;
}

check_result compare_full(const lowp_data &d, float alpha, float beta, const void *C0,
                          const void *X, const void *Y, int64_t *ties) {
    check_result r;
    *ties = 0;
    const gemm_problem &p = d.p;
    const int64_t ldc = p.ldc();
    const bool exact = is_int8(d.dt) || d.exact(alpha, beta);
    // bf16 bound: sum_k |a_ik b_kj| <= max_k |a_ik| * sum_k |b_kj|.
    std::vector<double> amax, bsum;
    if (!exact) {
        amax.assign(size_t(p.M), 0.0);
        bsum.assign(size_t(p.N), 0.0);
        for (int64_t i = 0; i < p.M; ++i)
            for (int64_t k = 0; k < p.K; ++k)
                amax[size_t(i)] = std::max(amax[size_t(i)], double(std::fabs(
                    d.Af[size_t(p.ta == 'N' ? i * p.lda() + k : k * p.lda() + i)])));
        for (int64_t k = 0; k < p.K; ++k)
            for (int64_t j = 0; j < p.N; ++j)
                bsum[size_t(j)] += std::fabs(d.Bf[size_t(p.tb == 'N' ? k * p.ldb() + j : j * p.ldb() + k)]);
    }
    const double g2 = 2.0 * gamma_n(p.K + 2);
    for (int64_t i = 0; i < p.M; ++i)
        for (int64_t j = 0; j < p.N; ++j) {
            const int64_t at = i * ldc + j;
            double x, y, bound = 0;
            if (is_int8(d.dt)) {
                x = static_cast<const int32_t *>(X)[at];
                y = static_cast<const int32_t *>(Y)[at];
                if (x != y && std::fabs(x - y) == 1.0) {
                    const int32_t c = beta != 0.0f ? static_cast<const int32_t *>(C0)[at] : 0;
                    if (int8_tie(d.dot(i, j), alpha, beta, c)) {
                        ++*ties;
                        bound = 1.0;
                    }
                }
            } else {
                x = static_cast<const float *>(X)[at];
                y = static_cast<const float *>(Y)[at];
                if (!exact) {
                    const double c = beta != 0.0f ? static_cast<const float *>(C0)[at] : 0.0;
                    bound = g2 * (std::fabs(double(alpha)) * amax[size_t(i)] * bsum[size_t(j)] +
                                  std::fabs(double(beta) * c));
                }
            }
            const double err = std::fabs(x - y);
            ++r.checked;
            const double ratio = bound > 0 ? err / bound : err;
            if (!(ratio <= r.worst_ratio)) r.worst_ratio = ratio;
            if (!(err <= bound) && r.bad++ == 0) {
                char buf[160];
                std::snprintf(buf, sizeof buf, "C(%lld,%lld): anvil %.9g peer %.9g (bound %.3g)",
                              (long long)i, (long long)j, x, y, bound);
                r.first_bad = buf;
            }
        }
    return r;
}

}  // namespace anvil_bench
