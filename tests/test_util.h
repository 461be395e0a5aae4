// Shared helpers for the anvil test suites: deterministic fills, buffers
// with chosen (mis)alignment, sentinel-guarded C matrices, guard pages, the
// double-precision reference with its per-element error bound, and a tiny
// caller thread pool.
#pragma once

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "anvil/anvil.h"
#include "cpu/isa.h"
#include "gemm/backend.h"

namespace tu {

// ------------------------------------------------------------- bits / rng

inline uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
inline float from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// A NaN with a recognisable payload: memory a call must not touch is filled
// with it and compared bitwise afterwards.
constexpr uint32_t kSentinelBits = 0x7fa5c3e1u;
inline float sentinel() { return from_bits(kSentinelBits); }
inline float qnan() { return std::numeric_limits<float>::quiet_NaN(); }

// Running under an instruction-set emulator (ANVIL_TEST_EMULATED=1, set by
// tests/CMakeLists.txt for cross builds run through qemu-user): the
// heaviest sweeps take their representative subset there.
inline bool emulated() {
    const char *e = std::getenv("ANVIL_TEST_EMULATED");
    return e && e[0] == '1';
}

// The subset a tile sweep takes under emulation (every case natively).
// Columns: all up to two vectors and one, then only the widths next to a
// whole number of vectors and the widest: the tail masks depend on n mod
// the lane count, which the first range walks completely.
inline bool emulated_sweeps_width(int n, int lanes, int widest) {
    if (!emulated() || lanes < 1) return true;
    const int rem = n % lanes;
    return n <= 2 * lanes + 1 || rem == 0 || rem == 1 || rem == lanes - 1 || n == widest;
}
// Scalar parameters (alpha x beta, say) of a sweep: natively the whole
// product; under emulation one diagonal of it per case, rotated by the
// case's `phase` (its m + n, say) so that every pair still runs across the
// sweep, just not for every tile.
inline bool emulated_sweeps_pair(int i, int j, int count, int phase) {
    return !emulated() || (i + j + phase) % count == 0;
}
inline float inf() { return std::numeric_limits<float>::infinity(); }

struct rng {
    std::mt19937_64 g;
    explicit rng(uint64_t seed) : g(seed) {}
    int64_t ival(int64_t lo, int64_t hi) {  // inclusive
        return std::uniform_int_distribution<int64_t>(lo, hi)(g);
    }
    // Small integers: |x| <= 4, so with K * 16 < 2^24 every partial sum of
    // a dot product is an exactly representable fp32 integer.
    float small_int() { return float(ival(-4, 4)); }
    // A fraction in [-1, 1] with at most 20 significant bits (never tiny, so
    // nothing underflows).
    float frac() { return float(ival(-(1 << 20), 1 << 20)) * 0x1p-20f; }
    // Initial C for integer-data tests that must stay exact for beta in
    // {1, 0.3} (beta = 0 never reads C).  beta = 1: small integers.  Other
    // beta (0.3f = 5033165 * 2^-24): C from {0, +-2^23, +-2^24}, so beta * C
    // is an exact multiple of 0.5 below 2^23 and every partial sum of
    // beta * C and (half-)integer products stays exact in any order and
    // K blocking.
    float exact_c(float beta) {
        if (beta == 1.0f) return small_int();
        const float big[5] = {0.f, 0x1p23f, -0x1p23f, 0x1p24f, -0x1p24f};
        return big[ival(0, 4)];
    }
};

// ------------------------------------------------------------- buffers

// n floats at a chosen offset (in floats) from a 64-byte boundary: offset 1
// gives a pointer that is 4-byte but not 16- or 64-byte aligned.
class fbuf {
public:
    fbuf() = default;
    explicit fbuf(size_t n, size_t offset_floats = 0, float fill = 0.0f) { reset(n, offset_floats, fill); }
    ~fbuf() { std::free(raw_); }
    fbuf(const fbuf &) = delete;
    fbuf &operator=(const fbuf &) = delete;
    fbuf(fbuf &&o) noexcept { *this = std::move(o); }
    fbuf &operator=(fbuf &&o) noexcept {
        std::swap(raw_, o.raw_);
        std::swap(p_, o.p_);
        std::swap(n_, o.n_);
        return *this;
    }
    void reset(size_t n, size_t offset_floats = 0, float fill = 0.0f) {
        std::free(raw_);
        const size_t bytes = ((n + offset_floats + 16) * sizeof(float) + 63) / 64 * 64;
        raw_ = static_cast<float *>(std::aligned_alloc(64, bytes));
        REQUIRE(raw_ != nullptr);
        p_ = raw_ + offset_floats;
        n_ = n;
        std::fill(p_, p_ + n_, fill);
    }
    float *data() { return p_; }
    const float *data() const { return p_; }
    size_t size() const { return n_; }
    float &operator[](size_t i) { return p_[i]; }
    const float &operator[](size_t i) const { return p_[i]; }

private:
    float *raw_ = nullptr;
    float *p_ = nullptr;
    size_t n_ = 0;
};

inline size_t page_size() { return size_t(sysconf(_SC_PAGESIZE)); }

// Read-write memory between two PROT_NONE pages: [guard][body][guard],
// the body at least `bytes` long and page-rounded.  Data placed with
// tail(n) ends exactly at the back guard (an access one element past the
// end faults); data placed at head() starts right after the front guard
// (an access one element before the start faults).
class guarded {
public:
    explicit guarded(size_t bytes) {
        const size_t pg = page_size();
        body_ = std::max<size_t>(pg, (bytes + pg - 1) / pg * pg);
        total_ = body_ + 2 * pg;
        void *m = mmap(nullptr, total_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        REQUIRE(m != MAP_FAILED);
        base_ = static_cast<char *>(m);
        REQUIRE(mprotect(base_, pg, PROT_NONE) == 0);
        REQUIRE(mprotect(base_ + pg + body_, pg, PROT_NONE) == 0);
    }
    ~guarded() { munmap(base_, total_); }
    guarded(const guarded &) = delete;
    guarded &operator=(const guarded &) = delete;
    float *head() { return reinterpret_cast<float *>(base_ + page_size()); }
    char *end() { return base_ + page_size() + body_; }  // first byte of the back guard
    float *tail(size_t floats) {
        REQUIRE(floats * sizeof(float) <= body_);
        return reinterpret_cast<float *>(end()) - floats;
    }

private:
    char *base_ = nullptr;
    size_t body_ = 0, total_ = 0;
};

// While alive, a SIGSEGV first prints the text last given to set() to
// stderr, then falls back to the previous handler (doctest's, which reports
// the crash): the handler restores it and returns, so the access faults
// again.  Used around calls that may touch guard pages.
inline char g_fault_what[1024];
inline size_t g_fault_len = 0;
inline struct sigaction g_prev_segv;

inline void tu_on_guard_fault(int, siginfo_t *, void *) {
    static const char head[] = "\nguard-page test: fault during: ";
    ssize_t ignored = write(2, head, sizeof(head) - 1);
    ignored = write(2, g_fault_what, g_fault_len);
    ignored = write(2, "\n", 1);
    (void)ignored;
    sigaction(SIGSEGV, &g_prev_segv, nullptr);
}

struct fault_reporter {
    fault_reporter() {
        struct sigaction sa {};
        sa.sa_sigaction = tu_on_guard_fault;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGSEGV, &sa, &g_prev_segv);
    }
    ~fault_reporter() { sigaction(SIGSEGV, &g_prev_segv, nullptr); }
    fault_reporter(const fault_reporter &) = delete;
    fault_reporter &operator=(const fault_reporter &) = delete;
    void set(const std::string &s) {
        g_fault_len = std::min(s.size(), sizeof(g_fault_what));
        std::memcpy(g_fault_what, s.data(), g_fault_len);
    }
};

// ------------------------------------------------------------- gemm cases

inline bool is_t(char c) { return c == 'T' || c == 't'; }

// One anvil_sgemm problem: shapes, transposes, leading dims, scalars and
// the pointer offsets (in floats from a 64-byte boundary) of A, B and C.
struct gemm_case {
    char ta = 'N', tb = 'N';
    int64_t M = 1, N = 1, K = 1;
    int64_t lda = 0, ldb = 0, ldc = 0;  // 0: tight
    float alpha = 1.0f, beta = 0.0f;
    int off_a = 0, off_b = 0, off_c = 0;

