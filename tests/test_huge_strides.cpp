// Leading dimensions and batch strides far larger than the dimensions, so
// that element offsets pass 2^31 and byte offsets 2^32: every address
// computation (C++ drivers, packing, JIT kernels) must be 64-bit.  The
// operands live in sparse anonymous mappings (MAP_NORESERVE): only the
// few pages the rows touch take memory.  Where the system refuses such a
// mapping (no overcommit) a smaller stride is tried, then the case is
// skipped with a message.  Integer data: every result is exact.
#include <doctest/doctest.h>
#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "lowp_util.h"
#include "test_util.h"

namespace {

// A row-major matrix of `rows` x `cols` elements of T, row stride `ld`
// elements, at the start of its own sparse mapping.
template <typename T>
class sparse_matrix {
public:
    sparse_matrix(int64_t rows, int64_t cols, int64_t ld) : rows_(rows), cols_(cols), ld_(ld) {
        bytes_ = size_t(((rows - 1) * ld + cols) * int64_t(sizeof(T)));
        void *p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p != MAP_FAILED) p_ = static_cast<T *>(p);
    }
    ~sparse_matrix() {
        if (p_) munmap(p_, bytes_);
    }
    sparse_matrix(const sparse_matrix &) = delete;
    sparse_matrix &operator=(const sparse_matrix &) = delete;
    bool ok() const { return p_ != nullptr; }
    T *data() const { return p_; }
    int64_t ld() const { return ld_; }
    T &at(int64_t r, int64_t c) const { return p_[r * ld_ + c]; }

private:
    int64_t rows_, cols_, ld_;
    size_t bytes_ = 0;
    T *p_ = nullptr;
};

// A dense matrix (ld = cols) in an ordinary vector.
template <typename T>
struct dense_matrix {
    int64_t rows, cols;
    std::vector<T> v;
    dense_matrix(int64_t r, int64_t c) : rows(r), cols(c), v(size_t(r * c)) {}
    T *data() { return v.data(); }
    T &at(int64_t r, int64_t c) { return v[size_t(r * cols + c)]; }
};

// Strides to try, largest first: element offsets of row 2 past 2^31 (for
// every element size), then byte offsets of row 1 past 2^31.
template <typename T>
std::vector<int64_t> huge_lds(int64_t cols) {
    std::vector<int64_t> v = {(int64_t(1) << 30) + 3};
    if (sizeof(T) > 1) v.push_back((int64_t(2) << 30) / int64_t(sizeof(T)) + 5);
    for (auto &ld : v) ld = std::max(ld, cols);
    return v;
}

// Makes a sparse rows x cols matrix with the largest stride the system
// maps; nullptr (and a message) when none.
template <typename T>
std::unique_ptr<sparse_matrix<T>> make_sparse(int64_t rows, int64_t cols) {
    for (int64_t ld : huge_lds<T>(cols)) {
        auto m = std::make_unique<sparse_matrix<T>>(rows, cols, ld);
        if (m->ok()) return m;
    }
    MESSAGE("no sparse mapping for a ", rows, " x ", cols, " operand with a huge stride: skipped");
    return nullptr;
}

using lt::bf16_to_f32;
using lt::f32_to_bf16;

// The dimensions for a huge stride on `which` (A, B or C): the operand that
// carries it gets 3 rows (A 'N': M, A 'T': K, B 'N': K, B 'T': N, C: M),
// every other dimension 37 (a full tile and a tail).
void huge_dims(char which, char ta, char tb, int64_t *M, int64_t *N, int64_t *K) {
    *M = *N = *K = 37;
    if (which == 'A') *(ta == 'N' ? M : K) = 3;
    if (which == 'B') *(tb == 'N' ? K : N) = 3;
    if (which == 'C') *M = 3;
}

// Value readers and small-integer generators per element type.
double val_f32(float x) { return double(x); }
double val_bf16(uint16_t x) { return double(bf16_to_f32(x)); }
double val_u8(uint8_t x) { return double(x); }
double val_s8(int8_t x) { return double(x); }
float gen_f32(tu::rng &r) { return r.small_int(); }
uint16_t gen_bf16(tu::rng &r) { return lt::bf16_small_int(r); }
uint8_t gen_u8(tu::rng &r) { return uint8_t(r.ival(0, 255)); }
int8_t gen_s8(tu::rng &r) { return int8_t(r.ival(-128, 127)); }

