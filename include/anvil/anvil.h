/* anvil: CPU SIMD micro-kernels with a JIT.  Public C API.
 *
 * Conventions
 *  - Every call returns anvil_status_t; anvil_success is 0.  On any error the
 *    call writes nothing to its outputs (C, packed buffers, handles).
 *  - Matrices are row-major, as in oneDNN's dnnl_sgemm: with transa == 'N',
 *    A is M x K with element (i, k) at A[i * lda + k]; with 'T' the caller
 *    passes A^T (K x M) with element (i, k) at A[k * lda + i].  Same for B
 *    (K x N) and C (M x N, always 'N').
 *  - Sizes are int64_t; negative sizes are errors, zero sizes are valid.
 */
#ifndef ANVIL_ANVIL_H
#define ANVIL_ANVIL_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define ANVIL_API
#else
#define ANVIL_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define ANVIL_VERSION_MAJOR 0
#define ANVIL_VERSION_MINOR 1
#define ANVIL_VERSION_PATCH 0

typedef enum anvil_status {
    anvil_success = 0,
    anvil_null_pointer = 1,        /* a required pointer is NULL */
    anvil_invalid_argument = 2,    /* bad trans/offset char, bad enum, ... */
    anvil_bad_size = 3,            /* negative size */
    anvil_bad_leading_dim = 4,     /* lda/ldb/ldc smaller than required */
    anvil_size_overflow = 5,       /* a size or byte-count product overflows */
    anvil_unsupported = 6,         /* valid request this build/CPU cannot serve */
    anvil_out_of_memory = 7,       /* allocation failed or exceeds the memory cap */
    anvil_jit_error = 8,           /* code generation or executable mapping failed */
    anvil_invalid_handle = 9,      /* NULL handle (gemm plans also recognise a
                                      pointer that is not a plan); using a
                                      destroyed handle is undefined, as with free */
    anvil_runtime_error = 10,      /* unexpected internal failure */
    anvil_bad_packed_buffer = 11   /* packed buffer missing or not from this plan */
} anvil_status_t;

/* Human-readable description of a status; never NULL. */
ANVIL_API const char *anvil_status_str(anvil_status_t status);

/* Library version as "major.minor.patch". */
ANVIL_API const char *anvil_version(void);

/* ------------------------------------------------------------------ ISA */

/* ISA tiers, ordered: each includes the ones before it.  anvil_set_max_isa
 * (or ANVIL_MAX_ISA=<name> in the environment) caps what anvil uses; a cap
 * above what the CPU has is reduced to what it has. */
typedef enum anvil_isa {
    anvil_isa_scalar = 0,
    anvil_isa_avx2 = 1,             /* AVX2 + FMA (+ AVX-VNNI when present) */
    anvil_isa_avx512_core = 2,      /* AVX-512 F/BW/DQ/VL */
    anvil_isa_avx512_core_vnni = 3,
    anvil_isa_avx512_core_bf16 = 4,
    anvil_isa_amx = 5               /* AMX tile + bf16 + int8 */
} anvil_isa_t;

/* Caps the ISA.  Must be called before the first compute call; afterwards it
 * returns anvil_unsupported and changes nothing. */
ANVIL_API anvil_status_t anvil_set_max_isa(anvil_isa_t isa);
/* Highest tier anvil will use (after the cap and what the CPU has). */
ANVIL_API anvil_isa_t anvil_get_effective_isa(void);
/* Highest tier the CPU has. */
ANVIL_API anvil_isa_t anvil_get_detected_isa(void);
/* "scalar", "avx2", "avx512_core", ... (NULL for an unknown value). */
ANVIL_API const char *anvil_isa_name(anvil_isa_t isa);

/* ------------------------------------------------------------ threading */

/* A caller-provided parallel-for: run body(body_ctx, i) for every i in
 * [0, n), possibly concurrently, and return only when all have finished.
 * The callback may be invoked from several application threads at once. */
typedef void (*anvil_parallel_body_fn)(void *body_ctx, int64_t i);
typedef void (*anvil_parallel_for_fn)(void *pool_ctx, int64_t n,
                                      anvil_parallel_body_fn body,
                                      void *body_ctx);