    // Stored shapes (row-major): A is M x K ('N') or K x M ('T'), etc.
    int64_t a_rows() const { return is_t(ta) ? K : M; }
    int64_t a_cols() const { return is_t(ta) ? M : K; }
    int64_t b_rows() const { return is_t(tb) ? N : K; }
    int64_t b_cols() const { return is_t(tb) ? K : N; }
    void tighten(int64_t pad_a = 0, int64_t pad_b = 0, int64_t pad_c = 0) {
        lda = std::max<int64_t>(1, a_cols()) + pad_a;
        ldb = std::max<int64_t>(1, b_cols()) + pad_b;
        ldc = std::max<int64_t>(1, N) + pad_c;
    }
    std::string str() const {
        std::ostringstream s;
        s << "trans=" << ta << tb << " M=" << M << " N=" << N << " K=" << K << " lda=" << lda
          << " ldb=" << ldb << " ldc=" << ldc << " alpha=" << alpha << " beta=" << beta
          << " ptr_off_floats(A,B,C)=(" << off_a << "," << off_b << "," << off_c << ")";
        return s.str();
    }
};

inline float op_a(const gemm_case &c, const float *A, int64_t i, int64_t k) {
    return is_t(c.ta) ? A[k * c.lda + i] : A[i * c.lda + k];
}
inline float op_b(const gemm_case &c, const float *B, int64_t k, int64_t j) {
    return is_t(c.tb) ? B[j * c.ldb + k] : B[k * c.ldb + j];
}

// A stored matrix with NaN in its padding (columns cols..ld-1): a kernel
// that lets an element outside the window reach a result yields NaN.
inline fbuf make_operand(int64_t rows, int64_t cols, int64_t ld, int off,
                         const std::function<float()> &gen) {
    fbuf b(size_t(std::max<int64_t>(rows * ld, 1)), size_t(off), qnan());
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) b[size_t(r * ld + c)] = gen();
    return b;
}

