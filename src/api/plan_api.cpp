// The planned GEMM handle: create -> pack B once -> execute many times.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "anvil/anvil.h"
#include "api/validate.h"
#include "common/memory.h"
#include "common/jit_state.h"
#include "common/verbose.h"
#include "gemm/backend.h"
#include "gemm/blocking.h"
#include "gemm/driver.h"
#include "gemm/pack.h"
#include "threading/parallel.h"

// Packed buffers start with this header so a buffer made for another plan
// (shape, transposes, panel width or ISA) is refused instead of misread.
struct packed_header {
    char magic[8];     // "ANVILPB1"
    int64_t N, K;
    int32_t nr, tier;
    int64_t data_bytes;
    uint8_t pad[24];   // data starts 64 bytes in
};
static_assert(sizeof(packed_header) == 64, "header is one cache line");

struct anvil_gemm_plan {
    uint64_t magic = kMagic;
    bool ta = false, tb = false;
    int64_t M = 0, N = 0, K = 0, lda = 0, ldb = 0, ldc = 0;
    const anvil::gemm::backend *be = nullptr;
    size_t packed_bytes = 0;
    void *owned = nullptr;  // library-owned packed B (pack_b_owned)
    // A small B (K x N floats within gemm::kDirectBBytes) is kept as a
    // plain row-major K x N copy of op(B), and execute runs the call as
    // anvil_sgemm would on it ('N', ldb = N): there B is read in place (the
    // whole-GEMM kernels for M, N <= 64), where panels of nr columns would
    // send N > nr through the blocked path (measured Zen 5: 48x48x48
    // planned 0.8x anvil_sgemm).  Any backend reads this layout.
    bool row_major_copy = false;
    packed_header header;   // what this plan's packed buffers start with
    // Small plans (one whole-GEMM kernel per call, gemm::whole_kernel_for):
    // the kernel for each [alpha == 1][beta kind], looked up on the first
    // execute that needs it and then called directly, without the driver's
    // per-call lookups (half of a 16^3 call's time).  `looked` is set
    // once the lookup ran (also when the call runs another way: fn null).
    // With alpha == 1 and beta 0 or 1 (nothing left to pass), the direct
    // kernel of the problem (anvil_smm's, gemm::direct_gemm_desc) where the
    // JIT makes one: the same bits without the argument block.
    struct fast_path {
        std::atomic<anvil::gemm::ukernel_fn> fn{nullptr};
        std::atomic<anvil::gemm::direct_gemm_fn> direct{nullptr};
        std::atomic<bool> looked{false};
        anvil::gemm::ukernel_ref ref;  // keeps fn's code alive
        anvil::gemm::direct_kernel_ref direct_ref;  // ... and direct's
        int64_t b_ld = 0;
    };
    fast_path fast[2][3];
    std::mutex fast_mu;  // serialises the lookups
    static constexpr uint64_t kMagic = 0x414e56494c504c4eull;
};

