#include "lowp/lp_explain.h"

#include "lowp/lp_inplace.h"
#include "lowp/lp_ukernel.h"

namespace anvil::lowp {

std::string explain_lp_gemm(const lp_backend &be, const lp_problem &p) {
    const lp_blocking b = choose_lp_blocking(p);
    std::string s;
    if (inplace_path_applies(be, p)) {
        s = p.transb ? (be.dot_max_n(p.kind, 1) > 0
                            ? "path=inplace_dot (B read once in place, N x K rows; Highway dot kernels)"
                            : "path=inplace_dot (B read once in place, N x K rows; JIT dot kernels)")
                     : (be.rowb_cols(p.kind) > 0
                            ? "path=inplace_rowb (B read once in place, K x N rows; Highway row-B kernels)"
                            : "path=inplace_rowb (B read once in place, K x N rows; JIT row-B kernels)");
    } else {
        const int64_t m_blocks = (p.M + b.mc - 1) / b.mc;
        const char *pack_b = p.packed_b ? "prepacked"
                             : m_blocks == 1 ? "per_task (each panel packed by the task using it)"
                                             : "per_call (all panels before the tasks)";
        s = "path=packed tile=" + std::to_string(be.max_rows()) + "x" + std::to_string(kNR) +
            (be.uses_tiles() ? " (AMX tiles)" : "") +
            // Without B's zero point (BLAS-style calls' bo = 0, the usual case).
            " pack_a=" +
            (widen_bf16_a(be, p) ? "widened (bf16 -> fp32: two FMAs per pair, vdpbf16ps is slow here)"
             : a_read_in_place(be, p, false) ? "no (rows read in place)"
                                             : "yes") +
            " pack_b=" + pack_b;
    }
    s += " k_groups=" + std::to_string(b.kg) + " (" + std::to_string(group_k(p.kind)) +
         " per group) kcg=" + std::to_string(b.kcg) + " mc=" + std::to_string(b.mc) +
         " nc=" + std::to_string(b.nc) + " threads=" + std::to_string(b.nthreads);
    return s;
}

}  // namespace anvil::lowp