/* Installs a thread pool used by every later call (NULL fn restores the
 * default OpenMP/internal pool).  num_threads is how many workers the pool
 * runs (>= 1); anvil splits work for that many. */
ANVIL_API anvil_status_t anvil_set_threadpool(anvil_parallel_for_fn fn,
                                              void *pool_ctx,
                                              int num_threads);
/* Threads used by the default pool (>= 1).  Results are bitwise identical
 * for any thread count. */
ANVIL_API anvil_status_t anvil_set_num_threads(int num_threads);
ANVIL_API int anvil_get_num_threads(void);

/* --------------------------------------------------------- kernel cache */

typedef struct anvil_cache_stats {
    int64_t hits;
    int64_t misses;          /* == kernels generated */
    int64_t evictions;
    int64_t size;            /* kernels currently cached */
    int64_t capacity;
    double generation_seconds; /* total time spent generating code */
} anvil_cache_stats_t;

/* Bounds the JIT kernel cache (LRU); capacity >= 1.  Also settable with
 * ANVIL_KERNEL_CACHE_CAPACITY. */
ANVIL_API anvil_status_t anvil_set_kernel_cache_capacity(int64_t capacity);
ANVIL_API anvil_status_t anvil_get_kernel_cache_stats(anvil_cache_stats_t *stats);
/* Drops every cached kernel not in use (counters are kept). */
ANVIL_API anvil_status_t anvil_clear_kernel_cache(void);

/* What anvil does when the system refuses to map JIT code (no executable
 * mappings allowed, mmap failure) or a kernel cannot be generated.
 * fallback (default; ANVIL_JIT_ON_FAILURE=fallback): the JIT is off for the
 *   rest of the process and the call, like every later one, runs on the
 *   Highway or scalar kernels.  The one exception is a gemm plan whose packed
 *   B was laid out for the JIT: when no other backend reads that layout its
 *   execute returns anvil_jit_error (make a new plan and repack).
 * error (ANVIL_JIT_ON_FAILURE=error): the call returns anvil_jit_error and
 *   writes nothing; later calls try the JIT again.
 * ANVIL_VERBOSE=1 prints a "jit,error=..." line naming the kernel and the
 * action taken. */
typedef enum anvil_jit_failure_policy {
    anvil_jit_failure_fallback = 0,
    anvil_jit_failure_error = 1
} anvil_jit_failure_policy_t;
ANVIL_API anvil_status_t anvil_set_jit_failure_policy(anvil_jit_failure_policy_t policy);
ANVIL_API anvil_jit_failure_policy_t anvil_get_jit_failure_policy(void);
/* 1 while anvil may generate JIT code (an x86-64 build, a CPU with a JIT
 * tier allowed by the ISA cap, and no generation failure under the fallback
 * policy), else 0. */
ANVIL_API int anvil_jit_enabled(void);

/* --------------------------------------------------------------- memory */

typedef struct anvil_memory_stats {
    int64_t cap;     /* bytes; 0 = no cap */
    int64_t in_use;  /* bytes anvil holds now in counted buffers */
    int64_t peak;    /* highest in_use so far */
} anvil_memory_stats_t;

/* Caps the memory anvil allocates for buffers whose size follows from a
 * problem's sizes -- packing scratch, accumulator slots, padded activation
 * views, weights packed into library-owned memory -- summed over all
 * threads, and the size of any packed-weights buffer a *_packed_*_size
 * query or pack call accepts.  A call that would go over returns
 * anvil_out_of_memory, allocates nothing more and writes nothing.  0 (the
 * default) is no cap; ANVIL_MEMORY_CAP=<bytes>[K|M|G] sets it at start-up.
 * Small fixed-size objects (handles, cache entries, JIT code pages) are not
 * counted.  Per-thread scratch is kept for reuse until the thread exits or
 * calls anvil_release_thread_scratch. */
ANVIL_API anvil_status_t anvil_set_memory_cap(int64_t bytes);
ANVIL_API anvil_status_t anvil_get_memory_stats(anvil_memory_stats_t *stats);
/* Frees the calling thread's scratch buffers (they are made again on the
 * next call that needs them). */