// C with kMargin sentinel floats before and after the M x ldc block and
// sentinels in the padding columns N..ldc-1 of every row.
constexpr int64_t kMargin = 37;
struct cmat {
    fbuf buf;
    int64_t M = 0, N = 0, ldc = 0;
    cmat() = default;
    cmat(int64_t M_, int64_t N_, int64_t ldc_, int off) : M(M_), N(N_), ldc(ldc_) {
        buf.reset(size_t(M * ldc + 2 * kMargin), size_t(off), sentinel());
    }
    float *c() { return buf.data() + kMargin; }
    const float *c() const { return buf.data() + kMargin; }
    float &at(int64_t i, int64_t j) { return c()[i * ldc + j]; }
    float at(int64_t i, int64_t j) const { return c()[i * ldc + j]; }
    void copy_window_from(const cmat &o) {
        for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) at(i, j) = o.at(i, j);
    }
    // Number of elements outside the M x N window that are not the sentinel
    // any more; the first one is described in *where.
    int64_t sentinel_damage(std::string *where = nullptr) const {
        int64_t bad = 0;
        const int64_t total = M * ldc + 2 * kMargin;
        for (int64_t t = 0; t < total; ++t) {
            const int64_t e = t - kMargin;  // element offset from c()
            const bool inside = e >= 0 && e < M * ldc && (e % ldc) < N;
            if (inside) continue;
            if (bits(buf[size_t(t)]) != kSentinelBits) {
                if (!bad && where) {
                    std::ostringstream s;
                    s << "C offset " << e << " (row " << (e >= 0 ? e / ldc : -1) << ", col "
                      << (e >= 0 ? e % ldc : e) << ") = " << buf[size_t(t)];
                    *where = s.str();
                }
                ++bad;
            }
        }
        return bad;
    }
};

// Value comparison of two M x N windows (exact equality; -0 == +0, NaN ==
// NaN); describes the first mismatch.
inline int64_t count_value_mismatches(const cmat &got, const cmat &want, std::string *first) {
    int64_t bad = 0;
    for (int64_t i = 0; i < got.M; ++i)
        for (int64_t j = 0; j < got.N; ++j) {
            const float g = got.at(i, j), w = want.at(i, j);
            if (g == w || (std::isnan(g) && std::isnan(w))) continue;
            if (!bad && first) {
                std::ostringstream s;
                s.precision(9);
                s << "first wrong element (" << i << "," << j << "): got " << g << " want " << w;
                *first = s.str();
            }
            ++bad;
        }
    return bad;
}

