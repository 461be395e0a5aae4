// The JIT AVX-512 fp32 backend: kernels generated on first use, cached by
// descriptor.
#include "cache/kernel_cache.h"
#include "cpu/isa.h"
#include "gemm/backend.h"
#include "jit/jit_front_cache.h"
#include "jit/jit_sgemm_avx512.h"
#include "jit/jit_smm_avx512.h"

namespace anvil::gemm {
namespace {

// This thread's front of the kernel cache for fp32 kernels (jit_front_cache.h).
thread_local jit::front_cache t_front;

class jit_avx512_backend_t final : public backend {
public:
    const char *name() const override { return "jit:avx512_core"; }
    anvil_isa_t tier() const override { return anvil_isa_avx512_core; }
    int mr() const override { return jit::jit_sgemm_avx512::kMaxM; }
    int nr() const override { return jit::jit_sgemm_avx512::kMaxN; }
    int max_n(int m) const override { return jit::jit_sgemm_avx512::max_n(m); }
    // 12-row tiles: up to 128 rows, B read in place beats copying it (the
    // copy of a 4096 x 11008 B went to memory and back once per K block;
    // measured Zen 5, 1 thread: 64x11008x4096 0.73x -> 0.96x dnnl_sgemm,
    // 128x11008x4096 0.87x -> 1.01x, 256 rows worse in place), with the
    // L1-sized K blocks (short ones cost 10-20% at M = 4..16).
    // Intel (a Xeon VM, family 6 model 207, 48 KiB L1d, 1 thread, in-process
    // A/B against the Zen 5 policy): a row stride that is a multiple of
    // 2 KiB puts an L1-sized strip (kc = 373 rows of 128 bytes) into one
    // or two L1 sets, and this core's L1 then misses on every row; K
    // blocks of 128 rows: 1 / 4 / 16 / 64 / 128 x 4096 x 4096 +32 / +16 /
    // +35 / +51 / +51%, 16 x 4096 x 11008 +56%, 64 x 11008 x 4096 +47%;
    // for B streamed from memory, up to 16 rows, 64 rows: a further +4 /
    // 0 / +7 / +13% (1 / 4 / 16 x 4096 x 4096, 16 x 4096 x 11008).  Rows
    // that spread over the sets keep the L1-sized blocks (64 x 4099 x 1000
    // lost 3-4% at 128).
    in_place_b_policy in_place_b() const override {
        in_place_b_policy p{128, 0, 0, 0, 128, 0};
        static const bool intel = cpu::info().vendor == "GenuineIntel";  // once: read per call
        if (intel) {
            p.kc_cap_aliased = 128;
            p.few_rows = 16;
            p.kc_cap_few_rows = 64;
        }
        return p;
    }
    bool supports_k_segments() const override { return true; }

    anvil_status_t get(const ukernel_desc &desc, ukernel_ref *out) const override {
        if (desc.m < 1 || desc.m > mr() || desc.n < 1 || desc.n > max_n(desc.m))
            return anvil_invalid_argument;
        if ((desc.flags & ~(kUkFlagKSegments | kUkFlagRowTiles | kUkFlagBias | kUkFlagNtStore)) != 0 ||
            ((desc.flags != 0 || desc.epi_ops != 0) && desc.a != a_access::row_major) ||
            ((desc.flags & kUkFlagNtStore) && desc.beta != beta_kind::zero))
            return anvil_unsupported;
        // The fused epilogue: at most one eltwise op and one residual add,
        // and its constants need the registers above 24 accumulators.
        if ((desc.flags & kUkFlagBias) || desc.epi_ops) {
            const uint8_t op0 = uk_epi_op(desc.epi_ops, 0), op1 = uk_epi_op(desc.epi_ops, 1);
            const int nv = (desc.n + 15) / 16;
            if ((desc.epi_ops & 0xc0) || op0 > kUkEpiAdd || op1 > kUkEpiAdd ||
                (op0 == kUkEpiNone && op1 != kUkEpiNone) ||
                (op1 != kUkEpiNone && (op0 == kUkEpiAdd) == (op1 == kUkEpiAdd)) ||
                desc.m * nv > 24)
                return anvil_unsupported;
        }
        ukernel_desc d = desc;
        d.tier = uint8_t(anvil_isa_avx512_core);
        return lookup(d, "sgemm:", 0, out);
    }

    anvil_status_t get_small(const small_gemm_desc &desc, ukernel_ref *out) const override {
        if (desc.M < 1 || desc.M > kSmallGemmMax || desc.N < 1 || desc.N > kSmallGemmMax)
            return anvil_unsupported;
        small_gemm_desc d = desc;
        d.tier = uint8_t(anvil_isa_avx512_core);
        // Front-cache keys of whole-GEMM kernels differ from tile kernels'
        // in the top bit (the last byte of every descriptor is a reserved 0).
        return lookup(d, "sgemm_small:", 1ull << 63, out);
    }

    // Direct kernels are made once per anvil_smm handle, so they skip the
    // front cache (their descriptor is not 8 bytes); the shared cache still
    // makes each one once.
    anvil_status_t get_direct(const direct_gemm_desc &desc, direct_kernel_ref *out) const override {
        if (desc.M < 1 || desc.M > kSmallGemmMax || desc.N < 1 || desc.N > kSmallGemmMax ||
            desc.K < 1 || !jit::jit_smm_avx512::displacements_fit(desc))
            return anvil_unsupported;
        direct_gemm_desc d = desc;
        d.tier = uint8_t(anvil_isa_avx512_core);
        cache::kernel_ptr k;
        const anvil_status_t st = jit::shared_kernel<jit::jit_smm_avx512>(d, "smm:", &k);
        if (st != anvil_success) return st;
        out->fn = reinterpret_cast<direct_gemm_fn>(const_cast<void *>(k->entry()));
        out->name = k->name().c_str();
        out->keep_alive = k;
        return anvil_success;
    }

private:
    // This thread's front cache, then the shared cache, generating the
    // kernel (jit_sgemm_avx512 has a constructor per descriptor type) on a
    // miss.
    template <typename Desc>
    static anvil_status_t lookup(const Desc &d, const char *key_prefix, uint64_t front_tag,
                                 ukernel_ref *out) {
        const uint64_t bits = jit::desc_bits(d) | front_tag;
        if (const cache::kernel_ptr *hit = t_front.find(bits)) {
            cache::note_front_hit();
            fill(*hit, out);
            return anvil_success;
        }
        cache::kernel_ptr k;
        const anvil_status_t st = jit::shared_kernel<jit::jit_sgemm_avx512>(d, key_prefix, &k);
        if (st != anvil_success) return st;
        fill(k, out);
        t_front.put(bits, std::move(k));
        return anvil_success;
    }

    static void fill(const cache::kernel_ptr &k, ukernel_ref *out) {
        out->fn = reinterpret_cast<ukernel_fn>(const_cast<void *>(k->entry()));
        out->name = k->name().c_str();
        out->keep_alive = k;
    }
};

}  // namespace

const backend *jit_avx512_backend() {
    if (!cpu::has(cpu::f_avx512_core)) return nullptr;
    static const jit_avx512_backend_t b;
    return &b;
}

}  // namespace anvil::gemm