ANVIL_API anvil_status_t anvil_release_thread_scratch(void);

/* ----------------------------------------------------------- fp32 GEMM */

/* C = alpha * op(A) * op(B) + beta * C with exactly dnnl_sgemm's semantics.
 * beta == 0 never reads C (NaN in C does not propagate). */
ANVIL_API anvil_status_t anvil_sgemm(char transa, char transb, int64_t M,
                                     int64_t N, int64_t K, float alpha,
                                     const float *A, int64_t lda,
                                     const float *B, int64_t ldb, float beta,
                                     float *C, int64_t ldc);

/* A strided batch of independent GEMMs, row-major (the per-item call of
 * MKL's cblas_sgemm_batch_strided; attention's per-head products): for
 * b in [0, batch), with A_b = A + b * stride_a (elements), likewise B_b
 * and C_b,
 *   C_b = alpha * op(A_b) * op(B_b) + beta * C_b
 * with anvil_sgemm's conventions for each item.  Strides are >= 0; 0 shares
 * one A or B across the batch (e.g. one weight matrix).  The C items must
 * not overlap: one after another (stride_c >= (M - 1) * ldc + N) or side by
 * side within each row (N <= stride_c and (batch - 1) * stride_c + N <= ldc,
 * e.g. heads written into one [tokens, heads * d] matrix); otherwise
 * anvil_bad_leading_dim, as for a negative stride.  batch == 0 is a no-op.
 * Each item's result is that of anvil_sgemm on it, bit for bit, for any
 * thread count: many items run side by side (one per thread), few large
 * ones one after another (each threaded).  Bad arguments write nothing; a
 * resource failure (memory) in one item is returned after the others ran
 * (they are written, the failed item is not). */
ANVIL_API anvil_status_t anvil_sgemm_batch_strided(
    char transa, char transb, int64_t M, int64_t N, int64_t K, float alpha,
    const float *A, int64_t lda, int64_t stride_a, const float *B, int64_t ldb,
    int64_t stride_b, float beta, float *C, int64_t ldc, int64_t stride_c,
    int64_t batch);

/* Planned GEMM for a shape called repeatedly with the same B (weights).
 *   create -> packed_b_size -> pack_b (once) -> execute (many times, from
 *   many threads at once) -> destroy.
 * The packed buffer is plain bytes: the caller may keep it, share it between
 * threads or map it from a file; it is valid for plans with the same shape,
 * transposes and effective ISA (pack_b records a small header to check it). */
typedef struct anvil_gemm_plan *anvil_gemm_plan_t;

ANVIL_API anvil_status_t anvil_gemm_plan_create(anvil_gemm_plan_t *plan,
                                                char transa, char transb,
                                                int64_t M, int64_t N,
                                                int64_t K, int64_t lda,
                                                int64_t ldb, int64_t ldc);
ANVIL_API anvil_status_t anvil_gemm_plan_packed_b_size(anvil_gemm_plan_t plan,
                                                       size_t *bytes);
/* Packs B into a caller-owned buffer of packed_b_size bytes.  The buffer
 * must be 4-byte aligned (it holds floats; 64-byte alignment is fastest);
 * another alignment gives anvil_invalid_argument, here and in execute. */
ANVIL_API anvil_status_t anvil_gemm_plan_pack_b(anvil_gemm_plan_t plan,
                                                const float *B, void *packed_b);
/* Packs B into a buffer owned by the plan; execute with packed_b == NULL
 * uses it. */
ANVIL_API anvil_status_t anvil_gemm_plan_pack_b_owned(anvil_gemm_plan_t plan,
                                                      const float *B);
ANVIL_API anvil_status_t anvil_gemm_plan_execute(anvil_gemm_plan_t plan,
                                                 float alpha, const float *A,
                                                 const void *packed_b,
                                                 float beta, float *C);
ANVIL_API anvil_status_t anvil_gemm_plan_destroy(anvil_gemm_plan_t plan);

