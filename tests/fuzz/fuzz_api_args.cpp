// Fuzz target 1: the public C API (include/anvil/anvil.h) with hostile
// arguments.
//
// Each input is a sequence of operations (first byte of each: which call);
// the bytes after it decode that call's arguments (tests/fuzz/fuzz_input.h;
// the seed corpora come from tests/fuzz/make_seeds.py).  Operations:
//   0 anvil_sgemm            4 gemm plan: create, packed_b_size, pack_b,
//   1 anvil_gemm_bf16bf16f32   pack_b_owned, execute, destroy
//   2 anvil_gemm_u8s8s32     5 matmul: create, packed_weights_size, pack, execute
//   3 anvil_gemm_s8s8s32     6 conv2d: create, packed_weights_size, pack, execute
//   7 small calls: status/ISA names, conversions, explain, setters with bad
//     values, NULL handles
//
// What is checked (anvil.h, "Conventions"):
//  - every call returns one of the anvil_status_t values, and never crashes
//    (ASan / UBSan in the libFuzzer build);
//  - on any error the call wrote nothing: every buffer it was given (C,
//    packed buffers, handles, size outputs) is byte-for-byte unchanged;
//  - on success nothing outside the output's footprint changed (the gaps
//    of a leading dimension larger than the row, the inputs);
//  - arguments the header says are errors (bad trans/offset characters,
//    negative sizes, leading dimensions below the row length, enum values
//    outside their lists, unsupported type combinations, NULL for a
//    required pointer, a misaligned or foreign packed buffer, ...) are
//    refused;
//  - and a complete valid call does not come back with an argument error.
//
// Memory rule: anvil is never given a buffer smaller than a successful
// call would read or write.  Where the decoded arguments are valid, each
// pointer is either NULL or a real buffer of the full extent (allocated
// with no slack, so ASan sees one byte too far); real buffers are only made
// for small extents (kSmall bytes), larger ones are passed as NULL.  Tiny
// canary buffers are passed only where the header says the call must be
// refused.
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "fuzz_input.h"
#include "lowp/lp_ref.h"

extern "C" {
anvil_status_t fz_set_max_isa(int isa);
const char *fz_isa_name(int isa);
const char *fz_status_str(int status);
anvil_status_t fz_explain_gemm(int a_dt, int b_dt, char transa, char transb, int64_t M, int64_t N,
                               int64_t K, char *buf, size_t size, size_t *needed);
anvil_status_t fz_conv2d_pack_weights(anvil_conv2d_t conv, const void *weights, int layout,
                                      void *packed);
}