// One GEMM problem C (M x N) = alpha op(A) op(B) + beta C with op(A) M x K
// and op(B) K x N stored as the transposes say; exactly one of A, B, C
// ("which") lives in a sparse mapping with a huge leading dimension, the
// others are dense.  `call` runs the library on (A, lda, B, ldb, C, ldc);
// the result is compared with a double-precision reference.
template <typename TA, typename TB, typename TC>
void check_huge_ld(char which, char ta, char tb, int64_t M, int64_t N, int64_t K, float alpha,
                   float beta, uint64_t seed,
                   const std::function<anvil_status_t(const TA *, int64_t, const TB *, int64_t, TC *, int64_t)> &call,
                   const std::function<double(TA)> &a_val, const std::function<double(TB)> &b_val,
                   const std::function<TA(tu::rng &)> &a_gen, const std::function<TB(tu::rng &)> &b_gen) {
    tu::rng r(seed);
    const int64_t a_rows = ta == 'N' ? M : K, a_cols = ta == 'N' ? K : M;
    const int64_t b_rows = tb == 'N' ? K : N, b_cols = tb == 'N' ? N : K;
    dense_matrix<TA> Ad(a_rows, a_cols);
    dense_matrix<TB> Bd(b_rows, b_cols);
    dense_matrix<TC> Cd(M, N);
    for (auto &x : Ad.v) x = a_gen(r);
    for (auto &x : Bd.v) x = b_gen(r);
    for (auto &x : Cd.v) x = TC(r.ival(-4, 4));
    const std::vector<TC> c_before = Cd.v;
    std::unique_ptr<sparse_matrix<TA>> As;
    std::unique_ptr<sparse_matrix<TB>> Bs;
    std::unique_ptr<sparse_matrix<TC>> Cs;
    const TA *A = Ad.data();
    const TB *B = Bd.data();
    TC *C = Cd.data();
    int64_t lda = a_cols, ldb = b_cols, ldc = N;
    if (which == 'A') {
        if (!(As = make_sparse<TA>(a_rows, a_cols))) return;
        for (int64_t i = 0; i < a_rows; ++i)
            for (int64_t j = 0; j < a_cols; ++j) As->at(i, j) = Ad.at(i, j);
        A = As->data();
        lda = As->ld();
    } else if (which == 'B') {
        if (!(Bs = make_sparse<TB>(b_rows, b_cols))) return;
        for (int64_t i = 0; i < b_rows; ++i)
            for (int64_t j = 0; j < b_cols; ++j) Bs->at(i, j) = Bd.at(i, j);
        B = Bs->data();
        ldb = Bs->ld();
    } else {
        if (!(Cs = make_sparse<TC>(M, N))) return;
        for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) Cs->at(i, j) = Cd.at(i, j);
        C = Cs->data();
        ldc = Cs->ld();
    }
    INFO("huge ", std::string(1, which), " ld ", (which == 'A' ? lda : which == 'B' ? ldb : ldc), " trans ", std::string{ta, tb}, " M ", M,
         " N ", N, " K ", K);
    REQUIRE(call(A, lda, B, ldb, C, ldc) == anvil_success);
    int bad = 0;
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
            double acc = 0;
            for (int64_t k = 0; k < K; ++k)
                acc += a_val(ta == 'N' ? Ad.at(i, k) : Ad.at(k, i)) * b_val(tb == 'N' ? Bd.at(k, j) : Bd.at(j, k));
            const double want = double(alpha) * acc + double(beta) * double(c_before[size_t(i * N + j)]);
            const double got = double(which == 'C' ? Cs->at(i, j) : C[i * ldc + j]);
            if (got != want && ++bad <= 3) MESSAGE("C(", i, ",", j, ") = ", got, " want ", want);
        }
    CHECK(bad == 0);
}

// f(which, ta, tb, M, N, K) for the huge stride on A, B and C in turn,
// in all four transpositions (huge_dims).
template <typename F>
void for_each_huge_operand(F f) {
    const char trans[4][2] = {{'N', 'N'}, {'N', 'T'}, {'T', 'N'}, {'T', 'T'}};
    for (const auto &t : trans)
        for (char which : {'A', 'B', 'C'}) {
            int64_t M, N, K;
            huge_dims(which, t[0], t[1], &M, &N, &K);
            f(which, t[0], t[1], M, N, K);
        }
}

}  // namespace