/* Dispatched small GEMM (the LIBXSMM usage pattern): one shape, leading
 * dimensions, alpha and beta fixed at create; each call passes only A, B
 * and C:  C = alpha * op(A) * op(B) + beta * C  (anvil_sgemm's conventions).
 *   create -> get_function (a plain function pointer, called directly in
 *   the caller's loop, no argument checks, no threading) or execute
 *   (checks its pointers, works everywhere) -> destroy.
 * get_function gives a JIT kernel made for exactly this problem, or NULL
 * where there is none: ISA below avx512_core (capped or absent, and on
 * non-x86 CPUs), M or N above 64, transb 'T', K == 0, alpha == 0, or
 * leading dimensions too large for 32-bit displacements (about 8 million
 * floats); execute then runs anvil_sgemm on the problem.  The function
 * stays valid until destroy, may be called from many threads at once, and
 * computes every element as one fused multiply-add chain over k in
 * increasing order from zero, then alpha, then beta (C * beta + x, one
 * rounding; beta == 0 never reads C): bitwise anvil_sgemm's result where
 * anvil_sgemm runs its whole-GEMM kernels (M, N <= 64 with K within one K
 * block). */
typedef struct anvil_smm *anvil_smm_t;
typedef void (*anvil_smm_fn)(const float *A, const float *B, float *C);

ANVIL_API anvil_status_t anvil_smm_create(anvil_smm_t *smm, char transa,
                                          char transb, int64_t M, int64_t N,
                                          int64_t K, float alpha, int64_t lda,
                                          int64_t ldb, float beta, int64_t ldc);
/* The kernel, or NULL (see above; also for a NULL or invalid handle). */
ANVIL_API anvil_smm_fn anvil_smm_get_function(anvil_smm_t smm);
ANVIL_API anvil_status_t anvil_smm_execute(anvil_smm_t smm, const float *A,
                                           const float *B, float *C);
ANVIL_API anvil_status_t anvil_smm_destroy(anvil_smm_t smm);

/* ------------------------------------------------- low-precision GEMM */

/* bf16 values are stored as their 16 bits (the high half of an fp32). */
typedef uint16_t anvil_bf16_t;

/* dst[i] = src[i] rounded to bf16 (nearest even; NaN stays a quiet NaN with
 * its sign; overflow rounds to infinity; denormals are rounded, not
 * flushed), and the exact widening back.  n >= 0; any alignment. */
ANVIL_API anvil_status_t anvil_convert_f32_to_bf16(const float *src,
                                                   anvil_bf16_t *dst, int64_t n);
ANVIL_API anvil_status_t anvil_convert_bf16_to_f32(const anvil_bf16_t *src,
                                                   float *dst, int64_t n);

/* C (fp32) = alpha * op(A) * op(B) + beta * C with A, B in bf16 and fp32
 * accumulation; anvil_sgemm's conventions (row-major, 'N'/'T', beta == 0
 * never reads C, K == 0 gives C = beta * C).  Every backend rounds alike:
 * the products are exact and each k-pair adds element k+1's product, then
 * element k's, to the fp32 accumulator (vdpbf16ps' order); only denormals
 * may differ (AVX512-BF16 flushes them). */
ANVIL_API anvil_status_t anvil_gemm_bf16bf16f32(char transa, char transb,
                                                int64_t M, int64_t N,
                                                int64_t K, float alpha,
                                                const anvil_bf16_t *A,
                                                int64_t lda,
                                                const anvil_bf16_t *B,
                                                int64_t ldb, float beta,
                                                float *C, int64_t ldc);

/* anvil_gemm_bf16bf16f32 over a strided batch, with the batch rules of
 * anvil_sgemm_batch_strided (strides in elements of A, B and C). */
ANVIL_API anvil_status_t anvil_gemm_bf16bf16f32_batch_strided(
    char transa, char transb, int64_t M, int64_t N, int64_t K, float alpha,
    const anvil_bf16_t *A, int64_t lda, int64_t stride_a, const anvil_bf16_t *B,
    int64_t ldb, int64_t stride_b, float beta, float *C, int64_t ldc,
    int64_t stride_c, int64_t batch);