namespace {

using anvil::gemm::backend;

bool valid(anvil_gemm_plan_t p) { return p && p->magic == anvil_gemm_plan::kMagic; }

void fill_header(const anvil_gemm_plan &p, packed_header *h) {
    std::memset(h, 0, sizeof(*h));
    std::memcpy(h->magic, "ANVILPB1", 8);
    h->N = p.N;
    h->K = p.K;
    h->nr = p.row_major_copy ? 0 : p.be->nr();  // 0: the row-major copy
    h->tier = int32_t(p.be->tier());
    h->data_bytes = int64_t(p.packed_bytes - sizeof(packed_header));
}

bool header_matches(const anvil_gemm_plan &p, const void *buf) {
    return std::memcmp(&p.header, buf, sizeof(packed_header)) == 0;
}

// Looks up (once per alpha / beta kind) the whole-GEMM kernel of a small
// plan's calls; null when they run another way or the lookup failed (the
// driver then runs the call and reports any error).
anvil::gemm::ukernel_fn fast_kernel(anvil_gemm_plan &plan, const anvil::gemm::sgemm_problem &p,
                                    anvil_gemm_plan::fast_path &f) {
    std::lock_guard<std::mutex> lk(plan.fast_mu);
    if (f.looked.load(std::memory_order_acquire)) return f.fn.load(std::memory_order_acquire);
    anvil::gemm::ukernel_ref ref;
    int64_t b_ld = 0;
    if (anvil::gemm::whole_kernel_for(*plan.be, p, &ref, &b_ld) == anvil_success && ref.fn) {
        f.ref = ref;
        f.b_ld = b_ld;
        const anvil::gemm::beta_kind bk = anvil::gemm::classify_beta(p.beta);
        if (p.alpha == 1.0f && bk != anvil::gemm::beta_kind::general) {
            const auto d = anvil::gemm::make_direct_desc(p.transa, p.M, p.N, p.K, 1.0f, p.lda, b_ld,
                                                         bk == anvil::gemm::beta_kind::one ? 1.0f : 0.0f,
                                                         p.ldc);
            // Failure is no error: the whole-GEMM kernel serves the call.
            if (plan.be->get_direct(d, &f.direct_ref) == anvil_success && f.direct_ref.fn)
                f.direct.store(f.direct_ref.fn, std::memory_order_release);
        }
        f.fn.store(ref.fn, std::memory_order_release);
    }
    f.looked.store(true, std::memory_order_release);
    return f.fn.load(std::memory_order_acquire);
}

// The rest of anvil_gemm_plan_execute after its checks and the direct
// kernel (kept out of line, so the direct path's frame stays small): the
// whole-GEMM kernel of a small plan, else the driver.
[[gnu::noinline]] anvil_status_t execute_planned(anvil_gemm_plan &pl, float alpha, const float *A,
                                                 const float *data, float beta, float *C, int vl,
                                                 bool small) {
    using namespace anvil;
    anvil_gemm_plan *plan = &pl;
    gemm::sgemm_problem p;
    p.transa = plan->ta;
    p.transb = plan->tb;
    p.M = plan->M;
    p.N = plan->N;
    p.K = plan->K;
    p.alpha = alpha;
    p.beta = beta;
    p.A = A;
    p.lda = plan->lda;
    if (plan->row_major_copy) {  // an anvil_sgemm call on the copy
        p.transb = false;
        p.B = data;
        p.ldb = std::max<int64_t>(plan->N, 1);
    } else {
        p.packed_b = data;
        p.ldb = plan->ldb;
    }
    p.C = C;
    p.ldc = plan->ldc;
    // Small plans: the whole-GEMM kernel directly (not with verbose exec
    // lines, which the driver path writes).
    if (small) {
        anvil_gemm_plan::fast_path &f =
            plan->fast[alpha == 1.0f][int(gemm::classify_beta(beta))];
        gemm::ukernel_fn fn = f.fn.load(std::memory_order_acquire);
        if (!fn && !f.looked.load(std::memory_order_acquire)) fn = fast_kernel(*plan, p, f);
        if (fn) {
            gemm::run_whole_kernel(fn, p, f.b_ld);
            return anvil_success;
        }
    }
    const double t0 = vl >= 2 ? verbose::now_seconds() : 0.0;
    const gemm::backend *be = plan->be;
    anvil_status_t st = gemm::run_sgemm(*be, p);
    if (jit_state::retry_without_jit(st)) {
        // The JIT is off now.  B stays in the plan's layout: the row-major
        // copy is read by any backend, panels by one of the same width
        // (nothing was written yet); without one the status stays
        // anvil_jit_error.
        if (const gemm::backend *alt = plan->row_major_copy
                                           ? &gemm::select_backend()
                                           : gemm::non_jit_backend_with_nr(be->nr())) {
            be = alt;
            st = gemm::run_sgemm(*be, p);
        } else if (vl >= 1) {
            verbose::emit("jit,error=plan_layout_needs_jit,op=gemm_plan,nr=" + std::to_string(be->nr()) +
                          ",action=return_jit_error_repack_with_a_new_plan");
        }
    }
    if (vl >= 2)
        verbose::emit("exec,op=gemm_plan,dt=f32,trans=" + std::string(1, plan->ta ? 'T' : 'N') +
                      std::string(1, plan->tb ? 'T' : 'N') + ",shape=" + std::to_string(p.M) +
                      "x" + std::to_string(p.N) + "x" + std::to_string(p.K) +
                      ",backend=" + be->name() + ",status=" + anvil_status_str(st) +
                      ",time_us=" + std::to_string((verbose::now_seconds() - t0) * 1e6));
    return st;
}


// Packed buffers hold floats after the header, so they must be 4-byte
// aligned (any multiple of 4 works; 64 is fastest).
bool float_aligned(const void *buf) { return reinterpret_cast<uintptr_t>(buf) % alignof(float) == 0; }

anvil_status_t pack_into(anvil_gemm_plan_t p, const float *B, void *dst) {
    packed_header h;
    fill_header(*p, &h);
    std::memcpy(dst, &h, sizeof(h));
    float *data = reinterpret_cast<float *>(static_cast<char *>(dst) + sizeof(packed_header));
    // K == 0 or N == 0: no packed data (B is not read; it may be NULL).
    if (p->K == 0 || p->N == 0) return anvil_success;
    if (p->row_major_copy) {  // one panel N wide: data[k * N + j] = op(B)(k, j)
        anvil::gemm::pack_b_panel_range(B, p->ldb, p->tb, 0, p->K, 0, p->N, int(p->N), 0, 1, data);
        return anvil_success;
    }
    const int nr = p->be->nr();
    const int64_t panels = p->N / nr + (p->N % nr != 0);
    anvil::threading::parallel_for(panels, [&](int64_t q) {
        anvil::gemm::pack_b_panel_range(B, p->ldb, p->tb, 0, p->K, 0, p->N, nr, q, q + 1, data);
    });
    return anvil_success;
}

}  // namespace