// Bitwise comparison of two M x N windows; describes the first mismatch.
inline int64_t count_bit_mismatches(const cmat &got, const cmat &want, std::string *first) {
    int64_t bad = 0;
    for (int64_t i = 0; i < got.M; ++i)
        for (int64_t j = 0; j < got.N; ++j)
            if (bits(got.at(i, j)) != bits(want.at(i, j))) {
                if (!bad && first) {
                    std::ostringstream s;
                    s.precision(9);
                    s << "first wrong element (" << i << "," << j << "): got " << got.at(i, j)
                      << " want " << want.at(i, j);
                    *first = s.str();
                }
                ++bad;
            }
    return bad;
}

// ------------------------------------------------------ error bound

// fp32 unit roundoff (round to nearest) and Higham's gamma_n = n u / (1 - n u).
constexpr double kU32 = 0x1p-24;
constexpr double kU64 = 0x1p-53;
inline double gamma_n(int64_t n, double u) {
    const double nu = double(n) * u;
    return nu / (1.0 - nu);
}

// Exact value e = alpha * sum_k op(A)(i,k) op(B)(k,j) + beta * C0(i,j) in
// double, and T = |alpha| sum_k |a_ik b_kj| + |beta| |C0(i,j)| (C0 term only
// when beta != 0: C is not read then).
//
// Error bound used for random-fraction data (never a tuned constant):
// every term of that sum (the K products and beta*C0) passes through at
// most K + 3 fp32 roundings in any evaluation order an sgemm may use:
//   <= 1 for the product (0 with FMA), <= kc - 1 adds inside a K block,
//   1 for alpha * acc (or for pre-scaling A/B by alpha), 1 for beta * C (0
//   with FMA) and <= nb adds folding the nb K blocks (and beta*C) into C;
//   kc + nb <= K + 1 when kc * nb >= K, so the total is <= K + 3.
// Hence (Higham, Accuracy and Stability, Lemma 3.1 / eq. 3.5)
//   |c - e| <= gamma_{K+3}(u32) * T,
// plus the double reference's own error gamma_{K+3}(u64) * T.
inline double gemm_error_bound(int64_t K, double T) {
    return (gamma_n(K + 3, kU32) + gamma_n(K + 3, kU64)) * T;
}

struct exact_result {
    std::vector<double> e, t;  // M x N, row-major (ld = N)
};

inline exact_result exact_gemm(const gemm_case &c, const float *A, const float *B, const cmat &C0) {
    // Dense copies of op(A) (M x K) and op(B)^T (N x K) in double.
    std::vector<double> a(size_t(c.M * c.K)), bt(size_t(c.N * c.K));
    for (int64_t i = 0; i < c.M; ++i)
        for (int64_t k = 0; k < c.K; ++k) a[size_t(i * c.K + k)] = op_a(c, A, i, k);
    for (int64_t k = 0; k < c.K; ++k)
        for (int64_t j = 0; j < c.N; ++j) bt[size_t(j * c.K + k)] = op_b(c, B, k, j);
    exact_result r;
    r.e.resize(size_t(c.M * c.N));
    r.t.resize(size_t(c.M * c.N));
    const double al = c.alpha, be = c.beta;
    for (int64_t i = 0; i < c.M; ++i)
        for (int64_t j = 0; j < c.N; ++j) {
            const double *ai = &a[size_t(i * c.K)], *bj = &bt[size_t(j * c.K)];
            double s = 0, S = 0;
            for (int64_t k = 0; k < c.K; ++k) {
                const double p = ai[k] * bj[k];  // exact: 24 x 24 bits
                s += p;
                S += std::fabs(p);
            }
            double e = al * s, t = std::fabs(al) * S;
            if (c.beta != 0.0f) {
                e += be * double(C0.at(i, j));
                t += std::fabs(be) * std::fabs(double(C0.at(i, j)));
            }
            r.e[size_t(i * c.N + j)] = e;
            r.t[size_t(i * c.N + j)] = t;
        }
    return r;
}

// Elements of got outside the bound around the exact result.
inline int64_t count_bound_violations(const gemm_case &c, const cmat &got, const exact_result &x,
                                      std::string *first) {
    int64_t bad = 0;
    for (int64_t i = 0; i < c.M; ++i)
        for (int64_t j = 0; j < c.N; ++j) {
            const double e = x.e[size_t(i * c.N + j)];
            const double lim = gemm_error_bound(c.K, x.t[size_t(i * c.N + j)]);
            const double g = got.at(i, j);
            if (!(std::fabs(g - e) <= lim)) {
                if (!bad && first) {
                    std::ostringstream s;
                    s.precision(12);
                    s << "first element outside the bound (" << i << "," << j << "): got " << g
                      << " exact " << e << " |err| " << std::fabs(g - e) << " bound " << lim;
                    *first = s.str();
                }
                ++bad;
            }
        }
    return bad;
}