/* C (s32) = alpha * (op(A) - ao) * (op(B) - bo) + beta * C + co with the
 * argument order and meaning of oneDNN's dnnl_gemm_u8s8s32:
 *   offsetc 'F': co[0] for every element; 'C': co[i] (one per row of C,
 *   "constant within each column"); 'R': co[j] (one per column).
 * The int32 accumulation is exact (wrapping modulo 2^32 only if the true
 * dot product does) on every CPU.  With alpha == 1 and beta in {0, 1} the
 * result is computed in integers; otherwise in double, then rounded to
 * nearest-even; every result saturates to the int32 range.  K == 0 gives
 * beta * C + co (oneDNN 2.6 leaves C unchanged there). */
ANVIL_API anvil_status_t anvil_gemm_u8s8s32(char transa, char transb,
                                            char offsetc, int64_t M,
                                            int64_t N, int64_t K, float alpha,
                                            const uint8_t *A, int64_t lda,
                                            uint8_t ao, const int8_t *B,
                                            int64_t ldb, int8_t bo,
                                            float beta, int32_t *C,
                                            int64_t ldc, const int32_t *co);
/* The same with signed A (dnnl_gemm_s8s8s32). */
ANVIL_API anvil_status_t anvil_gemm_s8s8s32(char transa, char transb,
                                            char offsetc, int64_t M,
                                            int64_t N, int64_t K, float alpha,
                                            const int8_t *A, int64_t lda,
                                            int8_t ao, const int8_t *B,
                                            int64_t ldb, int8_t bo,
                                            float beta, int32_t *C,
                                            int64_t ldc, const int32_t *co);

/* anvil_gemm_u8s8s32 / anvil_gemm_s8s8s32 over a strided batch, with the
 * batch rules of anvil_sgemm_batch_strided (strides in elements of A, B
 * and C): item b multiplies A + b * stride_a by B + b * stride_b into
 * C + b * stride_c.  ao, bo, offsetc and co are the same for every item
 * (co is not strided); each item's C is bitwise what the single call
 * gives. */
ANVIL_API anvil_status_t anvil_gemm_u8s8s32_batch_strided(
    char transa, char transb, char offsetc, int64_t M, int64_t N, int64_t K,
    float alpha, const uint8_t *A, int64_t lda, int64_t stride_a, uint8_t ao,
    const int8_t *B, int64_t ldb, int64_t stride_b, int8_t bo, float beta,
    int32_t *C, int64_t ldc, int64_t stride_c, const int32_t *co,
    int64_t batch);
ANVIL_API anvil_status_t anvil_gemm_s8s8s32_batch_strided(
    char transa, char transb, char offsetc, int64_t M, int64_t N, int64_t K,
    float alpha, const int8_t *A, int64_t lda, int64_t stride_a, int8_t ao,
    const int8_t *B, int64_t ldb, int64_t stride_b, int8_t bo, float beta,
    int32_t *C, int64_t ldc, int64_t stride_c, const int32_t *co,
    int64_t batch);

/* ------------------------------------- matmul (fp32, bf16, int8) */

/* The server path: a matmul descriptor with data types, shapes,
 * quantisation and a fused post-op chain; weights (B) packed once into
 * plain bytes; execute many times, concurrently, with per-call A, C and
 * binary operands.
 *
 * Supported types (a_dt, b_dt -> c_dt):
 *   f32, f32 -> f32 | bf16               (the fp32 GEMM's kernels)
 *   bf16, bf16 -> f32 | bf16             (fp32 accumulation)
 *   u8 | s8, s8 -> f32 | s32 | bf16 | u8 | s8   (exact int32 accumulation)
 * Per element, in this order:
 *   acc = sum_k (A(i,k) - a_zero_point) * (B(k,j) - b_zero_point)   (int8)
 *       | sum_k A(i,k) * B(k,j)                              (bf16, f32)
 *   x = float(acc) * scale (scales[0], or scales[j] with scales_per_n)
 *   x = x + bias[j]
 *   x = post_op(x) for each post-op in order (eltwise, binary add/mul
 *       with an M x N tensor or a per-N vector, or sum: x + scale * (the
 *       value C(i,j) held before the call - zero point))
 *   x = x + c_zero_point
 *   C(i,j) = convert(x): f32; bf16 and s32/u8/s8 round to nearest even,
 *       integers saturate, NaN -> 0.
 * An int8 matmul with s32 output and no scales, bias or post-ops stores
 * acc + c_zero_point exactly (saturated), without passing through fp32. 
 * Zero points are for int8 types only.  For f32 the product is
 * anvil_sgemm's (same kernels and summation order as the planned GEMM of
 * the same shape), then the chain above. */