extern "C" {

anvil_status_t anvil_gemm_plan_create(anvil_gemm_plan_t *plan, char transa, char transb,
                                      int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb,
                                      int64_t ldc) {
    using namespace anvil;
    if (!plan) return anvil_null_pointer;
    bool ta = false, tb = false;
    anvil_status_t st =
        api::check_gemm_shape(transa, transb, M, N, K, lda, ldb, ldc, 4, 4, 4, &ta, &tb);
    if (st != anvil_success) return st;
    const gemm::backend &be = gemm::select_backend();
    // Packed size: ceil(N / nr) * nr * K floats + header, overflow-checked
    // (the row-major copy of a small B: N * K floats).
    int64_t cols, floats, bytes;
    const int64_t nr = be.nr();
    if (!api::mul_ok(N / nr + (N % nr != 0), nr, &cols) || !api::mul_ok(cols, K, &floats) ||
        !api::mul_ok(floats, 4, &bytes) || bytes > INT64_MAX - 64)
        return anvil_size_overflow;
    const bool row_major_copy = N * K * 4 <= gemm::kDirectBBytes;  // no overflow: cols * K fits
    if (row_major_copy) bytes = N * K * 4;
    auto *p = new (std::nothrow) anvil_gemm_plan();
    if (!p) return anvil_out_of_memory;
    p->ta = ta;
    p->tb = tb;
    p->M = M;
    p->N = N;
    p->K = K;
    p->lda = lda;
    p->ldb = ldb;
    p->ldc = ldc;
    p->be = &be;
    p->row_major_copy = row_major_copy;
    p->packed_bytes = size_t(bytes) + sizeof(packed_header);
    fill_header(*p, &p->header);
    *plan = p;
    return anvil_success;
}

anvil_status_t anvil_gemm_plan_packed_b_size(anvil_gemm_plan_t plan, size_t *bytes) {
    if (!valid(plan)) return anvil_invalid_handle;
    if (!bytes) return anvil_null_pointer;
    if (!anvil::mem::fits_cap(int64_t(plan->packed_bytes))) return anvil_out_of_memory;
    *bytes = plan->packed_bytes;
    return anvil_success;
}

anvil_status_t anvil_gemm_plan_pack_b(anvil_gemm_plan_t plan, const float *B, void *packed_b) {
    if (!valid(plan)) return anvil_invalid_handle;
    if (!packed_b || (!B && plan->N > 0 && plan->K > 0)) return anvil_null_pointer;
    if (!float_aligned(packed_b)) return anvil_invalid_argument;
    if (!anvil::mem::fits_cap(int64_t(plan->packed_bytes))) return anvil_out_of_memory;
    return pack_into(plan, B, packed_b);
}

anvil_status_t anvil_gemm_plan_pack_b_owned(anvil_gemm_plan_t plan, const float *B) {
    if (!valid(plan)) return anvil_invalid_handle;
    if (!B && plan->N > 0 && plan->K > 0) return anvil_null_pointer;
    void *buf = anvil::mem::allocate(int64_t(plan->packed_bytes));
    if (!buf) return anvil_out_of_memory;
    pack_into(plan, B, buf);
    anvil::mem::release(plan->owned, int64_t(plan->packed_bytes));
    plan->owned = buf;
    return anvil_success;
}

anvil_status_t anvil_gemm_plan_execute(anvil_gemm_plan_t plan, float alpha, const float *A,
                                       const void *packed_b, float beta, float *C) {
    using namespace anvil;
    if (!valid(plan)) return anvil_invalid_handle;
    const void *pb = packed_b ? packed_b : plan->owned;
    if (!pb) return anvil_bad_packed_buffer;
    if (plan->M > 0 && plan->N > 0 && !C) return anvil_null_pointer;
    if (plan->M > 0 && plan->N > 0 && plan->K > 0 && alpha != 0.0f && !A)
        return anvil_null_pointer;
    if (!float_aligned(pb)) return anvil_invalid_argument;
    if (!header_matches(*plan, pb)) return anvil_bad_packed_buffer;
    const float *data =
        reinterpret_cast<const float *>(static_cast<const char *>(pb) + sizeof(packed_header));
    const int vl = verbose::level();
    const bool small = plan->M <= gemm::kSmallGemmMax && plan->N <= gemm::kSmallGemmMax &&
                       plan->K > 0 && alpha != 0.0f && vl < 2;
    // The direct kernel first (alpha 1, beta 0 or 1, once looked up): no
    // problem to build.
    if (small && alpha == 1.0f && (beta == 0.0f || beta == 1.0f))
        if (const gemm::direct_gemm_fn d =
                plan->fast[1][beta == 0.0f ? 0 : 1].direct.load(std::memory_order_acquire)) {
            d(A, data, C);
            return anvil_success;
        }
    return execute_planned(*plan, alpha, A, data, beta, C, vl, small);
}

anvil_status_t anvil_gemm_plan_destroy(anvil_gemm_plan_t plan) {
    if (!plan) return anvil_success;
    if (!valid(plan)) return anvil_invalid_handle;
    anvil::mem::release(plan->owned, int64_t(plan->packed_bytes));
    plan->magic = 0;
    delete plan;
    return anvil_success;
}

}  // extern "C"
