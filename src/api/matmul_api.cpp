// anvil_matmul_*: the low-precision matmul handle (see anvil.h).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "api/matmul_f32.h"
#include "api/post_op_map.h"
#include "api/validate.h"
#include "common/memory.h"
#include "common/jit_state.h"
#include "common/verbose.h"
#include "gemm/backend.h"
#include "threading/parallel.h"
#include "lowp/chain_describe.h"
#include "lowp/chain_epilogue.h"
#include "lowp/lp_driver.h"
#include "lowp/lp_pack.h"

using namespace anvil;
using anvil::api::enum_value;
using anvil::api::map_out;
using anvil::api::map_post_op;
using anvil::api::valid_dt;

struct anvil_matmul {
    anvil_matmul_desc_t d{};  // pointers cleared (their data is copied below)
    lowp::lp_kind kind = lowp::lp_kind::bf16;
    lowp::lp_elem a_elem = lowp::lp_elem::bf16;
    bool ta = false, tb = false;
    lowp::chain_spec chain;
    int num_binary = 0;
    int64_t panel_bytes = 0;  // packed k-group panels
    int64_t colsum_bytes = 0; // int8: column sums after the panels
    int64_t packed_bytes = 0; // header + panels + column sums
    // fp32 (a_dt = b_dt = f32): the fp32 GEMM backend chosen at creation;
    // its panel width and tier are in the packed header.
    bool f32 = false;
    const gemm::backend *f32_be = nullptr;
};