typedef enum anvil_data_type {
    anvil_dt_f32 = 0,
    anvil_dt_bf16 = 1,
    anvil_dt_s32 = 2,
    anvil_dt_u8 = 3,
    anvil_dt_s8 = 4
} anvil_data_type_t;

typedef enum anvil_post_op_kind {
    anvil_post_op_eltwise = 0,
    anvil_post_op_binary = 1,
    /* oneDNN's sum post-op (accumulate into the output): x = x + alpha *
     * (C_old(i,j) - beta), where C_old is the value C (the conv2d's dst)
     * holds before the call, read as c_dt (f32, bf16, u8 and s8 exactly,
     * s32 rounded to the nearest fp32); alpha is the scale, beta the zero
     * point.  In fp32: t = float(C_old); t = t - beta (only when beta != 0);
     * t = t * alpha (only when alpha != 1); x = x + t.  No operand is
     * passed (binary_srcs counts binary post-ops only); alg, per_n, src_dt
     * and ld are ignored.  alpha and beta must be finite. */
    anvil_post_op_sum = 2
} anvil_post_op_kind_t;

/* Eltwise ops; accuracy of each in docs/postops.md. */
typedef enum anvil_eltwise_alg {
    anvil_eltwise_relu = 0,        /* max(x, 0) */
    anvil_eltwise_leaky_relu = 1,  /* x > 0 ? x : alpha * x */
    anvil_eltwise_clip = 2,        /* min(max(x, alpha), beta) */
    anvil_eltwise_gelu_tanh = 3,   /* 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))) */
    anvil_eltwise_gelu_erf = 4,    /* 0.5 x (1 + erf(x / sqrt(2))) */
    anvil_eltwise_silu = 5,        /* x * sigmoid(x) (swish) */
    anvil_eltwise_sigmoid = 6,     /* 1 / (1 + exp(-x)) */
    anvil_eltwise_tanh = 7
} anvil_eltwise_alg_t;

typedef enum anvil_binary_alg {
    anvil_binary_add = 0,
    anvil_binary_mul = 1
} anvil_binary_alg_t;

typedef struct anvil_post_op {
    anvil_post_op_kind_t kind;
    int alg;                   /* anvil_eltwise_alg_t or anvil_binary_alg_t */
    float alpha, beta;         /* eltwise parameters (leaky_relu, clip);
                                  sum: scale and zero point */
    /* binary: the operand is a vector of N values (per_n = 1) or an M x N
     * matrix with leading dimension ld (>= N), stored as src_dt (f32 or
     * bf16); its pointer is passed to each execute call. */
    int per_n;
    anvil_data_type_t src_dt;
    int64_t ld;
} anvil_post_op_t;

#define ANVIL_MAX_POST_OPS 8

typedef struct anvil_matmul_desc {
    anvil_data_type_t a_dt, b_dt, c_dt;
    char transa, transb;       /* 'N' or 'T', as in anvil_sgemm */
    int64_t M, N, K;
    int64_t lda, ldb, ldc;
    int32_t a_zero_point, b_zero_point, c_zero_point;
    const float *scales;       /* NULL: 1; else 1 value or N (scales_per_n) */
    int scales_per_n;
    const float *bias;         /* NULL or N fp32 values */
    int num_post_ops;          /* 0 .. ANVIL_MAX_POST_OPS */
    const anvil_post_op_t *post_ops;
} anvil_matmul_desc_t;

typedef struct anvil_matmul *anvil_matmul_t;

/* Copies everything it needs from desc (scales, bias, post-ops). */
ANVIL_API anvil_status_t anvil_matmul_create(anvil_matmul_t *matmul,
                                             const anvil_matmul_desc_t *desc);