TEST_CASE("huge leading dimensions: sgemm, bf16 and int8 BLAS-style calls, 64-bit offsets") {
    uint64_t seed = 1;
    for_each_huge_operand([&](char which, char ta, char tb, int64_t M, int64_t N, int64_t K) {
        check_huge_ld<float, float, float>(
            which, ta, tb, M, N, K, 1.0f, 1.0f, seed++,
            [&](const float *A, int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc) {
                return anvil_sgemm(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, 1.0f, C, ldc);
            },
            val_f32, val_f32, gen_f32, gen_f32);
        check_huge_ld<uint16_t, uint16_t, float>(
            which, ta, tb, M, N, K, 1.0f, 1.0f, seed++,
            [&](const uint16_t *A, int64_t lda, const uint16_t *B, int64_t ldb, float *C, int64_t ldc) {
                return anvil_gemm_bf16bf16f32(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, 1.0f, C, ldc);
            },
            val_bf16, val_bf16, gen_bf16, gen_bf16);
        check_huge_ld<uint8_t, int8_t, int32_t>(
            which, ta, tb, M, N, K, 1.0f, 1.0f, seed++,
            [&](const uint8_t *A, int64_t lda, const int8_t *B, int64_t ldb, int32_t *C, int64_t ldc) {
                const int32_t co = 0;
                return anvil_gemm_u8s8s32(ta, tb, 'F', M, N, K, 1.0f, A, lda, 0, B, ldb, 0, 1.0f, C, ldc, &co);
            },
            val_u8, val_s8, gen_u8, gen_s8);
    });
}

TEST_CASE("huge leading dimensions: planned sgemm and the matmul handle, 64-bit offsets") {
    uint64_t seed = 100;
    for_each_huge_operand([&](char which, char ta, char tb, int64_t M, int64_t N, int64_t K) {
        check_huge_ld<float, float, float>(
            which, ta, tb, M, N, K, 1.0f, 1.0f, seed++,
            [&](const float *A, int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc) {
                anvil_gemm_plan_t p = nullptr;
                anvil_status_t st = anvil_gemm_plan_create(&p, ta, tb, M, N, K, lda, ldb, ldc);
                if (st != anvil_success) return st;
                size_t bytes = 0;
                REQUIRE(anvil_gemm_plan_packed_b_size(p, &bytes) == anvil_success);
                std::vector<float> packed(bytes / 4 + 1);
                REQUIRE(anvil_gemm_plan_pack_b(p, B, packed.data()) == anvil_success);
                st = anvil_gemm_plan_execute(p, 1.0f, A, packed.data(), 1.0f, C);
                anvil_gemm_plan_destroy(p);
                return st;
            },
            val_f32, val_f32, gen_f32, gen_f32);
        // The matmul handle (u8 x s8 -> s32, bf16 -> f32; B is read at
        // pack time); C is overwritten: beta = 0 in the reference.
        check_huge_ld<uint8_t, int8_t, int32_t>(
            which, ta, tb, M, N, K, 1.0f, 0.0f, seed++,
            [&](const uint8_t *A, int64_t lda, const int8_t *B, int64_t ldb, int32_t *C, int64_t ldc) {
                const anvil_matmul_desc_t d =
                    lt::matmul_desc(anvil_dt_u8, anvil_dt_s8, anvil_dt_s32, ta, tb, M, N, K, lda, ldb, ldc);
                return lt::packed_matmul(d, B).execute(A, C);
            },
            val_u8, val_s8, gen_u8, gen_s8);
        check_huge_ld<uint16_t, uint16_t, float>(
            which, ta, tb, M, N, K, 1.0f, 0.0f, seed++,
            [&](const uint16_t *A, int64_t lda, const uint16_t *B, int64_t ldb, float *C, int64_t ldc) {
                const anvil_matmul_desc_t d =
                    lt::matmul_desc(anvil_dt_bf16, anvil_dt_bf16, anvil_dt_f32, ta, tb, M, N, K, lda, ldb, ldc);
                return lt::packed_matmul(d, B).execute(A, C);
            },
            val_bf16, val_bf16, gen_bf16, gen_bf16);
    });
}