namespace {

// One ANVIL_VERBOSE=2 line per execute call: op, types, shape, the chain in
// anvil-bench's attribute syntax (replayable), kernel backend, time.
void log_exec(const anvil_matmul &m, const std::string &backend, anvil_status_t st, double t0) {
    const anvil_matmul_desc_t &d = m.d;
    const double us = (verbose::now_seconds() - t0) * 1e6;
    verbose::emit(std::string("exec,op=matmul,dt=") + api::dt_name(d.a_dt) + api::dt_name(d.b_dt) +
                  api::dt_name(d.c_dt) + ",trans=" + (m.ta ? "T" : "N") + (m.tb ? "T" : "N") +
                  ",shape=" + std::to_string(d.M) + "x" + std::to_string(d.N) + "x" +
                  std::to_string(d.K) + "," +
                  lowp::chain_fields(m.chain, !m.chain.bias.empty(), d.a_zero_point, d.b_zero_point,
                                     d.c_zero_point) +
                  ",backend=" + backend + ",threads=" + std::to_string(threading::num_threads()) +
                  ",status=" + anvil_status_str(st) + ",time_us=" + std::to_string(us));
}

// The packed weights start with this header so that a buffer made for
// another shape or type is refused instead of misread.  It records nothing
// about the CPU: the k-group panels are the same for every backend.
// fp32 weights are the exception: they are in the fp32 GEMM's panels, whose
// width (nr) and backend tier the header records.
struct packed_header {
    char magic[8];       // "ANVLMMW1"
    uint32_t kind;       // lowp::lp_kind, or kF32Kind
    uint32_t has_colsum;
    int64_t K, N;
    int64_t panel_bytes;
    int32_t f32_nr, f32_tier;  // 0 for bf16 / int8
    uint8_t reserved[16];
};
constexpr uint32_t kF32Kind = 0x46333200;  // "\0" "23F": no lp_kind value
static_assert(sizeof(packed_header) == 64, "the packed header is 64 bytes");
constexpr char kMagic[8] = {'A', 'N', 'V', 'L', 'M', 'M', 'W', '1'};

anvil_status_t check_desc(const anvil_matmul_desc_t &d, anvil_matmul *m) {
    if (!valid_dt(d.a_dt) || !valid_dt(d.b_dt) || !valid_dt(d.c_dt)) return anvil_invalid_argument;
    const bool bf16 = d.a_dt == anvil_dt_bf16 && d.b_dt == anvil_dt_bf16;
    const bool f32 = d.a_dt == anvil_dt_f32 && d.b_dt == anvil_dt_f32;
    const bool int8 = (d.a_dt == anvil_dt_u8 || d.a_dt == anvil_dt_s8) && d.b_dt == anvil_dt_s8;
    if (!bf16 && !f32 && !int8) return anvil_unsupported;
    if ((bf16 || f32) && d.c_dt != anvil_dt_f32 && d.c_dt != anvil_dt_bf16) return anvil_unsupported;
    if ((bf16 || f32) && (d.a_zero_point || d.b_zero_point || d.c_zero_point))
        return anvil_invalid_argument;
    if (int8 && d.a_dt == anvil_dt_u8 && (d.a_zero_point < 0 || d.a_zero_point > 255))
        return anvil_invalid_argument;
    if (int8 && d.a_dt == anvil_dt_s8 && (d.a_zero_point < -128 || d.a_zero_point > 127))
        return anvil_invalid_argument;
    if (int8 && (d.b_zero_point < -128 || d.b_zero_point > 127)) return anvil_invalid_argument;
    const int64_t ea = f32 ? 4 : bf16 ? 2 : 1;
    const int64_t ec = lowp::out_type_bytes(map_out(d.c_dt));
    const anvil_status_t st = api::check_gemm_shape(d.transa, d.transb, d.M, d.N, d.K, d.lda, d.ldb,
                                                    d.ldc, ea, ea, ec, &m->ta, &m->tb);
    if (st != anvil_success) return st;
    if (d.num_post_ops < 0 || d.num_post_ops > ANVIL_MAX_POST_OPS) return anvil_invalid_argument;
    if (d.num_post_ops > 0 && !d.post_ops) return anvil_null_pointer;
    if (d.scales_per_n && !d.scales) return anvil_null_pointer;
    return anvil_success;
}

void fill_header(const anvil_matmul &m, packed_header *h) {
    std::memset(h, 0, sizeof(*h));
    std::memcpy(h->magic, kMagic, sizeof(kMagic));
    h->kind = m.f32 ? kF32Kind : uint32_t(m.kind);
    h->has_colsum = m.colsum_bytes > 0;
    h->K = m.d.K;
    h->N = m.d.N;
    h->panel_bytes = m.panel_bytes;
    if (m.f32) {
        h->f32_nr = m.f32_be->nr();
        h->f32_tier = int32_t(m.f32_be->tier());
    }
}

anvil_status_t execute_f32(const anvil_matmul &m, const void *A, const uint8_t *panels, void *C,
                           const void *const *srcs) {
    const anvil_matmul_desc_t &d = m.d;
    api::f32_matmul_call call;
    call.transa = m.ta;
    call.M = d.M;
    call.N = d.N;
    call.K = d.K;
    call.A = static_cast<const float *>(A);
    call.lda = d.lda;
    call.panels = reinterpret_cast<const float *>(panels);
    call.C = C;
    call.ldc = d.ldc;
    call.srcs = srcs;
    const int vl = verbose::level();
    const double t0 = vl >= 2 ? verbose::now_seconds() : 0.0;
    const gemm::backend *be = m.f32_be;
    anvil_status_t st;
    try {
        st = api::f32_matmul_run(&be, m.chain, call);
    } catch (const std::bad_alloc &) {
        st = anvil_out_of_memory;
    }
    if (vl >= 2) log_exec(m, be->name(), st, t0);
    return st;
}

}  // namespace