/* Bytes of the packed weights (a header plus the k-group panels). */
ANVIL_API anvil_status_t anvil_matmul_packed_weights_size(anvil_matmul_t matmul,
                                                          size_t *bytes);
/* Packs B (b_dt, K x N as transb/ldb say) into `packed` (packed_weights_size
 * bytes, 4-byte aligned; 64 is best).  For bf16 and int8 weights the bytes
 * do not depend on the CPU or the ISA cap: they may be stored,
 * memory-mapped, shared between threads and used by any matmul with the
 * same b_dt, K, N.  f32 weights are in the fp32 GEMM's panels, whose width
 * depends on the kernel tier chosen at create: they serve matmuls with the
 * same K, N and tier (another tier's buffer gives anvil_bad_packed_buffer). */
ANVIL_API anvil_status_t anvil_matmul_pack_weights(anvil_matmul_t matmul,
                                                   const void *B, void *packed);
/* C = chain(A x packed B).  binary_srcs[t] is the operand of the t-th binary
 * post-op (in the order of the binary post-ops; NULL when there are none).
 * An M x N operand may be C itself (same memory, type and ld: an in-place
 * residual, each element read before it is written); other overlaps of an
 * operand with C are undefined.
 * Safe to call from many threads at once with different A/C. */
ANVIL_API anvil_status_t anvil_matmul_execute(anvil_matmul_t matmul,
                                              const void *A,
                                              const void *packed,
                                              void *C,
                                              const void *const *binary_srcs);
ANVIL_API anvil_status_t anvil_matmul_destroy(anvil_matmul_t matmul);

/* ------------------------------------------------------- convolution */

/* Forward-inference 2-D convolution, activations NHWC (channels last):
 *   src: N x IH x IW x IC   element (n, h, w, c) at src[((n*IH + h)*IW + w)*IC + c]
 *   dst: N x OH x OW x OC   likewise
 * Weights are given as OIHW (PyTorch: [OC][IC/G][KH][KW]) or HWIO
 * (TensorFlow: [KH][KW][IC/G][OC]) and packed once into plain bytes.
 * Groups G >= 1 split the channels: output channel oc = g*(OC/G) + o reads
 * input channels g*(IC/G) .. (g+1)*(IC/G)-1 (depthwise: G = IC = OC).
 * Dilation follows oneDNN/benchdnn: 0 is a dense kernel, d leaves d pixels
 * between taps.  OH must equal (IH + pad_t + pad_b - ((KH-1)*(DH+1)+1)) / SH
 * + 1 (and likewise OW); padding taps read nothing (they contribute 0 to
 * the sum, as in oneDNN, after the source zero point is subtracted).  One
 * exception: with a NaN or infinite weight, an output whose window reaches
 * into the padding may come out NaN on the implicit-GEMM path (groups of
 * more than one channel), which may multiply the padding's zeros by the
 * weights (0 * inf = NaN); the depthwise kernels skip those taps.  Finite
 * weights give the same results either way.
 *
 * Supported types (src, weights -> dst):
 *   f32, f32 -> f32                                   (fp32 accumulation)
 *   bf16, bf16 -> f32 | bf16                          (fp32 accumulation)
 *   u8 | s8, s8 -> f32 | s32 | bf16 | u8 | s8         (exact int32 accumulation)
 * Per output element, in this order (as the matmul above, with M = N*OH*OW
 * output pixels and N = OC columns):
 *   acc = sum over in-bounds taps of (src - src_zero_point) * weight
 *   x = float(acc) * scale (scales[0], or scales[oc] with scales_per_oc)
 *   x = x + bias[oc]                    (bias passed to execute; optional)
 *   x = post_op(x) in order (binary operands: a tensor shaped like dst,
 *       element (pixel, oc) at src[pixel * ld + oc] with ld >= OC, or a
 *       per-OC vector with per_n = 1)
 *   x = x + dst_zero_point
 *   dst = convert(x) (rounding and saturation as the matmul).
 * Zero points are for int8 types only.  For f32 the product is
 * anvil_sgemm's (same kernels and summation order as the planned GEMM of
 * the same shape), then the chain above. */