TEST_CASE("huge batch strides: sgemm, bf16 and u8s8s32 strided batches, 64-bit offsets") {
    // Three items, each M x N x K dense (ld = the row length), the items of
    // one operand (A, B or C in turn) a huge stride apart in a sparse
    // mapping (its "rows" are the items); the other operands' items packed.
    const int64_t M = 19, N = 21, K = 13, batch = 3;
    tu::rng r(77);
    for (char which : {'A', 'B', 'C'})
        for (int type = 0; type < 3; ++type) {
            INFO("huge stride of ", std::string(1, which), " type ", type);
            const int64_t esz_ab = type == 0 ? 4 : type == 1 ? 2 : 1;
            const int64_t a_item = M * K, b_item = K * N, c_item = M * N;
            // Operand storage: a sparse mapping for the huge one, else a vector.
            std::unique_ptr<sparse_matrix<uint8_t>> sp;
            std::vector<uint8_t> dense_a(size_t(batch * a_item * esz_ab)), dense_b(size_t(batch * b_item * esz_ab)),
                dense_c(size_t(batch * c_item * 4));
            int64_t stride_a = a_item, stride_b = b_item, stride_c = c_item;  // in elements
            uint8_t *pa = dense_a.data(), *pb = dense_b.data(), *pc = dense_c.data();
            const int64_t item_bytes = (which == 'A' ? a_item : which == 'B' ? b_item : c_item) *
                                       (which == 'C' ? 4 : esz_ab);
            const int64_t elem = which == 'C' ? 4 : esz_ab;
            // The stride in elements: past 2^31 elements (2^31 + 7 for 1-byte
            // items, 2^30 + 3 elements otherwise, as huge_lds does).
            int64_t stride = elem == 1 ? (int64_t(1) << 31) + 7 : (int64_t(1) << 30) + 3;
            sp = std::make_unique<sparse_matrix<uint8_t>>(batch, item_bytes, stride * elem);
            if (!sp->ok()) {
                stride = ((int64_t(2) << 30) + 5 * elem) / elem;
                sp = std::make_unique<sparse_matrix<uint8_t>>(batch, item_bytes, stride * elem);
            }
            if (!sp->ok()) {
                MESSAGE("no sparse mapping for a huge batch stride: skipped");
                continue;
            }
            if (which == 'A') pa = sp->data(), stride_a = stride;
            if (which == 'B') pb = sp->data(), stride_b = stride;
            if (which == 'C') pc = sp->data(), stride_c = stride;
            // Items: small integers in every type.
            auto put = [&](uint8_t *base, int64_t stride_el, int64_t item, int64_t esz, int kind) {
                for (int64_t b = 0; b < batch; ++b)
                    for (int64_t i = 0; i < item; ++i) {
                        uint8_t *p = base + (b * stride_el + i) * esz;
                        const int v = int(kind == 2 ? r.ival(0, 255) : kind == 3 ? r.ival(-128, 127) : r.ival(-4, 4));
                        if (esz == 4 && kind != 4) {
                            const float f = float(v);
                            std::memcpy(p, &f, 4);
                        } else if (esz == 4) {
                            const int32_t x = v;
                            std::memcpy(p, &x, 4);
                        } else if (esz == 2) {
                            const uint16_t h = f32_to_bf16(float(v));
                            std::memcpy(p, &h, 2);
                        } else {
                            *p = uint8_t(v);
                        }
                    }
            };
            put(pa, stride_a, a_item, esz_ab, type == 2 ? 2 : 0);
            put(pb, stride_b, b_item, esz_ab, type == 2 ? 3 : 0);
            put(pc, stride_c, c_item, 4, type == 2 ? 4 : 0);
            // The reference from the values as stored (before the call).
            auto val = [&](const uint8_t *base, int64_t stride_el, int64_t b, int64_t i, int64_t esz, int kind) {
                const uint8_t *p = base + (b * stride_el + i) * esz;
                if (esz == 4 && kind != 4) {
                    float f;
                    std::memcpy(&f, p, 4);
                    return double(f);
                }
                if (esz == 4) {
                    int32_t x;
                    std::memcpy(&x, p, 4);
                    return double(x);
                }
                if (esz == 2) {
                    uint16_t h;
                    std::memcpy(&h, p, 2);
                    return double(bf16_to_f32(h));
                }
                return kind == 3 ? double(int8_t(*p)) : double(*p);
            };
            std::vector<double> want(size_t(batch * c_item));
            for (int64_t b = 0; b < batch; ++b)
                for (int64_t i = 0; i < M; ++i)
                    for (int64_t j = 0; j < N; ++j) {
                        double acc = val(pc, stride_c, b, i * N + j, 4, type == 2 ? 4 : 0);  // beta = 1
                        for (int64_t k = 0; k < K; ++k)
                            acc += val(pa, stride_a, b, i * K + k, esz_ab, type == 2 ? 2 : 0) *
                                   val(pb, stride_b, b, k * N + j, esz_ab, type == 2 ? 3 : 0);
                        want[size_t(b * c_item + i * N + j)] = acc;
                    }
            anvil_status_t st;
            if (type == 0)
                st = anvil_sgemm_batch_strided('N', 'N', M, N, K, 1.0f, reinterpret_cast<const float *>(pa), K,
                                               stride_a, reinterpret_cast<const float *>(pb), N, stride_b, 1.0f,
                                               reinterpret_cast<float *>(pc), N, stride_c, batch);
            else if (type == 1)
                st = anvil_gemm_bf16bf16f32_batch_strided(
                    'N', 'N', M, N, K, 1.0f, reinterpret_cast<const uint16_t *>(pa), K, stride_a,
                    reinterpret_cast<const uint16_t *>(pb), N, stride_b, 1.0f, reinterpret_cast<float *>(pc), N,
                    stride_c, batch);
            else {
                const int32_t co = 0;
                st = anvil_gemm_u8s8s32_batch_strided('N', 'N', 'F', M, N, K, 1.0f, pa, K, stride_a, 0,
                                                      reinterpret_cast<const int8_t *>(pb), N, stride_b, 0, 1.0f,
                                                      reinterpret_cast<int32_t *>(pc), N, stride_c, &co, batch);
            }
            REQUIRE(st == anvil_success);
            int bad = 0;
            for (int64_t b = 0; b < batch; ++b)
                for (int64_t i = 0; i < c_item; ++i)
                    if (val(pc, stride_c, b, i, 4, type == 2 ? 4 : 0) != want[size_t(b * c_item + i)]) ++bad;
            CHECK(bad == 0);
        }
}