namespace {

constexpr int64_t kSmall = int64_t(1) << 18;  // largest real buffer, bytes
constexpr int64_t kPackedMax = int64_t(1) << 22;
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();

std::string g_ctx;  // the decoded call, printed when a check fails

[[noreturn]] void fail(int line, const char *cond, const char *fmt, ...) {
    std::fprintf(stderr, "\nfuzz_api_args: check failed (fuzz_api_args.cpp:%d): %s\n", line, cond);
    if (fmt && *fmt) {
        va_list ap;
        va_start(ap, fmt);
        std::vfprintf(stderr, fmt, ap);
        va_end(ap);
        std::fputc('\n', stderr);
    }
    std::fprintf(stderr, "call: %s\n", g_ctx.c_str());
    std::abort();
}
#define CHECK(cond, ...)                                        \
    do {                                                        \
        if (!(cond)) fail(__LINE__, #cond, "" __VA_ARGS__);     \
    } while (0)

template <typename E>
int ival(const E &e) {
    static_assert(sizeof(E) == sizeof(int), "int-sized enum");
    int v;
    std::memcpy(&v, &e, sizeof(v));
    return v;
}
template <typename E>
void set_enum(E *e, int v) {
    static_assert(sizeof(E) == sizeof(int), "int-sized enum");
    std::memcpy(e, &v, sizeof(v));
}

bool ok(anvil_status_t s) { return ival(s) == anvil_success; }

bool g_trace = false;  // ANVIL_FUZZ_TRACE=1: print every call and its status

// The status is one of the enumerators; returns it as an int.
int check_status(anvil_status_t s) {
    const int v = ival(s);
    if (g_trace) std::fprintf(stderr, "  status %d (%s) of %s\n", v, fz_status_str(v), g_ctx.c_str());
    CHECK(v >= anvil_success && v <= anvil_bad_packed_buffer, "status %d is not an anvil_status_t", v);
    return v;
}

// A complete, valid call may still fail for want of resources or support,
// never with an argument error.
void check_not_argument_error(anvil_status_t s) {
    const int v = ival(s);
    CHECK(v == anvil_success || v == anvil_size_overflow || v == anvil_unsupported ||
              v == anvil_out_of_memory || v == anvil_jit_error,
          "a valid call returned %d (%s)", v, fz_status_str(v));
}

std::string fmt(const char *f, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, f);
    std::vsnprintf(buf, sizeof(buf), f, ap);
    va_end(ap);
    return buf;
}

// ----------------------------------------------------------- buffers

// A heap buffer of exactly n bytes at p (p = base + misalign), filled with
// pseudo-random bytes; snapshot() / unchanged() compare its contents.
struct buffer {
    uint8_t *base = nullptr;
    uint8_t *p = nullptr;
    size_t n = 0;
    std::vector<uint8_t> snap;
    buffer(size_t bytes, size_t misalign, uint64_t seed) : n(bytes) {
        // malloc's alignment (16) plus `misalign`; the buffer ends where the
        // block ends, so ASan sees the first byte past it.
        base = static_cast<uint8_t *>(std::malloc(bytes + misalign + (bytes + misalign == 0)));
        if (!base) std::abort();
        p = base + misalign;
        fz::rng g(seed);
        for (size_t i = 0; i < n; ++i) p[i] = uint8_t(g.next());
        snapshot();
    }
    ~buffer() { std::free(base); }
    buffer(const buffer &) = delete;
    buffer &operator=(const buffer &) = delete;
    void snapshot() { snap.assign(p, p + n); }
    bool unchanged() const { return n == 0 || std::memcmp(p, snap.data(), n) == 0; }
};

// Owns the buffers of one operation.
struct arena {
    std::vector<std::unique_ptr<buffer>> bufs;
    buffer *make(size_t bytes, uint64_t seed, size_t misalign = 0) {
        bufs.push_back(std::make_unique<buffer>(bytes, misalign, seed));
        return bufs.back().get();
    }
    void snapshot_all() {
        for (auto &b : bufs) b->snapshot();
    }
    // Every buffer other than `except` is unchanged.
    bool unchanged_except(const buffer *except) const {
        for (auto &b : bufs)
            if (b.get() != except && !b->unchanged()) return false;
        return true;
    }
};

// A rows x cols row-major matrix with leading dimension ld, elements of es
// bytes.
struct mat {
    int64_t rows = 0, cols = 0, ld = 0, es = 1;
};

bool ld_ok(const mat &m) { return m.ld >= std::max<int64_t>(1, m.cols); }

// Bytes spanned by the matrix ((rows - 1) * ld + cols elements), or -1 when
// that does not fit in int64 or the shape is invalid.
int64_t span(const mat &m) {
    if (m.rows < 0 || m.cols < 0 || !ld_ok(m)) return -1;
    if (m.rows == 0 || m.cols == 0) return 0;
    const __int128 e = __int128(m.rows - 1) * m.ld + m.cols;  // < 2^127
    if (e > kI64Max) return -1;
    return e * m.es > kI64Max ? -1 : int64_t(e * m.es);
}

// Elements in a product of non-negative factors, -1 on overflow / negative.
int64_t prod(std::initializer_list<int64_t> f) {
    __int128 p = 1;
    for (int64_t v : f) {
        if (v < 0) return -1;
        p *= v;
        if (p > kI64Max) return -1;
    }
    return int64_t(p);
}
int64_t bytes_of(int64_t elems, int64_t es) {
    if (elems < 0) return -1;
    const __int128 b = __int128(elems) * es;
    return b > kI64Max ? -1 : int64_t(b);
}
bool small(int64_t bytes) { return bytes >= 0 && bytes <= kSmall; }

// Bytes of buffer `b` outside the matrix footprint m (element (i, j) at
// offset (i * ld + j) * es for i < rows, j < cols) are unchanged.
bool unchanged_outside(const buffer &b, const mat &m) {
    for (size_t o = 0; o < b.n; ++o) {
        if (b.p[o] == b.snap[o]) continue;
        const uint64_t e = o / uint64_t(m.es);
        const uint64_t i = e / uint64_t(m.ld), j = e % uint64_t(m.ld);
        if (!(i < uint64_t(m.rows) && j < uint64_t(m.cols))) return false;
    }
    return true;
}

// ------------------------------------------------------------ decoding

char trans_char(fz::reader &r) {
    static const char t[8] = {'N', 'T', 'n', 't', 'N', 'T', 'C', '\0'};
    const uint8_t b = r.u8();
    return b < 248 ? t[b % 8] : char(r.u8());
}
char offset_char(fz::reader &r) {
    static const char t[8] = {'F', 'C', 'R', 'f', 'c', 'r', 'X', '\0'};
    const uint8_t b = r.u8();
    return b < 248 ? t[b % 8] : char(r.u8());
}
bool parse_trans(char c, bool *t) {
    if (c == 'N' || c == 'n') return *t = false, true;
    if (c == 'T' || c == 't') return *t = true, true;
    return false;
}
int offset_kind(char c) {  // 0 'F', 1 'C' (per row), 2 'R' (per column), -1 bad
    switch (c) {
        case 'F': case 'f': return 0;
        case 'C': case 'c': return 1;
        case 'R': case 'r': return 2;
        default: return -1;
    }
}

float scalar(fz::reader &r) {
    static const float t[] = {1.0f, 0.0f, -1.0f, 2.0f, 0.5f, std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::infinity(), -0.0f, 1e-30f, 3.5f};
    const uint8_t b = r.u8();
    return b < 250 ? t[b % 10] : r.f32();
}

// An int for an enum field: mostly the enumerators, sometimes not.
int enum_int(fz::reader &r, int count) {
    const uint8_t b = r.u8();
    if (b >= 200) return r.i32();
    const int k = b % (count + 2);  // 0..count (count: one past the last), -1
    return k == count + 1 ? -1 : k;
}

int32_t zero_point(fz::reader &r) {
    static const int32_t t[] = {0, 1, -1, 127, 128, 255, 256, -128, -129, 5, 100,
                                std::numeric_limits<int32_t>::min(),
                                std::numeric_limits<int32_t>::max(), 17, -3};
    const uint8_t b = r.u8();
    return b < 250 ? t[b % 15] : r.i32();
}

int64_t dt_bytes(int dt) {
    switch (dt) {
        case anvil_dt_f32: case anvil_dt_s32: return 4;
        case anvil_dt_bf16: return 2;
        case anvil_dt_u8: case anvil_dt_s8: return 1;
        default: return 0;
    }
}
bool dt_valid(int dt) { return dt >= anvil_dt_f32 && dt <= anvil_dt_s8; }

// Three data types: mostly a supported combination, sometimes any valid
// one, sometimes raw ints.
void decode_types(fz::reader &r, bool conv, int *a, int *b, int *c) {
    static const int sup[][3] = {
        {anvil_dt_bf16, anvil_dt_bf16, anvil_dt_f32}, {anvil_dt_bf16, anvil_dt_bf16, anvil_dt_bf16},
        {anvil_dt_u8, anvil_dt_s8, anvil_dt_f32},     {anvil_dt_u8, anvil_dt_s8, anvil_dt_s32},
        {anvil_dt_u8, anvil_dt_s8, anvil_dt_bf16},    {anvil_dt_u8, anvil_dt_s8, anvil_dt_u8},
        {anvil_dt_u8, anvil_dt_s8, anvil_dt_s8},      {anvil_dt_s8, anvil_dt_s8, anvil_dt_f32},
        {anvil_dt_s8, anvil_dt_s8, anvil_dt_s32},     {anvil_dt_s8, anvil_dt_s8, anvil_dt_bf16},
        {anvil_dt_s8, anvil_dt_s8, anvil_dt_u8},      {anvil_dt_s8, anvil_dt_s8, anvil_dt_s8},
        {anvil_dt_f32, anvil_dt_f32, anvil_dt_f32},  // conv only (raw ints reach it for matmul)
    };
    const uint8_t k = r.u8();
    if (k < 128) {
        const int n = conv ? 13 : 12;
        *a = sup[k % n][0];
        *b = sup[k % n][1];
        *c = sup[k % n][2];
    } else if (k < 240) {
        const int i = (k - 128) % 125;
        *a = i / 25;
        *b = i / 5 % 5;
        *c = i % 5;
    } else {
        *a = r.i32();
        *b = r.i32();
        *c = r.i32();
    }
}

bool matmul_types_supported(int a, int b, int c) {
    if (!dt_valid(a) || !dt_valid(b) || !dt_valid(c)) return false;
    if ((a == anvil_dt_bf16 && b == anvil_dt_bf16) || (a == anvil_dt_f32 && b == anvil_dt_f32))
        return c == anvil_dt_f32 || c == anvil_dt_bf16;
    return (a == anvil_dt_u8 || a == anvil_dt_s8) && b == anvil_dt_s8;
}
bool conv_types_supported(int s, int w, int d) {
    if (s == anvil_dt_f32 && w == anvil_dt_f32) return d == anvil_dt_f32;
    return matmul_types_supported(s, w, d);
}

// Post-ops: up to ANVIL_MAX_POST_OPS entries in an exactly sized heap
// array (anvil reading past num_post_ops entries shows up in ASan).
struct post_ops {
    std::vector<anvil_post_op_t> ops;
    int num = 0;
    bool null_array = false;
};

void decode_post_ops(fz::reader &r, int64_t ncols, post_ops *po) {
    const uint8_t nb = r.u8();
    if (nb < 200) po->num = nb % 5;
    else if (nb < 240) po->num = int(nb % 12) - 2;  // -2 .. 9
    else po->num = r.i32();
    po->null_array = nb >= 195 && nb < 200;
    const int decode = std::clamp(po->num, 0, ANVIL_MAX_POST_OPS);
    po->ops.assign(ANVIL_MAX_POST_OPS, anvil_post_op_t{});
    for (int t = 0; t < decode; ++t) {
        anvil_post_op_t &op = po->ops[t];
        const uint8_t kb = r.u8();
        set_enum(&op.kind, kb < 120 ? 0 : kb < 240 ? 1 : kb < 250 ? int(kb) - 238 : r.i32());
        const uint8_t ab = r.u8();
        op.alg = ab < 240 ? (ab % 10) - (ab % 10 == 9 ? 10 : 0) : r.i32();  // 0..8, -1
        op.alpha = scalar(r);
        op.beta = scalar(r);
        const uint8_t pb = r.u8();
        op.per_n = pb < 250 ? pb & 1 : r.i32();
        const uint8_t sb = r.u8();
        set_enum(&op.src_dt, sb < 250 ? (sb % 8 < 4 ? sb % 2 : sb % 8 - 2) : r.i32());  // 0,1 / 2..5
        op.ld = r.ld(ncols);
    }
}

// The header's refusals for a post-op chain over ncols columns.
bool post_ops_must_reject(const post_ops &po, int64_t ncols) {
    if (po.num < 0 || po.num > ANVIL_MAX_POST_OPS) return true;
    if (po.num > 0 && po.null_array) return true;
    for (int t = 0; t < po.num; ++t) {
        const anvil_post_op_t &op = po.ops[t];
        const int kind = ival(op.kind);
        if (kind == anvil_post_op_eltwise) {
            if (op.alg < anvil_eltwise_relu || op.alg > anvil_eltwise_tanh) return true;
        } else if (kind == anvil_post_op_binary) {
            if (op.alg != anvil_binary_add && op.alg != anvil_binary_mul) return true;
            const int sdt = ival(op.src_dt);
            if (sdt != anvil_dt_f32 && sdt != anvil_dt_bf16) return true;
            if (!op.per_n && op.ld < std::max<int64_t>(1, ncols)) return true;
        } else if (kind == anvil_post_op_sum) {
            if (!std::isfinite(op.alpha) || !std::isfinite(op.beta)) return true;
        } else {
            return true;
        }
    }
    return false;
}

std::string post_ops_str(const post_ops &po) {
    std::string s = fmt("post_ops=%d%s[", po.num, po.null_array ? "(NULL)" : "");
    for (int t = 0; t < std::clamp(po.num, 0, ANVIL_MAX_POST_OPS); ++t) {
        const anvil_post_op_t &op = po.ops[t];
        s += fmt("{kind=%d alg=%d a=%g b=%g per_n=%d src_dt=%d ld=%lld}", ival(op.kind), op.alg,
                 double(op.alpha), double(op.beta), op.per_n, ival(op.src_dt), (long long)op.ld);
    }
    return s + "]";
}

// Operand buffers for the binary post-ops of a chain over a rows x ncols
// output (binary_srcs in the order of the binary post-ops), each real (if
// small) or NULL; `all` says whether every one is real.
struct binary_srcs {
    std::vector<const void *> ptrs;
    bool all = true;
    int count = 0;
};
void make_binary_srcs(const post_ops &po, int64_t rows, int64_t ncols, uint8_t nulls, arena &ar,
                      uint64_t seed, binary_srcs *bs) {
    for (int t = 0; t < std::clamp(po.num, 0, ANVIL_MAX_POST_OPS); ++t) {
        const anvil_post_op_t &op = po.ops[t];
        if (ival(op.kind) != anvil_post_op_binary) continue;
        const int64_t es = dt_bytes(ival(op.src_dt));
        int64_t bytes = -1;
        if (es == 0) bytes = -1;
        else if (op.per_n) bytes = bytes_of(ncols, es);
        else bytes = span(mat{rows, ncols, op.ld, es});
        const void *p = nullptr;
        if (!(nulls & (1u << (bs->count % 8))) && small(bytes))
            p = ar.make(size_t(bytes), seed + 100 + t)->p;
        bs->all = bs->all && p;
        bs->ptrs.push_back(p);
        ++bs->count;
    }
    if (bs->ptrs.empty()) bs->ptrs.push_back(nullptr);
}

// ------------------------------------------------------- BLAS-like GEMMs

enum class gk { f32, bf16, u8, s8 };

void fuzz_gemm(fz::reader &r, gk kind) {
    const bool int8 = kind == gk::u8 || kind == gk::s8;
    const char ta = trans_char(r), tb = trans_char(r);
    const char oc = int8 ? offset_char(r) : 'F';
    const int64_t M = r.size(), N = r.size(), K = r.size();
    bool tA = false, tB = false;
    const bool ta_ok = parse_trans(ta, &tA), tb_ok = parse_trans(tb, &tB);
    const bool chars_ok = ta_ok && tb_ok && offset_kind(oc) >= 0;
    const int64_t es = kind == gk::f32 ? 4 : kind == gk::bf16 ? 2 : 1;
    mat A{tA ? K : M, tA ? M : K, 0, es}, B{tB ? N : K, tB ? K : N, 0, es}, C{M, N, 0, 4};
    A.ld = r.ld(A.cols);
    B.ld = r.ld(B.cols);
    C.ld = r.ld(C.cols);
    const float alpha = scalar(r), beta = scalar(r);
    const uint8_t ao = r.u8(), bo = r.u8();
    const uint8_t nulls = r.u8(), alias = r.u8() % 5;
    const uint64_t seed = r.u8();
    static const char *names[] = {"sgemm", "gemm_bf16bf16f32", "gemm_u8s8s32", "gemm_s8s8s32"};
    g_ctx = fmt("%s(transa=0x%02x transb=0x%02x offsetc=0x%02x M=%lld N=%lld K=%lld lda=%lld "
                "ldb=%lld ldc=%lld alpha=%g beta=%g ao=%d bo=%d nulls=0x%x alias=%d)",
                names[int(kind)], uint8_t(ta), uint8_t(tb), uint8_t(oc), (long long)M,
                (long long)N, (long long)K, (long long)A.ld, (long long)B.ld, (long long)C.ld,
                double(alpha), double(beta), ao, int(int8_t(bo)), nulls, alias);

    const bool neg = M < 0 || N < 0 || K < 0;
    const bool must_reject = !chars_ok || neg || !ld_ok(A) || !ld_ok(B) || !ld_ok(C);
    const int okind = offset_kind(oc);
    const int64_t co_elems = okind == 1 ? M : okind == 2 ? N : 1;

    // Bytes of each role: A, B, C, co (-1: none can be made).
    int64_t need[4];
    if (must_reject) {
        for (auto &v : need) v = 64;  // tiny canaries: the call must not touch them
    } else {
        need[0] = span(A);
        need[1] = span(B);
        need[2] = span(C);
        need[3] = bytes_of(co_elems, 4);
    }
    bool present[4];
    for (int i = 0; i < 4; ++i) present[i] = !(nulls & (1u << i)) && small(need[i]);
    if (!int8) present[3] = false;
    // Aliasing: 1 A == B, 2 C == A, 3 C == B, 4 all three.
    int group[4] = {0, 1, 2, 3};
    auto join = [&](int x, int y) {
        if (present[x] && present[y]) group[y] = group[x];
    };
    if (alias == 1) join(0, 1);
    if (alias == 2) join(0, 2);
    if (alias == 3) join(1, 2);
    if (alias == 4) {
        join(0, 1);
        join(0, 2);
        if (!present[0]) join(1, 2);
    }
    arena ar;
    buffer *buf[4] = {};
    for (int i = 0; i < 4; ++i) {
        if (!present[i] || group[i] != i) continue;
        int64_t bytes = 0;
        for (int j = 0; j < 4; ++j)
            if (present[j] && group[j] == i) bytes = std::max(bytes, need[j]);
        buf[i] = ar.make(size_t(bytes), seed * 4 + i);
    }
    for (int i = 0; i < 4; ++i)
        if (present[i]) buf[i] = buf[group[i]];
    void *pa = buf[0] ? buf[0]->p : nullptr, *pb = buf[1] ? buf[1]->p : nullptr;
    void *pc = buf[2] ? buf[2]->p : nullptr, *pco = buf[3] ? buf[3]->p : nullptr;

    anvil_status_t st;
    switch (kind) {
        case gk::f32:
            st = anvil_sgemm(ta, tb, M, N, K, alpha, static_cast<const float *>(pa), A.ld,
                             static_cast<const float *>(pb), B.ld, beta, static_cast<float *>(pc),
                             C.ld);
            break;
        case gk::bf16:
            st = anvil_gemm_bf16bf16f32(ta, tb, M, N, K, alpha, static_cast<const anvil_bf16_t *>(pa),
                                        A.ld, static_cast<const anvil_bf16_t *>(pb), B.ld, beta,
                                        static_cast<float *>(pc), C.ld);
            break;
        case gk::u8:
            st = anvil_gemm_u8s8s32(ta, tb, oc, M, N, K, alpha, static_cast<const uint8_t *>(pa),
                                    A.ld, ao, static_cast<const int8_t *>(pb), B.ld, int8_t(bo),
                                    beta, static_cast<int32_t *>(pc), C.ld,
                                    static_cast<const int32_t *>(pco));
            break;
        default:
            st = anvil_gemm_s8s8s32(ta, tb, oc, M, N, K, alpha, static_cast<const int8_t *>(pa),
                                    A.ld, int8_t(ao), static_cast<const int8_t *>(pb), B.ld,
                                    int8_t(bo), beta, static_cast<int32_t *>(pc), C.ld,
                                    static_cast<const int32_t *>(pco));
            break;
    }
    const int sv = check_status(st);
    if (must_reject) CHECK(sv != anvil_success, "invalid arguments accepted");
    if (!must_reject && M > 0 && N > 0) {
        const bool need_ab = K > 0 && alpha != 0.0f;
        if (!pc || (int8 && !pco) || (need_ab && (!pa || !pb)))
            CHECK(sv != anvil_success, "a required NULL pointer accepted");
        else if (pa && pb)
            check_not_argument_error(st);
    }
    if (sv != anvil_success || M <= 0 || N <= 0 || !pc) {
        CHECK(ar.unchanged_except(nullptr), "status %d but a buffer changed", sv);
    } else {
        CHECK(ar.unchanged_except(buf[2]), "an input buffer changed");
        CHECK(unchanged_outside(*buf[2], C), "a byte outside C's footprint changed");
    }
    // The same arguments through a dispatched small GEMM (no further input
    // bytes, so the corpus decodes as before): create refuses exactly what
    // anvil_sgemm refused for its shape, execute refuses the same missing
    // pointers, and its direct function (called where execute succeeded)
    // writes only inside C.
    if (kind == gk::f32) {
        g_ctx += " [then anvil_smm_* with the same arguments]";
        ar.snapshot_all();
        const anvil_smm_t canary = reinterpret_cast<anvil_smm_t>(uintptr_t(0x5eed5eed8));
        anvil_smm_t h = canary;
        const int cv = check_status(anvil_smm_create(&h, ta, tb, M, N, K, alpha, A.ld, B.ld, beta, C.ld));
        if (must_reject) CHECK(cv != anvil_success, "smm: invalid arguments accepted");
        if (cv != anvil_success) {
            CHECK(h == canary, "smm: failed create wrote the handle");
            CHECK(ar.unchanged_except(nullptr), "smm: failed create wrote");
            return;
        }
        const int ev = check_status(anvil_smm_execute(h, static_cast<const float *>(pa),
                                                      static_cast<const float *>(pb),
                                                      static_cast<float *>(pc)));
        CHECK((ev == anvil_success) == (sv == anvil_success) || ev == anvil_out_of_memory ||
                  sv == anvil_out_of_memory,
              "smm execute status %d, anvil_sgemm %d", ev, sv);
        if (ev == anvil_success && M > 0 && N > 0 && pc) {
            if (const anvil_smm_fn fn = anvil_smm_get_function(h))
                fn(static_cast<const float *>(pa), static_cast<const float *>(pb), static_cast<float *>(pc));
            CHECK(ar.unchanged_except(buf[2]), "smm: an input buffer changed");
            CHECK(unchanged_outside(*buf[2], C), "smm: a byte outside C's footprint changed");
        } else {
            CHECK(ar.unchanged_except(nullptr), "smm: status %d but a buffer changed", ev);
        }
        CHECK(ok(anvil_smm_destroy(h)));
    }
}

// ------------------------------------------------------- strided batches

// Elements spanned by one item of a batch operand (0 for an empty one), -1
// when that does not fit.
int64_t item_elems(const mat &m) {
    const int64_t b = span(m);
    return b < 0 ? -1 : b / m.es;
}

// A stride for a batch operand: usually one item after another (plus a
// small gap), sometimes 0 (shared), side by side (cols), one element short
// (overlapping items), negative, or any size() value.
int64_t batch_stride(fz::reader &r, const mat &m) {
    const uint8_t b = r.u8();
    const int64_t item = item_elems(m);
    switch (b % 8) {
        case 0:
        case 1: return item < 0 ? r.size() : fz::reader::sat_add(item, b % 3);
        case 2: return 0;
        case 3: return m.cols;
        case 4: return item < 0 ? r.size() : item - 1;
        case 5: return -1 - int64_t(b % 3);
        default: return r.size();
    }
}

// Bytes spanned by `batch` items `stride` elements apart (-1: no fit).
int64_t batch_span(const mat &m, int64_t stride, int64_t batch) {
    const int64_t item = item_elems(m);
    if (item < 0 || batch < 0 || stride < 0) return -1;
    if (batch == 0 || item == 0) return 0;
    const __int128 e = __int128(batch - 1) * stride + item;
    return e * m.es > kI64Max ? -1 : int64_t(e * m.es);
}

// Bytes of b outside every item's footprint of C are unchanged.
bool unchanged_outside_items(const buffer &b, const mat &m, int64_t stride, int64_t batch) {
    for (size_t o = 0; o < b.n; ++o) {
        if (b.p[o] == b.snap[o]) continue;
        const int64_t e = int64_t(o) / m.es;
        bool inside = false;
        for (int64_t t = 0; t < batch && !inside; ++t) {
            const int64_t f = e - t * stride;
            inside = f >= 0 && f / m.ld < m.rows && f % m.ld < m.cols;
        }
        if (!inside) return false;
    }
    return true;
}

// anvil_sgemm_batch_strided / anvil_gemm_bf16bf16f32_batch_strided /
// anvil_gemm_u8s8s32 and s8s8s32_batch_strided: the single call's rules per
// item, plus the header's batch rules (strides >= 0, C items one after
// another or side by side within each row).
void fuzz_batch(fz::reader &r) {
    const uint8_t kind = r.u8();
    // Bits 1 and 2 both set: int8 (bit 3: signed A), with an offsetc.
    const bool int8 = (kind & 6) == 6, a_signed = kind & 8;
    const bool bf16 = !int8 && (kind & 1);
    const char offsetc = int8 ? offset_char(r) : 'F';
    const char ta = trans_char(r), tb = trans_char(r);
    const int64_t M = r.size(), N = r.size(), K = r.size();
    bool tA = false, tB = false;
    const bool chars_ok = parse_trans(ta, &tA) && parse_trans(tb, &tB);
    const int64_t es = int8 ? 1 : bf16 ? 2 : 4;
    mat A{tA ? K : M, tA ? M : K, 0, es}, B{tB ? N : K, tB ? K : N, 0, es}, C{M, N, 0, 4};
    A.ld = r.ld(A.cols);
    B.ld = r.ld(B.cols);
    C.ld = r.ld(C.cols);
    const uint8_t bb = r.u8();
    const int64_t batch = bb < 230 ? bb % 6 : bb < 250 ? -1 - int64_t(bb % 3) : r.size();
    const int64_t sa = batch_stride(r, A), sb = batch_stride(r, B), sc = batch_stride(r, C);
    const float alpha = scalar(r), beta = scalar(r);
    const uint8_t nulls = r.u8();
    const uint64_t seed = r.u8();
    g_ctx = fmt("%s(transa=0x%02x transb=0x%02x M=%lld N=%lld K=%lld lda=%lld stride_a=%lld "
                "ldb=%lld stride_b=%lld ldc=%lld stride_c=%lld batch=%lld alpha=%g beta=%g "
                "nulls=0x%x)",
                int8 ? (a_signed ? "gemm_s8s8s32_batch_strided" : "gemm_u8s8s32_batch_strided")
                : bf16 ? "gemm_bf16bf16f32_batch_strided"
                       : "sgemm_batch_strided",
                uint8_t(ta),
                uint8_t(tb), (long long)M, (long long)N, (long long)K, (long long)A.ld,
                (long long)sa, (long long)B.ld, (long long)sb, (long long)C.ld, (long long)sc,
                (long long)batch, double(alpha), double(beta), nulls);

    // (strchr finds the terminator too: '\0' must be tested apart.)
    const bool offset_ok = !int8 || (offsetc != '\0' && std::strchr("FfCcRr", offsetc) != nullptr);
    const bool item_ok = chars_ok && offset_ok && M >= 0 && N >= 0 && K >= 0 && ld_ok(A) &&
                         ld_ok(B) && ld_ok(C);
    bool c_layout_ok = true;
    if (item_ok && batch >= 2 && sc >= 0 && item_elems(C) > 0) {
        const int64_t extent = item_elems(C);
        const __int128 last = __int128(batch - 1) * sc + N;
        c_layout_ok = sc >= extent || (sc >= N && last <= C.ld);
    }
    const bool must_reject =
        !item_ok || batch < 0 || sa < 0 || sb < 0 || sc < 0 || !c_layout_ok;

    int64_t need[3];
    if (must_reject) {
        for (auto &v : need) v = 64;  // canaries
    } else {
        need[0] = batch_span(A, sa, batch);
        need[1] = batch_span(B, sb, batch);
        need[2] = batch_span(C, sc, batch);
    }
    arena ar;
    buffer *buf[3] = {};
    for (int i = 0; i < 3; ++i)
        if (!(nulls & (1u << i)) && small(need[i])) buf[i] = ar.make(size_t(need[i]), seed * 3 + i);
    const void *pa = buf[0] ? buf[0]->p : nullptr, *pb = buf[1] ? buf[1]->p : nullptr;
    float *pc = buf[2] ? reinterpret_cast<float *>(buf[2]->p) : nullptr;
    // int8's co: one per row or column (any values), absent with bit 3 of nulls.
    std::vector<int32_t> co_buf;
    // (The element count is compared, not its bytes: M or N may be near
    // INT64_MAX, where * 4 overflows.)
    if (int8 && !(nulls & 8) && small(std::max<int64_t>(M, N)) && small(std::max<int64_t>(M, N) * 4))
        co_buf.assign(size_t(std::max<int64_t>({M, N, 1})), int32_t(seed) - 100);
    const int32_t *co = co_buf.empty() ? nullptr : co_buf.data();
    auto *pc32 = reinterpret_cast<int32_t *>(pc);

    const anvil_status_t st =
        int8 && a_signed
            ? anvil_gemm_s8s8s32_batch_strided(ta, tb, offsetc, M, N, K, alpha,
                                               static_cast<const int8_t *>(pa), A.ld, sa,
                                               int8_t(seed), static_cast<const int8_t *>(pb),
                                               B.ld, sb, int8_t(seed >> 1), beta, pc32, C.ld, sc,
                                               co, batch)
        : int8 ? anvil_gemm_u8s8s32_batch_strided(ta, tb, offsetc, M, N, K, alpha,
                                                  static_cast<const uint8_t *>(pa), A.ld, sa,
                                                  uint8_t(seed), static_cast<const int8_t *>(pb),
                                                  B.ld, sb, int8_t(seed >> 1), beta, pc32, C.ld,
                                                  sc, co, batch)
        : bf16 ? anvil_gemm_bf16bf16f32_batch_strided(
                   ta, tb, M, N, K, alpha, static_cast<const anvil_bf16_t *>(pa), A.ld, sa,
                   static_cast<const anvil_bf16_t *>(pb), B.ld, sb, beta, pc, C.ld, sc, batch)
             : anvil_sgemm_batch_strided(ta, tb, M, N, K, alpha, static_cast<const float *>(pa),
                                         A.ld, sa, static_cast<const float *>(pb), B.ld, sb, beta,
                                         pc, C.ld, sc, batch);
    const int sv = check_status(st);
    if (must_reject) CHECK(sv != anvil_success, "invalid arguments accepted");
    if (!must_reject && M > 0 && N > 0 && batch > 0) {
        const bool need_ab = K > 0 && alpha != 0.0f;
        if (!pc || (int8 && !co) || (need_ab && (!pa || !pb)))
            CHECK(sv != anvil_success, "a required NULL pointer accepted");
        else if (pa && pb)
            check_not_argument_error(st);
    }
    if (sv != anvil_success || M <= 0 || N <= 0 || batch <= 0 || !pc) {
        CHECK(ar.unchanged_except(nullptr), "status %d but a buffer changed", sv);
    } else {
        CHECK(ar.unchanged_except(buf[2]), "an input buffer changed");
        CHECK(unchanged_outside_items(*buf[2], C, sc, batch),
              "a byte outside the C items' footprints changed");
    }
}

// ------------------------------------------------------------ gemm plan

void fuzz_plan(fz::reader &r) {
    const uint8_t flags = r.u8();
    const char ta = trans_char(r), tb = trans_char(r);
    const int64_t M = r.size(), N = r.size(), K = r.size();
    bool tA = false, tB = false;
    const bool ta_ok = parse_trans(ta, &tA), tb_ok = parse_trans(tb, &tB);
    const bool chars_ok = ta_ok && tb_ok;
    mat A{tA ? K : M, tA ? M : K, 0, 4}, B{tB ? N : K, tB ? K : N, 0, 4}, C{M, N, 0, 4};
    A.ld = r.ld(A.cols);
    B.ld = r.ld(B.cols);
    C.ld = r.ld(C.cols);
    const uint8_t pack_mode = r.u8(), exec_mode = r.u8();
    const float alpha = scalar(r), beta = scalar(r);
    const uint8_t nulls = r.u8();
    const uint64_t seed = r.u8();
    g_ctx = fmt("gemm_plan(flags=0x%x transa=0x%02x transb=0x%02x M=%lld N=%lld K=%lld lda=%lld "
                "ldb=%lld ldc=%lld pack_mode=0x%x exec_mode=0x%x alpha=%g beta=%g nulls=0x%x)",
                flags, uint8_t(ta), uint8_t(tb), (long long)M, (long long)N, (long long)K,
                (long long)A.ld, (long long)B.ld, (long long)C.ld, pack_mode, exec_mode,
                double(alpha), double(beta), nulls);
    const bool must_reject =
        !chars_ok || M < 0 || N < 0 || K < 0 || !ld_ok(A) || !ld_ok(B) || !ld_ok(C) || (flags & 1);

    const anvil_gemm_plan_t canary = reinterpret_cast<anvil_gemm_plan_t>(uintptr_t(0x5eed5eed0));
    anvil_gemm_plan_t plan = canary;
    anvil_status_t st = anvil_gemm_plan_create((flags & 1) ? nullptr : &plan, ta, tb, M, N, K,
                                               A.ld, B.ld, C.ld);
    int sv = check_status(st);
    if (must_reject) CHECK(sv != anvil_success, "invalid plan accepted");
    if (sv != anvil_success) {
        CHECK(plan == canary, "failed create wrote the handle");
        return;
    }
    CHECK(plan != canary && plan != nullptr);

    size_t bytes = 12345;
    CHECK(!ok(anvil_gemm_plan_packed_b_size(plan, nullptr)));
    check_status(st = anvil_gemm_plan_packed_b_size(plan, &bytes));
    CHECK(ok(st));
    // ceil(N / nr) * nr * K floats and a header: at least N * K * 4.
    const __int128 nk = __int128(N) * K;
    CHECK(nk <= kI64Max && __int128(bytes) >= nk * 4, "packed_b_size %zu too small", bytes);

    arena ar;
    const int64_t b_span = span(B);
    const float *Bp = nullptr;
    if (!(nulls & 1) && small(b_span)) Bp = reinterpret_cast<const float *>(ar.make(size_t(b_span), seed)->p);
    const bool need_b = N > 0 && K > 0;
    buffer *packed = nullptr;
    bool packed_ok = false, owned_ok = false;
    if (int64_t(bytes) <= kPackedMax) {
        packed = ar.make(bytes, seed + 1, (pack_mode >> 2) & 3);  // 0: aligned
        const bool aligned = reinterpret_cast<uintptr_t>(packed->p) % 4 == 0;
        if ((pack_mode & 3) == 0 || (pack_mode & 3) == 2) {
            void *dst = (pack_mode & 16) ? nullptr : packed->p;
            ar.snapshot_all();
            sv = check_status(st = anvil_gemm_plan_pack_b(plan, Bp, dst));
            if (!dst || (need_b && !Bp) || !aligned)
                CHECK(sv != anvil_success, "pack_b: NULL or misaligned argument accepted");
            else
                check_not_argument_error(st);
            if (sv != anvil_success) CHECK(ar.unchanged_except(nullptr), "failed pack_b wrote");
            packed_ok = sv == anvil_success;
        }
    }
    if ((pack_mode & 3) == 1 || (pack_mode & 3) == 2) {
        // (A large packed size is only tried where it must be refused.)
        if (int64_t(bytes) <= kPackedMax || (need_b && !Bp)) {
            sv = check_status(st = anvil_gemm_plan_pack_b_owned(plan, Bp));
            if (need_b && !Bp) CHECK(sv != anvil_success, "pack_b_owned: NULL B accepted");
            owned_ok = sv == anvil_success;
        }
    }

    // Execute: A, C real (small) or NULL; the packed buffer as decoded.
    const int64_t a_span = span(A), c_span = span(C);
    buffer *Ab = (!(nulls & 2) && small(a_span)) ? ar.make(size_t(a_span), seed + 2) : nullptr;
    buffer *Cb = (!(nulls & 4) && small(c_span)) ? ar.make(size_t(c_span), seed + 3) : nullptr;
    const void *pb = nullptr;
    bool pb_good = false;
    switch (exec_mode % 4) {
        case 0:  // ours (or NULL when there is none: the owned one)
            pb = packed_ok ? packed->p : nullptr;
            pb_good = packed_ok || (!pb && owned_ok);
            break;
        case 1:  // NULL: the owned buffer, if any
            pb_good = owned_ok;
            break;
        case 2:  // garbage of the right size
            if (int64_t(bytes) <= kPackedMax) pb = ar.make(bytes, seed + 7)->p;
            else pb_good = owned_ok;  // NULL
            break;
        case 3:  // a misaligned copy of ours
            if (packed_ok) {
                buffer *cp = ar.make(bytes, 0, 1);
                std::memcpy(cp->p, packed->p, bytes);
                pb = cp->p;
            } else {
                pb_good = owned_ok;
            }
            break;
    }
    ar.snapshot_all();
    sv = check_status(st = anvil_gemm_plan_execute(plan, alpha, Ab ? reinterpret_cast<const float *>(Ab->p) : nullptr,
                                                   pb, beta, Cb ? reinterpret_cast<float *>(Cb->p) : nullptr));
    if (M > 0 && N > 0) {
        if (!pb_good || !Cb || (K > 0 && alpha != 0.0f && !Ab))
            CHECK(sv != anvil_success, "execute: missing or foreign argument accepted");
        else
            check_not_argument_error(st);
    }
    if (sv != anvil_success || !Cb) {
        CHECK(ar.unchanged_except(nullptr), "failed execute wrote");
    } else {
        CHECK(ar.unchanged_except(Cb), "execute wrote an input");
        CHECK(unchanged_outside(*Cb, C), "execute wrote outside C's footprint");
    }
    CHECK(ok(anvil_gemm_plan_destroy(plan)));
}

// ------------------------------------------------------------ matmul

void fuzz_matmul(fz::reader &r) {
    anvil_matmul_desc_t d{};
    int a, b, c;
    decode_types(r, false, &a, &b, &c);
    set_enum(&d.a_dt, a);
    set_enum(&d.b_dt, b);
    set_enum(&d.c_dt, c);
    d.transa = trans_char(r);
    d.transb = trans_char(r);
    d.M = r.size();
    d.N = r.size();
    d.K = r.size();
    bool tA = false, tB = false;
    const bool ta_ok = parse_trans(d.transa, &tA), tb_ok = parse_trans(d.transb, &tB);
    const bool chars_ok = ta_ok && tb_ok;
    const int64_t ea = dt_bytes(a), eb = dt_bytes(b), ec = dt_bytes(c);
    mat A{tA ? d.K : d.M, tA ? d.M : d.K, 0, std::max<int64_t>(ea, 1)};
    mat B{tB ? d.N : d.K, tB ? d.K : d.N, 0, std::max<int64_t>(eb, 1)};
    mat C{d.M, d.N, 0, std::max<int64_t>(ec, 1)};
    d.lda = A.ld = r.ld(A.cols);
    d.ldb = B.ld = r.ld(B.cols);
    d.ldc = C.ld = r.ld(C.cols);
    d.a_zero_point = zero_point(r);
    d.b_zero_point = zero_point(r);
    d.c_zero_point = zero_point(r);
    const uint8_t scale_mode = r.u8(), bias_mode = r.u8();
    post_ops po;
    decode_post_ops(r, d.N, &po);
    const uint8_t create_flags = r.u8(), pack_flags = r.u8(), exec_flags = r.u8(),
                  bin_nulls = r.u8();
    const uint64_t seed = r.u8();
    g_ctx = fmt("matmul(dt=%d,%d,%d transa=0x%02x transb=0x%02x M=%lld N=%lld K=%lld lda=%lld "
                "ldb=%lld ldc=%lld zp=%d,%d,%d scale_mode=%d bias_mode=%d create=0x%x pack=0x%x "
                "exec=0x%x bin_nulls=0x%x) ",
                a, b, c, uint8_t(d.transa), uint8_t(d.transb), (long long)d.M, (long long)d.N,
                (long long)d.K, (long long)d.lda, (long long)d.ldb, (long long)d.ldc,
                d.a_zero_point, d.b_zero_point, d.c_zero_point, scale_mode % 5, bias_mode % 3,
                create_flags, pack_flags, exec_flags, bin_nulls) +
            post_ops_str(po);

    arena ar;
    const bool n_small = d.N >= 0 && d.N <= kSmall / 4;
    // Scales: 0 none, 1 one value, 2 per column, 3 per column with NULL,
    // 4 one value with scales_per_n = 0 but a weird value.
    switch (scale_mode % 5) {
        case 1: d.scales = reinterpret_cast<float *>(ar.make(4, seed + 20)->p); break;
        case 2:
            d.scales_per_n = 1;
            if (n_small) d.scales = reinterpret_cast<float *>(ar.make(size_t(std::max<int64_t>(d.N, 1)) * 4, seed + 21)->p);
            break;
        case 3: d.scales_per_n = 1; break;
        case 4: {
            float *s = reinterpret_cast<float *>(ar.make(4, seed + 22)->p);
            *s = std::numeric_limits<float>::quiet_NaN();
            d.scales = s;
            d.scales_per_n = 0;
            break;
        }
        default: break;
    }
    if (bias_mode % 3 == 1 && n_small)
        d.bias = reinterpret_cast<float *>(ar.make(size_t(std::max<int64_t>(d.N, 1)) * 4, seed + 23)->p);
    // anvil gets heap copies of the descriptor and post-ops (ASan sees
    // reads past them), clobbered after create: it must have copied them.
    std::vector<anvil_post_op_t> ops_copy = po.ops;
    d.num_post_ops = po.num;
    d.post_ops = po.null_array ? nullptr : ops_copy.data();
    auto dheap = std::make_unique<anvil_matmul_desc_t>(d);

    const bool must_reject = (create_flags & 3) != 0 || !matmul_types_supported(a, b, c) ||
                             !chars_ok || d.M < 0 || d.N < 0 || d.K < 0 || !ld_ok(A) ||
                             !ld_ok(B) || !ld_ok(C) || post_ops_must_reject(po, d.N);
    const anvil_matmul_t canary = reinterpret_cast<anvil_matmul_t>(uintptr_t(0xca11ab1e0));
    anvil_matmul_t mm = canary;
    anvil_status_t st = anvil_matmul_create((create_flags & 1) ? nullptr : &mm,
                                            (create_flags & 2) ? nullptr : dheap.get());
    int sv = check_status(st);
    if (must_reject) CHECK(sv != anvil_success, "invalid matmul descriptor accepted");
    if (sv != anvil_success) {
        CHECK(mm == canary, "failed create wrote the handle");
        return;
    }
    CHECK(mm != canary && mm != nullptr);
    std::memset(dheap.get(), 0xee, sizeof(*dheap));
    std::memset(ops_copy.data(), 0xee, ops_copy.size() * sizeof(anvil_post_op_t));
    for (auto &bb : ar.bufs) std::memset(bb->p, 0xee, bb->n);

    size_t bytes = 777;
    CHECK(!ok(anvil_matmul_packed_weights_size(mm, nullptr)));
    CHECK(ok(anvil_matmul_packed_weights_size(mm, &bytes)));
    const int64_t b_span = span(B);
    buffer *Bb = (!(pack_flags & 1) && small(b_span)) ? ar.make(size_t(b_span), seed + 1) : nullptr;
    buffer *packed = nullptr;
    bool packed_ok = false;
    if (int64_t(bytes) <= kPackedMax) {
        packed = ar.make(bytes, seed + 2, (pack_flags >> 1) & 3);  // 0: aligned
        if (!(pack_flags & 8)) {
            void *dst = (pack_flags & 16) ? nullptr : packed->p;
            ar.snapshot_all();
            sv = check_status(st = anvil_matmul_pack_weights(mm, Bb ? Bb->p : nullptr, dst));
            const bool aligned = reinterpret_cast<uintptr_t>(packed->p) % 4 == 0;
            if (!dst || (d.K > 0 && d.N > 0 && !Bb) || !aligned)
                CHECK(sv != anvil_success, "pack: NULL or misaligned argument accepted");
            else
                check_not_argument_error(st);
            if (sv != anvil_success) CHECK(ar.unchanged_except(nullptr), "failed pack wrote");
            packed_ok = sv == anvil_success;
        }
    }

    const int64_t a_span = span(A), c_span = span(C);
    buffer *Ab = (!(exec_flags & 1) && small(a_span)) ? ar.make(size_t(a_span), seed + 3) : nullptr;
    buffer *Cb = (!(exec_flags & 2) && small(c_span)) ? ar.make(size_t(c_span), seed + 4) : nullptr;
    binary_srcs bs;
    make_binary_srcs(po, d.M, d.N, bin_nulls, ar, seed, &bs);
    const bool srcs_null = exec_flags & 4;
    const void *pk = nullptr;
    bool pk_good = false;
    switch ((exec_flags >> 3) % 4) {
        case 0: pk = packed_ok ? packed->p : nullptr; pk_good = packed_ok; break;
        case 1: break;  // NULL
        case 2:
            if (int64_t(bytes) <= kPackedMax) pk = ar.make(bytes, seed + 5)->p;
            break;
        case 3:  // misaligned copy
            if (packed_ok) {
                buffer *cp = ar.make(bytes, 0, 1);
                std::memcpy(cp->p, packed->p, bytes);
                pk = cp->p;
            }
            break;
    }
    ar.snapshot_all();
    sv = check_status(st = anvil_matmul_execute(mm, Ab ? Ab->p : nullptr, pk, Cb ? Cb->p : nullptr,
                                                srcs_null ? nullptr : bs.ptrs.data()));
    if (d.M > 0 && d.N > 0) {
        if (!Cb || (d.K > 0 && !Ab) || !pk_good || (bs.count > 0 && (srcs_null || !bs.all)))
            CHECK(sv != anvil_success, "execute: missing or foreign argument accepted");
        else
            check_not_argument_error(st);
    }
    if (sv != anvil_success || !Cb) {
        CHECK(ar.unchanged_except(nullptr), "failed execute wrote");
    } else {
        CHECK(ar.unchanged_except(Cb), "execute wrote an input");
        CHECK(unchanged_outside(*Cb, C), "execute wrote outside C's footprint");
    }
    CHECK(ok(anvil_matmul_destroy(mm)));
}

// ------------------------------------------------------------ conv2d

void fuzz_conv(fz::reader &r) {
    anvil_conv2d_desc_t d{};
    int s, w, o;
    decode_types(r, true, &s, &w, &o);
    set_enum(&d.src_dt, s);
    set_enum(&d.wei_dt, w);
    set_enum(&d.dst_dt, o);
    const uint8_t gmode = r.u8();
    int64_t *fields[] = {&d.N,  &d.G,  &d.IC,    &d.IH,    &d.IW,    &d.OC,    &d.OH, &d.OW, &d.KH,
                         &d.KW, &d.SH, &d.SW, &d.pad_t, &d.pad_l, &d.pad_b, &d.pad_r, &d.DH, &d.DW};
    const bool hostile = gmode >= 128;
    if (!hostile) {
        // Small and mostly valid: channels per group, groups, image, kernel.
        d.N = r.range(0, 2);
        const int64_t icg = r.range(1, 8), ocg = r.range(1, 8);
        const uint8_t gsel = r.u8();
        d.G = gsel % 4 == 3 ? r.range(1, 16) : gsel % 4 + 1;  // 1, 2, 3 or depthwise
        if (gsel % 4 == 3) {
            d.IC = d.OC = d.G;
        } else {
            d.IC = icg * d.G;
            d.OC = ocg * d.G;
        }
        d.IH = r.range(1, 9);
        d.IW = r.range(1, 9);
        d.KH = r.range(1, 3);
        d.KW = r.range(1, 3);
        d.SH = r.range(1, 2);
        d.SW = r.range(1, 2);
        d.pad_t = r.range(0, 2);
        d.pad_l = r.range(0, 2);
        d.pad_b = r.range(0, 2);
        d.pad_r = r.range(0, 2);
        d.DH = r.range(0, 1);
        d.DW = r.range(0, 1);
        const int64_t nh = d.IH + d.pad_t + d.pad_b - ((d.KH - 1) * (d.DH + 1) + 1);
        const int64_t nw = d.IW + d.pad_l + d.pad_r - ((d.KW - 1) * (d.DW + 1) + 1);
        const uint8_t off = r.u8();
        d.OH = nh / d.SH + 1 + (off % 8 == 7 ? 1 : 0);
        d.OW = nw / d.SW + 1 - (off % 8 == 6 ? 1 : 0);
    } else {
        for (int64_t *f : fields) *f = r.size();
        // Often the right output size, so that the rest gets checked.
        if (gmode & 1) {
            const __int128 nh = __int128(d.IH) + d.pad_t + d.pad_b - ((__int128(d.KH) - 1) * (__int128(d.DH) + 1) + 1);
            const __int128 nw = __int128(d.IW) + d.pad_l + d.pad_r - ((__int128(d.KW) - 1) * (__int128(d.DW) + 1) + 1);
            if (d.SH > 0 && d.SW > 0 && nh >= 0 && nw >= 0 && nh < kI64Max && nw < kI64Max) {
                d.OH = int64_t(nh / d.SH + 1);
                d.OW = int64_t(nw / d.SW + 1);
            }
        }
    }
    d.src_zero_point = zero_point(r);
    d.dst_zero_point = zero_point(r);
    if (gmode % 4 != 0 && !hostile) {  // small mode: usually valid zero points
        d.src_zero_point = s == anvil_dt_u8 ? d.src_zero_point & 255 : s == anvil_dt_s8 ? int8_t(d.src_zero_point) : 0;
        if (s != anvil_dt_u8 && s != anvil_dt_s8) d.dst_zero_point = 0;
    }
    const uint8_t scale_mode = r.u8();
    post_ops po;
    decode_post_ops(r, d.OC, &po);
    const uint8_t create_flags = r.u8(), layout_b = r.u8(), pack_flags = r.u8(),
                  exec_flags = r.u8(), bin_nulls = r.u8();
    const uint64_t seed = r.u8();
    const int layout = layout_b < 250 ? (layout_b % 8 < 6 ? layout_b % 2 : layout_b % 8 - 4) : r.i32();
    std::string g = fmt("conv2d(dt=%d,%d,%d", s, w, o);
    const char *names[] = {"N", "G", "IC", "IH", "IW", "OC", "OH", "OW", "KH", "KW", "SH", "SW",
                           "pt", "pl", "pb", "pr", "DH", "DW"};
    for (int i = 0; i < 18; ++i) g += fmt(" %s=%lld", names[i], (long long)*fields[i]);
    g_ctx = g + fmt(" zp=%d,%d scale_mode=%d create=0x%x layout=%d pack=0x%x exec=0x%x "
                    "bin_nulls=0x%x) ",
                    d.src_zero_point, d.dst_zero_point, scale_mode % 4, create_flags, layout,
                    pack_flags, exec_flags, bin_nulls) +
            post_ops_str(po);

    arena ar;
    const bool oc_small = d.OC >= 0 && d.OC <= kSmall / 4;
    switch (scale_mode % 4) {
        case 1: d.scales = reinterpret_cast<float *>(ar.make(4, seed + 20)->p); break;
        case 2:
            d.scales_per_oc = 1;
            if (oc_small) d.scales = reinterpret_cast<float *>(ar.make(size_t(std::max<int64_t>(d.OC, 1)) * 4, seed + 21)->p);
            break;
        case 3: d.scales_per_oc = 1; break;
        default: break;
    }
    std::vector<anvil_post_op_t> ops_copy = po.ops;
    d.num_post_ops = po.num;
    d.post_ops = po.null_array ? nullptr : ops_copy.data();
    auto dheap = std::make_unique<anvil_conv2d_desc_t>(d);

    // The header's refusals.
    bool must_reject = (create_flags & 3) != 0 || !conv_types_supported(s, w, o) ||
                       post_ops_must_reject(po, d.OC);
    for (int64_t *f : fields)
        if (*f < 0) must_reject = true;
    if (d.G < 1 || d.SH < 1 || d.SW < 1) must_reject = true;
    bool zero_dim = false;
    for (int64_t v : {d.IC, d.IH, d.IW, d.OC, d.OH, d.OW, d.KH, d.KW}) zero_dim |= v == 0;
    if (!must_reject && (d.IC % d.G != 0 || d.OC % d.G != 0)) must_reject = true;
    if (!must_reject && !zero_dim) {
        const __int128 nh = __int128(d.IH) + d.pad_t + d.pad_b - ((__int128(d.KH) - 1) * (__int128(d.DH) + 1) + 1);
        const __int128 nw = __int128(d.IW) + d.pad_l + d.pad_r - ((__int128(d.KW) - 1) * (__int128(d.DW) + 1) + 1);
        if (nh < 0 || nw < 0 || d.OH != nh / d.SH + 1 || d.OW != nw / d.SW + 1) must_reject = true;
    }

    const anvil_conv2d_t canary = reinterpret_cast<anvil_conv2d_t>(uintptr_t(0xc0de0));
    anvil_conv2d_t cv = canary;
    anvil_status_t st = anvil_conv2d_create((create_flags & 1) ? nullptr : &cv,
                                            (create_flags & 2) ? nullptr : dheap.get());
    int sv = check_status(st);
    if (must_reject) CHECK(sv != anvil_success, "invalid conv2d descriptor accepted");
    if (sv != anvil_success) {
        CHECK(cv == canary, "failed create wrote the handle");
        return;
    }
    CHECK(cv != canary && cv != nullptr);
    std::memset(dheap.get(), 0xee, sizeof(*dheap));
    std::memset(ops_copy.data(), 0xee, ops_copy.size() * sizeof(anvil_post_op_t));
    for (auto &bb : ar.bufs) std::memset(bb->p, 0xee, bb->n);

    size_t bytes = 777;
    CHECK(!ok(anvil_conv2d_packed_weights_size(cv, nullptr)));
    CHECK(ok(anvil_conv2d_packed_weights_size(cv, &bytes)));
    const int64_t es_s = dt_bytes(s), es_w = dt_bytes(w), es_d = dt_bytes(o);
    const int64_t pixels = prod({d.N, d.OH, d.OW});
    const int64_t wei_bytes = bytes_of(prod({d.OC, d.IC / d.G, d.KH, d.KW}), es_w);
    buffer *Wb = (!(pack_flags & 1) && small(wei_bytes)) ? ar.make(size_t(wei_bytes), seed + 1) : nullptr;
    buffer *packed = nullptr;
    bool packed_ok = false;
    if (int64_t(bytes) <= kPackedMax) {
        packed = ar.make(bytes, seed + 2, (pack_flags >> 1) & 3);
        if (!(pack_flags & 8)) {
            void *dst = (pack_flags & 16) ? nullptr : packed->p;
            ar.snapshot_all();
            sv = check_status(st = fz_conv2d_pack_weights(cv, Wb ? Wb->p : nullptr, layout, dst));
            const bool aligned = reinterpret_cast<uintptr_t>(packed->p) % 4 == 0;
            if (!dst || !Wb || !aligned || (layout != anvil_conv_weights_oihw && layout != anvil_conv_weights_hwio))
                CHECK(sv != anvil_success, "pack: NULL, misaligned or bad layout accepted");
            else
                check_not_argument_error(st);
            if (sv != anvil_success) CHECK(ar.unchanged_except(nullptr), "failed pack wrote");
            packed_ok = sv == anvil_success;
        }
    }

    const int64_t src_bytes = bytes_of(prod({d.N, d.IH, d.IW, d.IC}), es_s);
    const int64_t dst_bytes = bytes_of(prod({pixels, d.OC}), es_d);
    buffer *Sb = (!(exec_flags & 1) && small(src_bytes)) ? ar.make(size_t(src_bytes), seed + 3) : nullptr;
    buffer *Db = (!(exec_flags & 2) && small(dst_bytes)) ? ar.make(size_t(dst_bytes), seed + 4) : nullptr;
    const float *bias = nullptr;
    if ((exec_flags & 64) && oc_small)
        bias = reinterpret_cast<const float *>(ar.make(size_t(d.OC) * 4, seed + 6)->p);
    binary_srcs bs;
    make_binary_srcs(po, pixels, d.OC, bin_nulls, ar, seed, &bs);
    const bool srcs_null = exec_flags & 4;
    const void *pk = nullptr;
    bool pk_good = false;
    switch ((exec_flags >> 3) % 4) {
        case 0: pk = packed_ok ? packed->p : nullptr; pk_good = packed_ok; break;
        case 1: break;
        case 2:
            if (int64_t(bytes) <= kPackedMax) pk = ar.make(bytes, seed + 5)->p;
            break;
        case 3:
            if (packed_ok) {
                buffer *cp = ar.make(bytes, 0, 1);
                std::memcpy(cp->p, packed->p, bytes);
                pk = cp->p;
            }
            break;
    }
    ar.snapshot_all();
    sv = check_status(st = anvil_conv2d_execute(cv, Sb ? Sb->p : nullptr, pk, bias, Db ? Db->p : nullptr,
                                                srcs_null ? nullptr : bs.ptrs.data()));
    if (d.N > 0) {
        if (!Sb || !Db || !pk_good || (bs.count > 0 && (srcs_null || !bs.all)))
            CHECK(sv != anvil_success, "execute: missing or foreign argument accepted");
        else
            check_not_argument_error(st);
    }
    if (sv != anvil_success || !Db)
        CHECK(ar.unchanged_except(nullptr), "failed execute wrote");
    else
        CHECK(ar.unchanged_except(Db), "execute wrote an input");
    CHECK(ok(anvil_conv2d_destroy(cv)));
}

// ------------------------------------------------------------ small calls

void dummy_parallel_for(void *, int64_t, anvil_parallel_body_fn, void *) { std::abort(); }

void fuzz_misc(fz::reader &r) {
    const uint8_t sub = r.u8();
    switch (sub % 10) {
        case 0: {  // status strings: never NULL
            const int v = enum_int(r, 12);
            g_ctx = fmt("anvil_status_str(%d)", v);
            const char *s = fz_status_str(v);
            CHECK(s != nullptr && *s);
            break;
        }
        case 1: {  // ISA names: NULL exactly for unknown values
            const int v = enum_int(r, 6);
            g_ctx = fmt("anvil_isa_name(%d)", v);
            const char *s = fz_isa_name(v);
            CHECK((s != nullptr) == (v >= anvil_isa_scalar && v <= anvil_isa_amx));
            break;
        }
        case 2:
        case 3: {  // conversions
            const bool to_bf16 = sub % 10 == 2;
            const int64_t n = r.size();
            const uint8_t nulls = r.u8();
            const uint64_t seed = r.u8();
            g_ctx = fmt("anvil_convert_%s(n=%lld nulls=0x%x)", to_bf16 ? "f32_to_bf16" : "bf16_to_f32",
                        (long long)n, nulls);
            arena ar;
            const int64_t sb = bytes_of(n, to_bf16 ? 4 : 2), db = bytes_of(n, to_bf16 ? 2 : 4);
            const bool valid = n >= 0;
            buffer *src = nullptr, *dst = nullptr;
            if (!(nulls & 1) && (!valid || small(sb))) src = ar.make(valid ? size_t(sb) : 64, seed);
            if (!(nulls & 2) && (!valid || small(db))) dst = ar.make(valid ? size_t(db) : 64, seed + 1);
            const anvil_status_t st =
                to_bf16 ? anvil_convert_f32_to_bf16(src ? reinterpret_cast<const float *>(src->p) : nullptr,
                                                    dst ? reinterpret_cast<anvil_bf16_t *>(dst->p) : nullptr, n)
                        : anvil_convert_bf16_to_f32(src ? reinterpret_cast<const anvil_bf16_t *>(src->p) : nullptr,
                                                    dst ? reinterpret_cast<float *>(dst->p) : nullptr, n);
            const int sv = check_status(st);
            if (!valid || (n > 0 && (!src || !dst))) CHECK(sv != anvil_success);
            if (valid && src && dst) CHECK(sv == anvil_success);
            if (sv != anvil_success || !dst) {
                CHECK(ar.unchanged_except(nullptr));
            } else {
                CHECK(ar.unchanged_except(dst));
                for (int64_t i = 0; i < n; ++i) {
                    if (to_bf16) {
                        float f;
                        uint16_t h;
                        std::memcpy(&f, src->p + 4 * i, 4);
                        std::memcpy(&h, dst->p + 2 * i, 2);
                        CHECK(h == anvil::lowp::f32_to_bf16(f), "element %lld", (long long)i);
                    } else {
                        CHECK(std::memcmp(dst->p + 4 * i + 2, src->p + 2 * i, 2) == 0 &&
                                  dst->p[4 * i] == 0 && dst->p[4 * i + 1] == 0,
                              "element %lld", (long long)i);
                    }
                }
            }
            break;
        }
        case 4: {  // explain
            const char ta = trans_char(r), tb = trans_char(r);
            const int64_t M = r.size(), N = r.size(), K = r.size();
            const uint8_t mode = r.u8();
            const size_t size = mode % 4 == 1 ? r.range(1, 255) : mode % 4 == 2 ? 1 + r.u16() % 4096 : 0;
            const bool buf_null = mode % 4 == 3 || (mode & 8);
            const bool needed_null = mode & 4;
            // mode & 16: anvil_explain_gemm with a type pair (f32 x f32 otherwise).
            const bool typed = mode & 16;
            int a_dt = anvil_dt_f32, b_dt = anvil_dt_f32, c_dt = 0;
            if (typed) decode_types(r, false, &a_dt, &b_dt, &c_dt);
            g_ctx = fmt("%s(a_dt=%d b_dt=%d transa=0x%02x transb=0x%02x M=%lld N=%lld K=%lld size=%zu "
                        "buf%s needed%s)",
                        typed ? "anvil_explain_gemm" : "anvil_explain_sgemm", a_dt, b_dt, uint8_t(ta),
                        uint8_t(tb), (long long)M, (long long)N, (long long)K, size,
                        buf_null ? "=NULL" : "", needed_null ? "=NULL" : "");
            bool t1, t2;
            const bool types_ok = (a_dt == anvil_dt_f32 && b_dt == anvil_dt_f32) ||
                                  (a_dt == anvil_dt_bf16 && b_dt == anvil_dt_bf16) ||
                                  ((a_dt == anvil_dt_u8 || a_dt == anvil_dt_s8) && b_dt == anvil_dt_s8);
            const bool must_reject = !parse_trans(ta, &t1) || !parse_trans(tb, &t2) || M < 0 ||
                                     N < 0 || K < 0 || (buf_null && size > 0) || !types_ok;
            arena ar;
            buffer *buf = buf_null ? nullptr : ar.make(size, 9);
            buffer *need = needed_null ? nullptr : ar.make(sizeof(size_t), 10);
            char *bp = buf ? reinterpret_cast<char *>(buf->p) : nullptr;
            size_t *np = need ? reinterpret_cast<size_t *>(need->p) : nullptr;
            const anvil_status_t st = typed ? fz_explain_gemm(a_dt, b_dt, ta, tb, M, N, K, bp, size, np)
                                            : anvil_explain_sgemm(ta, tb, M, N, K, bp, size, np);
            const int sv = check_status(st);
            if (must_reject) CHECK(sv != anvil_success);
            if (sv != anvil_success) {
                CHECK(ar.unchanged_except(nullptr));
            } else if (buf && size > 0) {
                const char *b = reinterpret_cast<const char *>(buf->p);
                const size_t len = strnlen(b, size);
                CHECK(len < size, "explain: no NUL within size");
                for (size_t i = len + 1; i < size; ++i) CHECK(buf->p[i] == buf->snap[i], "explain wrote past the NUL");
                if (need) {
                    size_t nd;
                    std::memcpy(&nd, need->p, sizeof(nd));
                    CHECK(nd >= 1 && len == std::min(size - 1, nd - 1), "explain: needed %zu, len %zu", nd, len);
                }
            }
            break;
        }
        case 5: {  // bad thread counts are refused, the count stays >= 1
            const uint8_t nb = r.u8();
            const int n = nb >= 128 ? std::numeric_limits<int>::min() : -int(nb % 4);
            g_ctx = fmt("anvil_set_num_threads(%d)", n);
            const int before = anvil_get_num_threads();
            CHECK(!ok(anvil_set_num_threads(n)));
            CHECK(anvil_get_num_threads() == before && before >= 1);
            const int nt = -int(r.u8() % 3);
            g_ctx = fmt("anvil_set_threadpool(fn, ctx, %d)", nt);
            CHECK(!ok(anvil_set_threadpool(dummy_parallel_for, nullptr, nt)));
            break;
        }
        case 6: {  // cache capacity >= 1; stats
            int64_t c = r.size();
            if (c > 0) c = -c;
            g_ctx = fmt("anvil_set_kernel_cache_capacity(%lld)", (long long)c);
            CHECK(!ok(anvil_set_kernel_cache_capacity(c)));
            g_ctx = "anvil_get_kernel_cache_stats";
            CHECK(!ok(anvil_get_kernel_cache_stats(nullptr)));
            anvil_cache_stats_t s;
            CHECK(ok(anvil_get_kernel_cache_stats(&s)));
            CHECK(s.hits >= 0 && s.misses >= 0 && s.evictions >= 0 && s.size >= 0 &&
                  s.capacity >= 1 && s.size <= s.capacity && s.generation_seconds >= 0);
            break;
        }
        case 7: {  // NULL handles
            g_ctx = "NULL handles";
            size_t bytes = 4242;
            float f[4] = {};
            const void *const srcs[1] = {f};
            CHECK(!ok(anvil_gemm_plan_packed_b_size(nullptr, &bytes)) && bytes == 4242);
            CHECK(!ok(anvil_gemm_plan_pack_b(nullptr, f, f)));
            CHECK(!ok(anvil_gemm_plan_pack_b_owned(nullptr, f)));
            CHECK(!ok(anvil_gemm_plan_execute(nullptr, 1.0f, f, f, 0.0f, f)));
            CHECK(!ok(anvil_matmul_packed_weights_size(nullptr, &bytes)) && bytes == 4242);
            CHECK(!ok(anvil_matmul_pack_weights(nullptr, f, f)));
            CHECK(!ok(anvil_matmul_execute(nullptr, f, f, f, srcs)));
            CHECK(!ok(anvil_matmul_destroy(nullptr)));
            CHECK(!ok(anvil_conv2d_packed_weights_size(nullptr, &bytes)) && bytes == 4242);
            CHECK(!ok(fz_conv2d_pack_weights(nullptr, f, 0, f)));
            CHECK(!ok(anvil_conv2d_execute(nullptr, f, f, f, f, srcs)));
            CHECK(!ok(anvil_conv2d_destroy(nullptr)));
            CHECK(f[0] == 0 && f[1] == 0 && f[2] == 0 && f[3] == 0);
            check_status(anvil_gemm_plan_destroy(nullptr));
            break;
        }
        case 8: {  // an ISA value outside the enum is refused, the tier unchanged
            const uint8_t b = r.u8();
            const int v = b < 128 ? anvil_isa_amx + 1 + b : b < 250 ? -1 - (b - 128) : r.i32();
            if (v >= anvil_isa_scalar && v <= anvil_isa_amx) break;  // would change the cap
            g_ctx = fmt("anvil_set_max_isa(%d)", v);
            const anvil_isa_t before = anvil_get_effective_isa();
            CHECK(!ok(fz_set_max_isa(v)));
            CHECK(ival(anvil_get_effective_isa()) == ival(before));
            break;
        }
        case 9: fuzz_batch(r); break;
    }
}

void print_ctx() { std::fprintf(stderr, "\nfuzz_api_args: the call was: %s\n", g_ctx.c_str()); }

}  // namespace

// Under the replay driver a sanitizer report ends with the decoded call.
// (libFuzzer installs its own death callback after this one, to save the
// crashing input; replay that file with fuzz_replay_api_args to see it.)
extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    fz::on_death_or_timeout(print_ctx);
    const char *t = std::getenv("ANVIL_FUZZ_TRACE");
    g_trace = t && *t && *t != '0';
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz::reader r(data, size);
    for (int ops = 0; ops < 8 && !r.empty(); ++ops) {
        const uint8_t op = r.u8();
        switch (op % 8) {
            case 0: fuzz_gemm(r, gk::f32); break;
            case 1: fuzz_gemm(r, gk::bf16); break;
            case 2: fuzz_gemm(r, gk::u8); break;
            case 3: fuzz_gemm(r, gk::s8); break;
            case 4: fuzz_plan(r); break;
            case 5: fuzz_matmul(r); break;
            case 6: fuzz_conv(r); break;
            default: fuzz_misc(r); break;
        }
    }
    return 0;
}
