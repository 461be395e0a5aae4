// anvil_explain_gemm: what anvil would do for a GEMM of any type, as text.
#include <algorithm>
#include <cstring>
#include <string>

#include "anvil/anvil.h"
#include "api/post_op_map.h"
#include "api/validate.h"
#include "lowp/lp_backend.h"
#include "lowp/lp_driver.h"
#include "lowp/lp_explain.h"
#include "threading/parallel.h"

namespace {

using namespace anvil;

anvil_status_t copy_out(const std::string &s, char *buf, size_t size, size_t *needed) {
    if (needed) *needed = s.size() + 1;
    if (size > 0) {
        const size_t n = std::min(size - 1, s.size());
        std::memcpy(buf, s.data(), n);
        buf[n] = '\0';
    }
    return anvil_success;
}

// The packed-weights size of a matmul handle for this problem (the
// handle's own query, so the figure is the one a caller would allocate).
std::string packed_weights(anvil_data_type_t a_dt, anvil_data_type_t b_dt, char ta, char tb,
                           int64_t M, int64_t N, int64_t K) {
    anvil_matmul_desc_t d{};
    d.a_dt = a_dt;
    d.b_dt = b_dt;
    d.c_dt = b_dt == anvil_dt_bf16 ? anvil_dt_f32 : anvil_dt_s32;
    d.transa = ta;
    d.transb = tb;
    d.M = M;
    d.N = N;
    d.K = K;
    d.lda = std::max<int64_t>(1, (ta == 'N' || ta == 'n') ? K : M);
    d.ldb = std::max<int64_t>(1, (tb == 'N' || tb == 'n') ? N : K);
    d.ldc = std::max<int64_t>(1, N);
    anvil_matmul_t mm = nullptr;
    anvil_status_t st = anvil_matmul_create(&mm, &d);
    if (st != anvil_success) return std::string("n/a (") + anvil_status_str(st) + ")";
    size_t bytes = 0;
    st = anvil_matmul_packed_weights_size(mm, &bytes);
    anvil_matmul_destroy(mm);
    if (st != anvil_success) return std::string("n/a (") + anvil_status_str(st) + ")";
    return std::to_string(bytes);
}

}  // namespace

extern "C" {

anvil_status_t anvil_explain_gemm(anvil_data_type_t a_dt, anvil_data_type_t b_dt, char transa,
                                  char transb, int64_t M, int64_t N, int64_t K, char *buf,
                                  size_t size, size_t *needed) {
    if (!api::valid_dt(a_dt) || !api::valid_dt(b_dt)) return anvil_invalid_argument;
    const int a = api::enum_value(a_dt), b = api::enum_value(b_dt);
    if (a == anvil_dt_f32 && b == anvil_dt_f32)
        return anvil_explain_sgemm(transa, transb, M, N, K, buf, size, needed);
    const bool bf16 = a == anvil_dt_bf16 && b == anvil_dt_bf16;
    const bool int8 = (a == anvil_dt_u8 || a == anvil_dt_s8) && b == anvil_dt_s8;
    if (!bf16 && !int8) return anvil_unsupported;
    if (!buf && size > 0) return anvil_null_pointer;
    bool ta = false, tb = false;
    const int64_t lda = std::max<int64_t>(1, (transa == 'T' || transa == 't') ? M : K);
    const int64_t ldb = std::max<int64_t>(1, (transb == 'T' || transb == 't') ? K : N);
    const int elem = bf16 ? 2 : 1;
    if (const anvil_status_t st = api::check_gemm_shape(transa, transb, M, N, K, lda, ldb,
                                                        std::max<int64_t>(1, N), elem, elem, 4, &ta, &tb);
        st != anvil_success)
        return st;
    const lowp::lp_kind kind = bf16 ? lowp::lp_kind::bf16 : lowp::lp_kind::u8s8;
    const lowp::lp_backend &be = lowp::select_lp_backend(kind);
    lowp::lp_problem p;
    p.kind = kind;
    p.a_elem = bf16 ? lowp::lp_elem::bf16 : a == anvil_dt_s8 ? lowp::lp_elem::s8 : lowp::lp_elem::u8;
    p.transa = ta;
    p.transb = tb;
    p.M = M;
    p.N = N;
    p.K = K;
    p.lda = lda;  // packed tightly, as the explained call's arguments are assumed to be
    p.ldb = ldb;
    p.zero_product = K == 0;
    const std::string dt = std::string(api::dt_name(a_dt)) + api::dt_name(b_dt) + (bf16 ? "f32" : "s32");
    const std::string shape = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
    std::string s = "op=gemm dt=" + dt + " trans=" + std::string(1, ta ? 'T' : 'N') +
                    std::string(1, tb ? 'T' : 'N') + ",shape=" + shape + "\n";
    s += "backend=" + std::string(be.name()) + " isa=" + anvil_isa_name(be.tier()) +
         " threads=" + std::to_string(threading::num_threads()) + "\n";
    if (M > 0 && N > 0) {
        s += std::string(bf16 ? "anvil_gemm_bf16bf16f32" : a == anvil_dt_s8 ? "anvil_gemm_s8s8s32"
                                                                             : "anvil_gemm_u8s8s32") +
             ": " + lowp::explain_lp_gemm(be, p) + "\n";
        static const uint8_t dummy = 0;  // marks B as prepacked; never read
        p.packed_b = &dummy;
        s += "matmul handle (prepacked weights): " + lowp::explain_lp_gemm(be, p) +
             " packed_weights_bytes=" + packed_weights(a_dt, b_dt, transa, transb, M, N, K) + "\n";
    } else {
        s += "empty product: nothing runs\n";
    }
    return copy_out(s, buf, size, needed);
}

}  // extern "C"