extern "C" {

anvil_status_t anvil_matmul_create(anvil_matmul_t *matmul, const anvil_matmul_desc_t *desc) {
    if (!matmul || !desc) return anvil_null_pointer;
    try {
        auto m = std::make_unique<anvil_matmul>();
        const anvil_matmul_desc_t &d = *desc;
        anvil_status_t st = check_desc(d, m.get());
        if (st != anvil_success) return st;
        m->d = d;
        m->d.scales = nullptr;
        m->d.bias = nullptr;
        m->d.post_ops = nullptr;
        const bool bf16 = d.a_dt == anvil_dt_bf16;
        m->f32 = d.a_dt == anvil_dt_f32;
        // The chain treats fp32 products as the bf16 GEMM's fp32 accumulators.
        m->kind = bf16 || m->f32 ? lowp::lp_kind::bf16 : lowp::lp_kind::u8s8;
        m->a_elem = bf16 ? lowp::lp_elem::bf16
                         : d.a_dt == anvil_dt_u8 ? lowp::lp_elem::u8 : lowp::lp_elem::s8;
        lowp::chain_spec &c = m->chain;
        c.kind = m->kind;
        c.out = map_out(d.c_dt);
        c.ao = d.a_zero_point;
        c.bo = d.b_zero_point;
        c.a_shift = m->a_elem == lowp::lp_elem::s8 ? 128 : 0;
        c.K = d.K;
        c.c_zero_point = float(d.c_zero_point);
        if (d.scales) c.scales.assign(d.scales, d.scales + (d.scales_per_n ? d.N : 1));
        c.scales_per_n = d.scales_per_n != 0;
        if (d.bias) c.bias.assign(d.bias, d.bias + d.N);
        for (int t = 0; t < d.num_post_ops; ++t) {
            lowp::post_op op;
            if ((st = map_post_op(d.post_ops[t], d.N, &op)) != anvil_success) return st;
            if (op.is_sum()) {  // the operand is C: its type and row stride
                op.sum_type = c.out;
                op.ld = d.ldc;
            }
            c.ops.push_back(op);
            m->num_binary += op.takes_operand();
        }
        if (m->f32) {
            m->f32_be = &gemm::select_backend();
            if ((st = api::f32_matmul_panel_bytes(*m->f32_be, d.K, d.N, &m->panel_bytes)) !=
                anvil_success)
                return st;
        } else {
            m->panel_bytes = lowp::packed_b_bytes(m->kind, d.K, d.N);
        }
        int64_t total;
        // Column sums: one int32 per column of the panels (N rounded up to kNR).
        m->colsum_bytes = 0;
        if (m->kind == lowp::lp_kind::u8s8) {
            int64_t colsum_cols;
            if (!api::mul_ok(d.N / lowp::kNR + (d.N % lowp::kNR != 0), lowp::kNR, &colsum_cols) ||
                !api::mul_ok(colsum_cols, 4, &m->colsum_bytes))
                return anvil_size_overflow;
        }
        if (__builtin_add_overflow(int64_t(sizeof(packed_header)), m->panel_bytes, &total) ||
            __builtin_add_overflow(total, m->colsum_bytes, &total))
            return anvil_size_overflow;
        m->packed_bytes = total;
        *matmul = m.release();
        return anvil_success;
    } catch (const std::bad_alloc &) {
        return anvil_out_of_memory;
    }
}

anvil_status_t anvil_matmul_packed_weights_size(anvil_matmul_t matmul, size_t *bytes) {
    if (!matmul) return anvil_invalid_handle;
    if (!bytes) return anvil_null_pointer;
    if (!anvil::mem::fits_cap(matmul->packed_bytes)) return anvil_out_of_memory;
    *bytes = size_t(matmul->packed_bytes);
    return anvil_success;
}

anvil_status_t anvil_matmul_pack_weights(anvil_matmul_t matmul, const void *B, void *packed) {
    if (!matmul) return anvil_invalid_handle;
    if (!packed) return anvil_null_pointer;
    const anvil_matmul_desc_t &d = matmul->d;
    if (!B && d.K > 0 && d.N > 0) return anvil_null_pointer;
    if (reinterpret_cast<uintptr_t>(packed) % 4 != 0) return anvil_invalid_argument;
    if (!anvil::mem::fits_cap(matmul->packed_bytes)) return anvil_out_of_memory;
    auto *out = static_cast<uint8_t *>(packed);
    packed_header h{};
    std::memcpy(h.magic, kMagic, sizeof(kMagic));
    fill_header(*matmul, &h);
    uint8_t *panels = out + sizeof(h);
    if (matmul->f32) {
        api::f32_matmul_pack(*matmul->f32_be, matmul->tb, d.K, d.N, static_cast<const float *>(B),
                             d.ldb, reinterpret_cast<float *>(panels));
        std::memcpy(out, &h, sizeof(h));
        return anvil_success;
    }
    auto *colsum = h.has_colsum ? reinterpret_cast<int32_t *>(panels + matmul->panel_bytes) : nullptr;
    const int64_t np = d.N / lowp::kNR + (d.N % lowp::kNR != 0);  // no overflow for huge N with K = 0
    if (d.K > 0 && d.N > 0)
        lowp::pack_b(matmul->kind, matmul->tb, d.K, d.N, B, d.ldb, 0, np, panels, colsum);
    else if (colsum)
        std::memset(colsum, 0, size_t(matmul->colsum_bytes));
    std::memcpy(out, &h, sizeof(h));
    return anvil_success;
}

anvil_status_t anvil_matmul_execute(anvil_matmul_t matmul, const void *A, const void *packed,
                                    void *C, const void *const *binary_srcs) {
    if (!matmul) return anvil_invalid_handle;
    const anvil_matmul_desc_t &d = matmul->d;
    if (d.M == 0 || d.N == 0) return anvil_success;
    if (!C) return anvil_null_pointer;
    if (d.K > 0 && !A) return anvil_null_pointer;
    if (!packed) return anvil_bad_packed_buffer;
    if (reinterpret_cast<uintptr_t>(packed) % 4 != 0) return anvil_invalid_argument;
    packed_header h, want;
    std::memcpy(&h, packed, sizeof(h));
    fill_header(*matmul, &want);
    if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0 || h.kind != want.kind ||
        h.K != d.K || h.N != d.N || h.panel_bytes != matmul->panel_bytes ||
        h.f32_nr != want.f32_nr || h.f32_tier != want.f32_tier)
        return anvil_bad_packed_buffer;
    // One operand pointer per post-op (nullptr for eltwise ones).
    const void *srcs[ANVIL_MAX_POST_OPS] = {};
    if (matmul->num_binary > 0) {
        if (!binary_srcs) return anvil_null_pointer;
        int b = 0;
        for (size_t t = 0; t < matmul->chain.ops.size(); ++t) {
            if (!matmul->chain.ops[t].takes_operand()) continue;
            if (!binary_srcs[b]) return anvil_null_pointer;
            srcs[t] = binary_srcs[b++];
        }
    }
    for (size_t t = 0; t < matmul->chain.ops.size(); ++t)
        if (matmul->chain.ops[t].is_sum()) srcs[t] = C;  // sum reads C before storing it
    const auto *base = static_cast<const uint8_t *>(packed) + sizeof(h);
    if (matmul->f32) return execute_f32(*matmul, A, base, C, srcs);
    lowp::lp_problem p;
    p.kind = matmul->kind;
    p.a_elem = matmul->a_elem;
    p.transa = matmul->ta;
    p.transb = matmul->tb;
    p.M = d.M;
    p.N = d.N;
    p.K = d.K;
    p.A = A;
    p.lda = d.lda;
    p.packed_b = base;
    p.packed_colsum = matmul->colsum_bytes ? reinterpret_cast<const int32_t *>(base + h.panel_bytes) : nullptr;
    p.zero_product = d.K == 0;
    lowp::chain_epilogue epi(matmul->chain, C, d.ldc, srcs);
    const int vl = verbose::level();
    const double t0 = vl >= 2 ? verbose::now_seconds() : 0.0;
    const lowp::lp_backend *be = &lowp::select_lp_backend(p.kind);
    anvil_status_t st = lowp::run_lp_gemm(*be, p, epi);
    if (anvil::jit_state::retry_without_jit(st)) {  // nothing was written: again without the JIT
        be = &lowp::select_lp_backend(p.kind);
        st = lowp::run_lp_gemm(*be, p, epi);
    }
    if (vl >= 2) log_exec(*matmul, be->name(), st, t0);
    return st;
}

anvil_status_t anvil_matmul_destroy(anvil_matmul_t matmul) {
    if (!matmul) return anvil_invalid_handle;
    delete matmul;
    return anvil_success;
}

}  // extern "C"