typedef enum anvil_conv_weights_layout {
    anvil_conv_weights_oihw = 0,
    anvil_conv_weights_hwio = 1
} anvil_conv_weights_layout_t;

typedef struct anvil_conv2d_desc {
    anvil_data_type_t src_dt, wei_dt, dst_dt;
    int64_t N, G;                  /* batch, groups (>= 1) */
    int64_t IC, IH, IW;            /* IC: all input channels (G * IC/G) */
    int64_t OC, OH, OW;            /* OC: all output channels */
    int64_t KH, KW;
    int64_t SH, SW;                /* strides >= 1 */
    int64_t pad_t, pad_l, pad_b, pad_r;  /* >= 0 */
    int64_t DH, DW;                /* dilation, oneDNN convention (0 = dense) */
    int32_t src_zero_point, dst_zero_point;
    const float *scales;           /* NULL: 1; else 1 value or OC (scales_per_oc) */
    int scales_per_oc;
    int num_post_ops;              /* 0 .. ANVIL_MAX_POST_OPS */
    const anvil_post_op_t *post_ops;
} anvil_conv2d_desc_t;

typedef struct anvil_conv2d *anvil_conv2d_t;

/* Validates desc (sizes, output size, groups, types) and copies what it
 * needs (scales, post-ops). */
ANVIL_API anvil_status_t anvil_conv2d_create(anvil_conv2d_t *conv,
                                             const anvil_conv2d_desc_t *desc);
/* Bytes of the packed weights. */
ANVIL_API anvil_status_t anvil_conv2d_packed_weights_size(anvil_conv2d_t conv,
                                                          size_t *bytes);
/* Packs weights (wei_dt, `layout`) into `packed` (packed_weights_size
 * bytes, 64-byte alignment is best, 4 required).  Plain bytes: they may
 * be stored, shared between threads and reused by any conv2d handle with
 * the same descriptor. */
ANVIL_API anvil_status_t anvil_conv2d_pack_weights(anvil_conv2d_t conv,
                                                   const void *weights,
                                                   anvil_conv_weights_layout_t layout,
                                                   void *packed);
/* dst = chain(conv(src, packed)).  bias: NULL or OC fp32 values.
 * binary_srcs[t]: operand of the t-th binary post-op (NULL when none); a
 * dst-shaped operand may be dst itself (same memory, type and ld: an
 * in-place residual); other overlaps with dst are undefined.
 * Safe to call from many threads at once with different src/dst. */
ANVIL_API anvil_status_t anvil_conv2d_execute(anvil_conv2d_t conv,
                                              const void *src,
                                              const void *packed,
                                              const float *bias,
                                              void *dst,
                                              const void *const *binary_srcs);
ANVIL_API anvil_status_t anvil_conv2d_destroy(anvil_conv2d_t conv);

/* Describes, without running it, what anvil would do for this sgemm shape
 * (kernel names, blocking, threads, packed sizes) into buf (NUL-terminated,
 * truncated to size).  *needed (if non-NULL) receives the full length + 1. */
ANVIL_API anvil_status_t anvil_explain_sgemm(char transa, char transb,
                                             int64_t M, int64_t N, int64_t K,
                                             char *buf, size_t size,
                                             size_t *needed);

/* The same for every GEMM type: a_dt x b_dt = f32 x f32 (the text of
 * anvil_explain_sgemm), bf16 x bf16, u8 x s8 or s8 x s8.  For the low-
 * precision types: the backend, the path and blocking of the BLAS-style
 * call (anvil_gemm_bf16bf16f32 / _u8s8s32 / _s8s8s32) and of a matmul
 * handle with prepacked weights, threads, and the packed weights' bytes.
 * Other type pairs: anvil_unsupported. */
ANVIL_API anvil_status_t anvil_explain_gemm(anvil_data_type_t a_dt,
                                            anvil_data_type_t b_dt,
                                            char transa, char transb,
                                            int64_t M, int64_t N, int64_t K,
                                            char *buf, size_t size,
                                            size_t *needed);

#ifdef __cplusplus
}
#endif

#endif /* ANVIL_ANVIL_H */