// ------------------------------------------------------------- misc

inline std::string backend_name() { return anvil::gemm::select_backend().name(); }

// The ISA cap this process started with (ANVIL_MAX_ISA; unset: none, i.e.
// amx), which tests that change the cap with anvil::cpu::set_max_isa_for_test
// put back.  (anvil_get_effective_isa() is no substitute off x86-64: it is
// always scalar there, while the cap still decides whether Highway runs.)
inline anvil_isa_t initial_isa_cap() {
    anvil_isa_t cap = anvil_isa_amx;
    if (const char *v = std::getenv("ANVIL_MAX_ISA")) anvil::cpu::parse_isa_name(v, &cap);
    return cap;
}
// A square convolution (H x H source, K x K kernel, stride S on both axes)
// padded by K / 2 on every side, OH = OW derived; no attributes.
inline anvil_conv2d_desc_t square_conv_desc(anvil_data_type_t src, anvil_data_type_t wei, anvil_data_type_t dst,
                                            int64_t N, int64_t G, int64_t IC, int64_t OC, int64_t H, int64_t K,
                                            int64_t S) {
    anvil_conv2d_desc_t d{};
    d.src_dt = src;
    d.wei_dt = wei;
    d.dst_dt = dst;
    d.N = N;
    d.G = G;
    d.IC = IC;
    d.OC = OC;
    d.IH = d.IW = H;
    d.KH = d.KW = K;
    d.SH = d.SW = S;
    d.pad_t = d.pad_l = d.pad_b = d.pad_r = K / 2;
    d.OH = d.OW = (H + 2 * (K / 2) - K) / S + 1;
    return d;
}
inline bool backend_is_jit() { return backend_name().rfind("jit", 0) == 0; }

// A tiny caller thread pool for anvil_set_threadpool: each parallel-for
// starts `threads` std::threads that take indices from a shared counter.
struct std_thread_pool {
    int threads = 2;
    std::atomic<int64_t> calls{0};
    static void parallel_for(void *ctx, int64_t n, anvil_parallel_body_fn body, void *body_ctx) {
        auto *self = static_cast<std_thread_pool *>(ctx);
        self->calls.fetch_add(1);
        std::atomic<int64_t> next{0};
        auto work = [&] {
            for (int64_t i; (i = next.fetch_add(1)) < n;) body(body_ctx, i);
        };
        const int64_t extra = std::min<int64_t>(self->threads, n) - 1;
        std::vector<std::thread> ts;
        for (int64_t t = 0; t < extra; ++t) ts.emplace_back(work);
        work();
        for (auto &t : ts) t.join();
    }
};

// Whole lines of /proc/self/maps whose permissions hold both 'w' and 'x'.
inline std::vector<std::string> wx_mappings() {
    std::vector<std::string> out;
    std::ifstream f("/proc/self/maps");
    std::string line;
    while (std::getline(f, line)) {
        const size_t sp = line.find(' ');
        if (sp == std::string::npos || sp + 5 > line.size()) continue;
        const std::string perm = line.substr(sp + 1, 4);
        if (perm.find('w') != std::string::npos && perm.find('x') != std::string::npos)
            out.push_back(line);
    }
    return out;
}

// Failures of a kernel sweep: how many, and the first few described.
struct failures {
    int64_t count = 0;
    std::string first;
    void add(const std::string &s) {
        if (count < 12) first += s + "\n";
        ++count;
    }
};

// A sweep's verdict: every kernel there, every call's bits those of
// `against`, nothing written outside C.
inline void check_failures(const failures &bad_status, const failures &bad_bits,
                           const failures &bad_sentinel, const char *against = "the reference") {
    INFO(bad_status.count, " kernels not available, first:\n", bad_status.first);
    CHECK(bad_status.count == 0);
    INFO(bad_bits.count, " calls differ from ", against, ", first:\n", bad_bits.first);
    CHECK(bad_bits.count == 0);
    INFO(bad_sentinel.count, " calls wrote outside C, first:\n", bad_sentinel.first);
    CHECK(bad_sentinel.count == 0);
}

}  // namespace tu
