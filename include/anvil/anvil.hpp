// anvil: header-only C++17 wrapper over the C API in anvil.h.
//
//  - Every call that fails throws anvil::error, which carries the
//    anvil_status_t and its anvil_status_str text.  Calls ending in _nothrow
//    (and gemm_plan's try_* members) return the status instead.
//  - anvil::gemm_plan owns an anvil_gemm_plan_t, anvil::smm an anvil_smm_t
//    and anvil::matmul an anvil_matmul_t: created in the constructor, destroyed in the
//    destructor, movable, not copyable.
//  - Nothing here adds state: the wrappers forward to the C functions, so
//    mixing this header with direct C calls is fine.
//
// Built without exceptions (-fno-exceptions), a failing throwing call prints
// the error to stderr and aborts.
#ifndef ANVIL_ANVIL_HPP
#define ANVIL_ANVIL_HPP

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "anvil/anvil.h"

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#include <stdexcept>
#define ANVIL_HPP_HAS_EXCEPTIONS 1
#else
#include <cstdio>
#include <cstdlib>
#define ANVIL_HPP_HAS_EXCEPTIONS 0
#endif

namespace anvil {

// ------------------------------------------------------------------ errors

#if ANVIL_HPP_HAS_EXCEPTIONS
class error : public std::runtime_error {
public:
    explicit error(anvil_status_t status, const char *where = nullptr)
        : std::runtime_error(make_message(status, where)), status_(status) {}

    anvil_status_t status() const noexcept { return status_; }
    const char *status_str() const noexcept { return anvil_status_str(status_); }

private:
    static std::string make_message(anvil_status_t status, const char *where) {
        std::string m;
        if (where && *where) {
            m += where;
            m += ": ";
        }
        m += anvil_status_str(status);
        m += " (anvil_status ";
        m += std::to_string(static_cast<int>(status));
        m += ")";
        return m;
    }