TEST_CASE("huge leading dimension of a binary post-op operand (matmul handle)") {
    // C = A B + R, R an M x N f32 / bf16 tensor whose rows are a huge stride
    // apart; int8 and bf16 products, f32 output (the fused and portable
    // epilogues both read R by row).
    const int64_t M = 3, N = 37, K = 29;
    tu::rng r(88);
    for (int type = 0; type < 2; ++type)
        for (anvil_data_type_t rdt : {anvil_dt_f32, anvil_dt_bf16}) {
            INFO("type ", type, " operand ", rdt == anvil_dt_f32 ? "f32" : "bf16");
            std::unique_ptr<sparse_matrix<uint16_t>> R16;
            std::unique_ptr<sparse_matrix<float>> R32;
            int64_t ld = 0;
            const void *rp = nullptr;
            if (rdt == anvil_dt_f32) {
                if (!(R32 = make_sparse<float>(M, N))) continue;
                ld = R32->ld();
                rp = R32->data();
            } else {
                if (!(R16 = make_sparse<uint16_t>(M, N))) continue;
                ld = R16->ld();
                rp = R16->data();
            }
            std::vector<double> rv(size_t(M * N));
            for (int64_t i = 0; i < M; ++i)
                for (int64_t j = 0; j < N; ++j) {
                    const float v = r.small_int();
                    rv[size_t(i * N + j)] = v;
                    if (R32) R32->at(i, j) = v;
                    else R16->at(i, j) = f32_to_bf16(v);
                }
            std::vector<uint8_t> A(size_t(M * K) * (type ? 2 : 1)), B(size_t(K * N) * (type ? 2 : 1));
            std::vector<double> av(size_t(M * K)), bv(size_t(K * N));
            for (size_t i = 0; i < av.size(); ++i) {
                const int x = type ? int(r.ival(-4, 4)) : int(r.ival(0, 255));
                av[i] = x;
                if (type) {
                    const uint16_t h = f32_to_bf16(float(x));
                    std::memcpy(&A[i * 2], &h, 2);
                } else {
                    A[i] = uint8_t(x);
                }
            }
            for (size_t i = 0; i < bv.size(); ++i) {
                const int x = type ? int(r.ival(-4, 4)) : int(r.ival(-128, 127));
                bv[i] = x;
                if (type) {
                    const uint16_t h = f32_to_bf16(float(x));
                    std::memcpy(&B[i * 2], &h, 2);
                } else {
                    B[i] = uint8_t(int8_t(x));
                }
            }
            const anvil_post_op_t add = lt::binary(anvil_binary_add, false, rdt, ld);
            anvil_matmul_desc_t d = lt::matmul_desc(type ? anvil_dt_bf16 : anvil_dt_u8,
                                                    type ? anvil_dt_bf16 : anvil_dt_s8, anvil_dt_f32, 'N', 'N', M,
                                                    N, K, K, N, N);
            d.num_post_ops = 1;
            d.post_ops = &add;
            std::vector<float> C(size_t(M * N));
            const void *bins[1] = {rp};
            REQUIRE(lt::packed_matmul(d, B.data()).execute(A.data(), C.data(), bins) == anvil_success);
            int bad = 0;
            for (int64_t i = 0; i < M; ++i)
                for (int64_t j = 0; j < N; ++j) {
                    double acc = rv[size_t(i * N + j)];
                    for (int64_t k = 0; k < K; ++k) acc += av[size_t(i * K + k)] * bv[size_t(k * N + j)];
                    if (double(C[size_t(i * N + j)]) != acc) ++bad;
                }
            CHECK(bad == 0);
        }
}