    anvil_status_t status_;
};
#endif

// Throws anvil::error(status) unless status is anvil_success.
inline void check(anvil_status_t status, const char *where = nullptr) {
    if (status == anvil_success) return;
#if ANVIL_HPP_HAS_EXCEPTIONS
    throw error(status, where);
#else
    std::fprintf(stderr, "anvil: %s%s%s (anvil_status %d)\n", where ? where : "",
                 where ? ": " : "", anvil_status_str(status), static_cast<int>(status));
    std::abort();
#endif
}

inline const char *status_str(anvil_status_t status) noexcept { return anvil_status_str(status); }
inline const char *version() noexcept { return anvil_version(); }

// --------------------------------------------------------------------- ISA

using isa = anvil_isa_t;

// Must be called before the first compute call (see anvil_set_max_isa).
inline void set_max_isa(anvil_isa_t cap) { check(anvil_set_max_isa(cap), "anvil_set_max_isa"); }
inline anvil_status_t set_max_isa_nothrow(anvil_isa_t cap) noexcept {
    return anvil_set_max_isa(cap);
}
inline anvil_isa_t effective_isa() noexcept { return anvil_get_effective_isa(); }
inline anvil_isa_t detected_isa() noexcept { return anvil_get_detected_isa(); }
// "scalar", "avx2", ...; nullptr for a value that is not an anvil_isa_t.
inline const char *isa_name(anvil_isa_t i) noexcept { return anvil_isa_name(i); }

// --------------------------------------------------------------- threading

inline void set_num_threads(int num_threads) {
    check(anvil_set_num_threads(num_threads), "anvil_set_num_threads");
}
inline int num_threads() noexcept { return anvil_get_num_threads(); }

// Installs a caller-provided parallel-for (see anvil.h); fn == nullptr
// restores the default pool.  pool_ctx must outlive its use by anvil.
inline void set_threadpool(anvil_parallel_for_fn fn, void *pool_ctx, int num_threads) {
    check(anvil_set_threadpool(fn, pool_ctx, num_threads), "anvil_set_threadpool");
}
// Back to the default (OpenMP or internal) pool.
inline void reset_threadpool() {
    check(anvil_set_threadpool(nullptr, nullptr, 1), "anvil_set_threadpool");
}

// ------------------------------------------------------------ kernel cache

using cache_stats = anvil_cache_stats_t;

inline void set_kernel_cache_capacity(std::int64_t capacity) {
    check(anvil_set_kernel_cache_capacity(capacity), "anvil_set_kernel_cache_capacity");
}
inline cache_stats kernel_cache_stats() {
    cache_stats s{};
    check(anvil_get_kernel_cache_stats(&s), "anvil_get_kernel_cache_stats");
    return s;
}
inline void clear_kernel_cache() { check(anvil_clear_kernel_cache(), "anvil_clear_kernel_cache"); }

// ------------------------------------------------- JIT failure and memory

inline void set_jit_failure_policy(anvil_jit_failure_policy_t policy) {
    check(anvil_set_jit_failure_policy(policy), "anvil_set_jit_failure_policy");
}
inline anvil_jit_failure_policy_t jit_failure_policy() noexcept { return anvil_get_jit_failure_policy(); }
inline bool jit_enabled() noexcept { return anvil_jit_enabled() != 0; }

using memory_stats = anvil_memory_stats_t;

// 0: no cap (see anvil_set_memory_cap).
inline void set_memory_cap(std::int64_t bytes) { check(anvil_set_memory_cap(bytes), "anvil_set_memory_cap"); }
inline memory_stats get_memory_stats() {
    memory_stats s{};
    check(anvil_get_memory_stats(&s), "anvil_get_memory_stats");
    return s;
}
inline void release_thread_scratch() { check(anvil_release_thread_scratch(), "anvil_release_thread_scratch"); }

// ---------------------------------------------------------------- fp32 GEMM

// C = alpha * op(A) * op(B) + beta * C, row-major, transa/transb 'N' or 'T'
// (exactly anvil_sgemm).
inline void sgemm(char transa, char transb, std::int64_t M, std::int64_t N, std::int64_t K,
                  float alpha, const float *A, std::int64_t lda, const float *B, std::int64_t ldb,
                  float beta, float *C, std::int64_t ldc) {
    check(anvil_sgemm(transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc),
          "anvil_sgemm");
}
inline anvil_status_t sgemm_nothrow(char transa, char transb, std::int64_t M, std::int64_t N,
                                    std::int64_t K, float alpha, const float *A,
                                    std::int64_t lda, const float *B, std::int64_t ldb,
                                    float beta, float *C, std::int64_t ldc) noexcept {
    return anvil_sgemm(transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// A strided batch of independent GEMMs (exactly anvil_sgemm_batch_strided).
inline void sgemm_batch_strided(char transa, char transb, std::int64_t M, std::int64_t N,
                                std::int64_t K, float alpha, const float *A, std::int64_t lda,
                                std::int64_t stride_a, const float *B, std::int64_t ldb,
                                std::int64_t stride_b, float beta, float *C, std::int64_t ldc,
                                std::int64_t stride_c, std::int64_t batch) {
    check(anvil_sgemm_batch_strided(transa, transb, M, N, K, alpha, A, lda, stride_a, B, ldb,
                                    stride_b, beta, C, ldc, stride_c, batch),
          "anvil_sgemm_batch_strided");
}

// What anvil would do for this shape (kernels, blocking, threads, sizes).
inline std::string explain_sgemm(char transa, char transb, std::int64_t M, std::int64_t N,
                                 std::int64_t K) {
    std::size_t needed = 0;
    check(anvil_explain_sgemm(transa, transb, M, N, K, nullptr, 0, &needed),
          "anvil_explain_sgemm");
    std::string s(needed, '\0');
    if (needed > 0) {
        check(anvil_explain_sgemm(transa, transb, M, N, K, &s[0], s.size(), &needed),
              "anvil_explain_sgemm");
        s.resize(std::char_traits<char>::length(s.c_str()));
    }
    return s;
}

// Planned GEMM (see anvil_gemm_plan_* in anvil.h).  execute() and pack_b()
// may run from many threads at once; pack_b_owned() must not race with
// execute() on the same plan.
class gemm_plan {
public:
    // An empty plan (no handle); only assignment, release() and the
    // destructor are meaningful on it.
    gemm_plan() noexcept = default;

    gemm_plan(char transa, char transb, std::int64_t M, std::int64_t N, std::int64_t K,
              std::int64_t lda, std::int64_t ldb, std::int64_t ldc) {
        check(anvil_gemm_plan_create(&plan_, transa, transb, M, N, K, lda, ldb, ldc),
              "anvil_gemm_plan_create");
    }

    ~gemm_plan() { reset(); }

    gemm_plan(const gemm_plan &) = delete;
    gemm_plan &operator=(const gemm_plan &) = delete;

    gemm_plan(gemm_plan &&other) noexcept : plan_(std::exchange(other.plan_, nullptr)) {}
    gemm_plan &operator=(gemm_plan &&other) noexcept {
        if (this != &other) {
            reset();
            plan_ = std::exchange(other.plan_, nullptr);
        }
        return *this;
    }

    // Bytes pack_b writes (header included).
    std::size_t packed_b_size() const {
        std::size_t bytes = 0;
        check(anvil_gemm_plan_packed_b_size(plan_, &bytes), "anvil_gemm_plan_packed_b_size");
        return bytes;
    }

    // Packs B into a caller-owned buffer of packed_b_size() bytes, 4-byte
    // aligned (64-byte alignment is fastest).
    void pack_b(const float *B, void *packed_b) const {
        check(anvil_gemm_plan_pack_b(plan_, B, packed_b), "anvil_gemm_plan_pack_b");
    }

    // Packs B into a buffer the plan owns; execute() without packed_b uses it.
    void pack_b_owned(const float *B) {
        check(anvil_gemm_plan_pack_b_owned(plan_, B), "anvil_gemm_plan_pack_b_owned");
    }

    // C = alpha * op(A) * op(B) + beta * C with B from packed_b (nullptr: the
    // plan's own buffer from pack_b_owned).
    void execute(float alpha, const float *A, const void *packed_b, float beta, float *C) const {
        check(anvil_gemm_plan_execute(plan_, alpha, A, packed_b, beta, C),
              "anvil_gemm_plan_execute");
    }
    // Same, with the buffer from pack_b_owned().
    void execute(float alpha, const float *A, float beta, float *C) const {
        execute(alpha, A, nullptr, beta, C);
    }

    anvil_status_t try_execute(float alpha, const float *A, const void *packed_b, float beta,
                               float *C) const noexcept {
        return anvil_gemm_plan_execute(plan_, alpha, A, packed_b, beta, C);
    }

    anvil_gemm_plan_t get() const noexcept { return plan_; }
    explicit operator bool() const noexcept { return plan_ != nullptr; }

    // Gives up ownership: the caller must anvil_gemm_plan_destroy the handle.
    anvil_gemm_plan_t release() noexcept { return std::exchange(plan_, nullptr); }

    // Destroys the handle now (no-op on an empty plan).
    void reset() noexcept {
        if (plan_) anvil_gemm_plan_destroy(plan_);
        plan_ = nullptr;
    }

private:
    anvil_gemm_plan_t plan_ = nullptr;
};

// Dispatched small GEMM (see anvil_smm_* in anvil.h): operator() is
// anvil_smm_execute; function() the raw kernel to call in a hot loop
// (nullptr where the JIT has none), valid while this object lives.
class smm {
public:
    smm() noexcept = default;
    smm(char transa, char transb, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
        std::int64_t lda, std::int64_t ldb, float beta, std::int64_t ldc) {
        check(anvil_smm_create(&smm_, transa, transb, M, N, K, alpha, lda, ldb, beta, ldc),
              "anvil_smm_create");
    }
    ~smm() { reset(); }
    smm(const smm &) = delete;
    smm &operator=(const smm &) = delete;
    smm(smm &&other) noexcept : smm_(std::exchange(other.smm_, nullptr)) {}
    smm &operator=(smm &&other) noexcept {
        if (this != &other) {
            reset();
            smm_ = std::exchange(other.smm_, nullptr);
        }
        return *this;
    }

    void operator()(const float *A, const float *B, float *C) const {
        check(anvil_smm_execute(smm_, A, B, C), "anvil_smm_execute");
    }
    anvil_smm_fn function() const noexcept { return anvil_smm_get_function(smm_); }

    anvil_smm_t get() const noexcept { return smm_; }
    explicit operator bool() const noexcept { return smm_ != nullptr; }
    void reset() noexcept {
        if (smm_) anvil_smm_destroy(smm_);
        smm_ = nullptr;
    }

private:
    anvil_smm_t smm_ = nullptr;
};

// ------------------------------------------------------ low-precision GEMM

inline void gemm_bf16bf16f32(char transa, char transb, std::int64_t M, std::int64_t N,
                             std::int64_t K, float alpha, const anvil_bf16_t *A, std::int64_t lda,
                             const anvil_bf16_t *B, std::int64_t ldb, float beta, float *C,
                             std::int64_t ldc) {
    check(anvil_gemm_bf16bf16f32(transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc),
          "anvil_gemm_bf16bf16f32");
}

inline void gemm_bf16bf16f32_batch_strided(char transa, char transb, std::int64_t M,
                                           std::int64_t N, std::int64_t K, float alpha,
                                           const anvil_bf16_t *A, std::int64_t lda,
                                           std::int64_t stride_a, const anvil_bf16_t *B,
                                           std::int64_t ldb, std::int64_t stride_b, float beta,
                                           float *C, std::int64_t ldc, std::int64_t stride_c,
                                           std::int64_t batch) {
    check(anvil_gemm_bf16bf16f32_batch_strided(transa, transb, M, N, K, alpha, A, lda, stride_a,
                                               B, ldb, stride_b, beta, C, ldc, stride_c, batch),
          "anvil_gemm_bf16bf16f32_batch_strided");
}

inline void gemm_u8s8s32(char transa, char transb, char offsetc, std::int64_t M, std::int64_t N,
                         std::int64_t K, float alpha, const std::uint8_t *A, std::int64_t lda,
                         std::uint8_t ao, const std::int8_t *B, std::int64_t ldb, std::int8_t bo,
                         float beta, std::int32_t *C, std::int64_t ldc, const std::int32_t *co) {
    check(anvil_gemm_u8s8s32(transa, transb, offsetc, M, N, K, alpha, A, lda, ao, B, ldb, bo, beta,
                             C, ldc, co),
          "anvil_gemm_u8s8s32");
}

inline void gemm_s8s8s32(char transa, char transb, char offsetc, std::int64_t M, std::int64_t N,
                         std::int64_t K, float alpha, const std::int8_t *A, std::int64_t lda,
                         std::int8_t ao, const std::int8_t *B, std::int64_t ldb, std::int8_t bo,
                         float beta, std::int32_t *C, std::int64_t ldc, const std::int32_t *co) {
    check(anvil_gemm_s8s8s32(transa, transb, offsetc, M, N, K, alpha, A, lda, ao, B, ldb, bo, beta,
                             C, ldc, co),
          "anvil_gemm_s8s8s32");
}

inline void gemm_u8s8s32_batch_strided(char transa, char transb, char offsetc, std::int64_t M,
                                       std::int64_t N, std::int64_t K, float alpha,
                                       const std::uint8_t *A, std::int64_t lda,
                                       std::int64_t stride_a, std::uint8_t ao,
                                       const std::int8_t *B, std::int64_t ldb,
                                       std::int64_t stride_b, std::int8_t bo, float beta,
                                       std::int32_t *C, std::int64_t ldc, std::int64_t stride_c,
                                       const std::int32_t *co, std::int64_t batch) {
    check(anvil_gemm_u8s8s32_batch_strided(transa, transb, offsetc, M, N, K, alpha, A, lda,
                                           stride_a, ao, B, ldb, stride_b, bo, beta, C, ldc,
                                           stride_c, co, batch),
          "anvil_gemm_u8s8s32_batch_strided");
}

inline void gemm_s8s8s32_batch_strided(char transa, char transb, char offsetc, std::int64_t M,
                                       std::int64_t N, std::int64_t K, float alpha,
                                       const std::int8_t *A, std::int64_t lda,
                                       std::int64_t stride_a, std::int8_t ao,
                                       const std::int8_t *B, std::int64_t ldb,
                                       std::int64_t stride_b, std::int8_t bo, float beta,
                                       std::int32_t *C, std::int64_t ldc, std::int64_t stride_c,
                                       const std::int32_t *co, std::int64_t batch) {
    check(anvil_gemm_s8s8s32_batch_strided(transa, transb, offsetc, M, N, K, alpha, A, lda,
                                           stride_a, ao, B, ldb, stride_b, bo, beta, C, ldc,
                                           stride_c, co, batch),
          "anvil_gemm_s8s8s32_batch_strided");
}

// Owns an anvil_matmul_t (see anvil_matmul_desc_t in anvil.h): movable, not
// copyable, destroyed with the object.
class matmul {
public:
    matmul() noexcept = default;
    explicit matmul(const anvil_matmul_desc_t &desc) {
        check(anvil_matmul_create(&h_, &desc), "anvil_matmul_create");
    }
    ~matmul() { reset(); }
    matmul(const matmul &) = delete;
    matmul &operator=(const matmul &) = delete;
    matmul(matmul &&other) noexcept : h_(std::exchange(other.h_, nullptr)) {}
    matmul &operator=(matmul &&other) noexcept {
        if (this != &other) {
            reset();
            h_ = std::exchange(other.h_, nullptr);
        }
        return *this;
    }

    // Bytes pack_weights writes (header included).
    std::size_t packed_weights_size() const {
        std::size_t bytes = 0;
        check(anvil_matmul_packed_weights_size(h_, &bytes), "anvil_matmul_packed_weights_size");
        return bytes;
    }
    // Packs B into packed (packed_weights_size() bytes, 4-byte aligned).
    void pack_weights(const void *B, void *packed) const {
        check(anvil_matmul_pack_weights(h_, B, packed), "anvil_matmul_pack_weights");
    }
    // C = chain(A x packed B); binary_srcs: one operand per binary post-op.
    void execute(const void *A, const void *packed, void *C,
                 const void *const *binary_srcs = nullptr) const {
        check(anvil_matmul_execute(h_, A, packed, C, binary_srcs), "anvil_matmul_execute");
    }
    anvil_status_t try_execute(const void *A, const void *packed, void *C,
                               const void *const *binary_srcs = nullptr) const noexcept {
        return anvil_matmul_execute(h_, A, packed, C, binary_srcs);
    }

    anvil_matmul_t get() const noexcept { return h_; }
    explicit operator bool() const noexcept { return h_ != nullptr; }
    anvil_matmul_t release() noexcept { return std::exchange(h_, nullptr); }
    void reset() noexcept {
        if (h_) anvil_matmul_destroy(h_);
        h_ = nullptr;
    }

private:
    anvil_matmul_t h_ = nullptr;
};

// A 2-D convolution (anvil_conv2d_*): create once, pack weights once,
// execute many times.
class conv2d {
public:
    conv2d() noexcept = default;
    explicit conv2d(const anvil_conv2d_desc_t &desc) {
        check(anvil_conv2d_create(&h_, &desc), "anvil_conv2d_create");
    }
    ~conv2d() { reset(); }
    conv2d(const conv2d &) = delete;
    conv2d &operator=(const conv2d &) = delete;
    conv2d(conv2d &&other) noexcept : h_(std::exchange(other.h_, nullptr)) {}
    conv2d &operator=(conv2d &&other) noexcept {
        if (this != &other) {
            reset();
            h_ = std::exchange(other.h_, nullptr);
        }
        return *this;
    }

    std::size_t packed_weights_size() const {
        std::size_t bytes = 0;
        check(anvil_conv2d_packed_weights_size(h_, &bytes), "anvil_conv2d_packed_weights_size");
        return bytes;
    }
    void pack_weights(const void *weights, anvil_conv_weights_layout_t layout,
                      void *packed) const {
        check(anvil_conv2d_pack_weights(h_, weights, layout, packed),
              "anvil_conv2d_pack_weights");
    }
    void execute(const void *src, const void *packed, const float *bias, void *dst,
                 const void *const *binary_srcs = nullptr) const {
        check(anvil_conv2d_execute(h_, src, packed, bias, dst, binary_srcs),
              "anvil_conv2d_execute");
    }
    anvil_status_t try_execute(const void *src, const void *packed, const float *bias,
                               void *dst,
                               const void *const *binary_srcs = nullptr) const noexcept {
        return anvil_conv2d_execute(h_, src, packed, bias, dst, binary_srcs);
    }

    anvil_conv2d_t get() const noexcept { return h_; }
    explicit operator bool() const noexcept { return h_ != nullptr; }
    anvil_conv2d_t release() noexcept { return std::exchange(h_, nullptr); }
    void reset() noexcept {
        if (h_) anvil_conv2d_destroy(h_);
        h_ = nullptr;
    }

private:
    anvil_conv2d_t h_ = nullptr;
};

}  // namespace anvil

#endif  // ANVIL_ANVIL_HPP
