// Highway fp32 micro-kernels (see hwy_sgemm.h and the contract in
// gemm/ukernel.h).  The file is compiled once per Highway target through
// foreach_target.h: everything in namespace HWY_NAMESPACE exists once per
// target, built with that target's function attributes (the library itself
// has no -march flags); the HWY_ONCE part at the end is built once and picks
// a target for anvil's ISA cap.

// The contract's epilogue is t = alpha * acc, then t + C: two roundings.
// GCC contracts a * b + c into an FMA by default in C++ (-ffp-contract=fast,
// even with -std=c++17) wherever the target has one, which changes the bits
// against the reference kernel.  Turn that off for everything in this file,
// before any header so that Highway's inline ops carry the same options as
// the kernels they are inlined into.  (Explicit MulAdd calls still fuse.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#elif defined(__clang__)
#pragma clang fp contract(off)
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cpu/isa.h"
#include "fallback/hwy_sgemm.h"
#include "gemm/backend.h"
#include "gemm/ukernel.h"
#include "ref/ref_ukernel.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "fallback/hwy_sgemm.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace anvil::fallback {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;
using M = hn::Mask<D>;

// ---------------------------------------------------------------- blocking
// A tile is MR rows x 2 vectors.  Per k step the kernel holds MR*2
// accumulators, the 2 B vectors and one broadcast of A: 2*MR + 3 registers.
// With 16 vector registers that allows MR = 6 (15 live, the 16th holds the
// tail mask on AVX2); with 32, MR = 12 (27 live; 13 would fit, but 12 is the
// JIT's block too, and the spare registers absorb the compiler's temporaries).
// Deeper blocks are pointless: 2*MR FMAs per 2 B loads + MR broadcasts
// already keep the FMA pipes, not the load ports, the bottleneck.
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL || HWY_ARCH_ARM_A64 || \
    HWY_ARCH_RVV || HWY_ARCH_PPC
constexpr int kMR = 12;
#else
constexpr int kMR = 6;
#endif
constexpr int kNV = 2;  // vectors per row of the tile

// ------------------------------------------------- exact multiply-add
// The contract needs a fused multiply-add (one rounding) so that every
// backend gives the same bits as std::fma.  Highway's MulAdd is fused only
// where HWY_NATIVE_FMA says so; SSSE3/SSE4/EMU128/SCALAR (and a few non-x86
// targets) emulate it as mul + add, two roundings.  There we fall back to std::fma
// per lane: exact, slow (a libm call each), and only reached on CPUs where
// anvil would otherwise run the scalar tier's equally slow std::fma.
HWY_INLINE V MulAddExact(V mul, V x, V add) {
#if HWY_NATIVE_FMA
    return hn::MulAdd(mul, x, add);
#else
    const D d;
    constexpr size_t kMax = hn::MaxLanes(D());
    HWY_ALIGN float m[kMax], xv[kMax], a[kMax];
    hn::Store(mul, d, m);
    hn::Store(x, d, xv);
    hn::Store(add, d, a);
    for (size_t i = 0; i < hn::Lanes(d); ++i) a[i] = std::fma(m[i], xv[i], a[i]);
    return hn::Load(d, a);
#endif
}

// ------------------------------------------------- partial loads/stores
// N tails must neither read B/C nor write C past column n-1: reading could
// fault at the end of the caller's matrix, and a read-modify-write of C's
// neighbouring columns would race with the thread that owns them.
// MaskedLoad/BlendedStore are true masked memory operations on AVX2 (32-bit
// lanes: vmaskmovps), AVX-512, SVE and RVV; elsewhere Highway implements
// MaskedLoad as a full load (HWY_MEM_OPS_MIGHT_FAULT), so we go through a
// stack buffer instead.  Sanitizer builds take the buffer path everywhere,
// as Highway does (it forces HWY_MEM_OPS_MIGHT_FAULT to 1 under ASan/MSan).
#if !HWY_MEM_OPS_MIGHT_FAULT || \
    (HWY_TARGET == HWY_AVX2 && !HWY_IS_ASAN && !HWY_IS_MSAN)
#define ANVIL_HWY_MASKED_MEM 1
#else
#define ANVIL_HWY_MASKED_MEM 0
#endif

HWY_INLINE V LoadTail(D d, M mask, const float *HWY_RESTRICT p, size_t count) {
#if ANVIL_HWY_MASKED_MEM
    (void)count;
    return hn::MaskedLoad(mask, d, p);
#else
    (void)mask;
    HWY_ALIGN float buf[hn::MaxLanes(D())] = {};
    std::memcpy(buf, p, count * sizeof(float));
    return hn::Load(d, buf);
#endif
}

HWY_INLINE void StoreTail(V v, D d, M mask, float *HWY_RESTRICT p, size_t count) {
#if ANVIL_HWY_MASKED_MEM
    (void)count;
    hn::BlendedStore(v, mask, d, p);
#else
    (void)mask;
    HWY_ALIGN float buf[hn::MaxLanes(D())];
    hn::Store(v, d, buf);
    std::memcpy(p, buf, count * sizeof(float));
#endif
}

// ------------------------------------------------------------- the tile
// One k step: acc(i, j) = fma(A(i,k), B(k, j-th vector), acc(i, j)).
// A(i, k) is a_rows[i][k] for row-major A (a_cs == 1), else ak[i] with ak
// pointing at column k of a packed or transposed A (a_rs == 1).  bk points
// at row k of the B panel.
template <int kM, int kVecs, bool kTail, bool kRowMajorA>
HWY_INLINE void KStep(D d, V (&acc)[kM][kVecs], const float *HWY_RESTRICT bk,
                      const float *const (&a_rows)[kM], const float *HWY_RESTRICT ak,
                      int64_t k, M tail_mask, size_t tail_count) {
    const size_t L = hn::Lanes(d);
    V b[kVecs];
    HWY_UNROLL(2)
    for (int j = 0; j < kVecs; ++j)
        b[j] = (kTail && j == kVecs - 1) ? LoadTail(d, tail_mask, bk + j * L, tail_count)
                                         : hn::LoadU(d, bk + j * L);
    HWY_UNROLL(16)
    for (int i = 0; i < kM; ++i) {
        const V a = hn::Set(d, kRowMajorA ? a_rows[i][k] : ak[i]);
        HWY_UNROLL(2)
        for (int j = 0; j < kVecs; ++j) acc[i][j] = MulAddExact(a, b[j], acc[i][j]);
    }
}

// The epilogue, in the contract's order, specialised on beta's kind and on
// whether alpha must be applied: the tests are made once per call, not once
// per output vector.  kBeta: 0 (C = t, C never loaded, so NaN or Inf there
// cannot leak), 1 (C = t + C), 2 (C = fma(beta, C, t)).
template <int kBeta, bool kScale, int kM, int kVecs, bool kTail>
HWY_INLINE void StoreTileAs(D d, V (&acc)[kM][kVecs], const gemm::ukernel_args *HWY_RESTRICT p,
                            M tail_mask, size_t tail_count) {
    const size_t L = hn::Lanes(d);
    const V valpha = hn::Set(d, p->alpha), vbeta = hn::Set(d, p->beta);
    float *HWY_RESTRICT c = p->c;
    const int64_t ldc = p->ldc;
    HWY_UNROLL(16)
    for (int i = 0; i < kM; ++i) {
        float *HWY_RESTRICT ci = c + i * ldc;
        HWY_UNROLL(2)
        for (int j = 0; j < kVecs; ++j) {
            const bool tail = kTail && j == kVecs - 1;
            V t = acc[i][j];
            if (kScale) t = hn::Mul(valpha, t);
            if (kBeta != 0) {
                const V cv = tail ? LoadTail(d, tail_mask, ci + j * L, tail_count)
                                  : hn::LoadU(d, ci + j * L);
                t = kBeta == 1 ? hn::Add(t, cv) : MulAddExact(vbeta, cv, t);
            }
            if (tail)
                StoreTail(t, d, tail_mask, ci + j * L, tail_count);
            else
                hn::StoreU(t, d, ci + j * L);
        }
    }
}

template <int kM, int kVecs, bool kTail>
HWY_INLINE void StoreTile(D d, V (&acc)[kM][kVecs], const gemm::ukernel_args *HWY_RESTRICT p,
                          M tail_mask, size_t tail_count) {
    const bool scale = p->alpha != 1.0f;  // alpha == 1: t = acc, as the reference
    if (p->beta == 0.0f) {
        if (scale)
            StoreTileAs<0, true, kM, kVecs, kTail>(d, acc, p, tail_mask, tail_count);
        else
            StoreTileAs<0, false, kM, kVecs, kTail>(d, acc, p, tail_mask, tail_count);
    } else if (p->beta == 1.0f) {
        if (scale)
            StoreTileAs<1, true, kM, kVecs, kTail>(d, acc, p, tail_mask, tail_count);
        else
            StoreTileAs<1, false, kM, kVecs, kTail>(d, acc, p, tail_mask, tail_count);
    } else {
        if (scale)
            StoreTileAs<2, true, kM, kVecs, kTail>(d, acc, p, tail_mask, tail_count);
        else
            StoreTileAs<2, false, kM, kVecs, kTail>(d, acc, p, tail_mask, tail_count);
    }
}

// An m x n tile with m = kM and n in ((kVecs-1)*L, kVecs*L]; kTail when the
// last vector is partial (kTail is also used for n == L with one vector,
// which costs only the mask).
// Not inlined into Kernel: one call per tile is noise, and each variant gets
// its own register allocation (and can be read on its own in a disassembly).
template <int kM, int kVecs, bool kTail, bool kRowMajorA>
HWY_NOINLINE void Tile(const gemm::ukernel_args *HWY_RESTRICT p) {
    const D d;
    const size_t L = hn::Lanes(d);
    const int64_t K = p->k;
    const int64_t ldb = p->b_ld;
    const size_t tail_count = static_cast<size_t>(p->n) - (kVecs - 1) * L;
    const M tail_mask = hn::FirstN(d, tail_count);

    V acc[kM][kVecs];
    HWY_UNROLL(16)
    for (int i = 0; i < kM; ++i) {
        HWY_UNROLL(2)
        for (int j = 0; j < kVecs; ++j) acc[i][j] = hn::Zero(d);
    }

    // Row pointers for row-major A (A(i,k) = row_i[k]); for k-strided A the
    // column pointer advances by a_cs and rows are adjacent (a_rs == 1).
    const float *a_rows[kM];
    HWY_UNROLL(16)
    for (int i = 0; i < kM; ++i) a_rows[i] = p->a + (kRowMajorA ? i * p->a_rs : i);
    const float *HWY_RESTRICT ak = p->a;
    const int64_t a_cs = p->a_cs;
    const float *HWY_RESTRICT bk = p->b;

    // K unrolled by 4 with the compiler's unroller rather than by hand:
    // the accumulators already form 2*kM independent FMA chains, so the
    // unroll only trims loop overhead.  Written out in the source (four
    // KStep calls with bk + ldb, bk + 2*ldb, ...), GCC 12 keeps extra
    // address registers live and spills accumulators in the 6x16 AVX2 tile;
    // the pragma gives the clean 2 loads + 6 broadcasts + 12 FMAs per k.
    HWY_UNROLL(4)
    for (int64_t k = 0; k < K; ++k) {
        KStep<kM, kVecs, kTail, kRowMajorA>(d, acc, bk, a_rows, ak, k, tail_mask, tail_count);
        bk += ldb;
        ak += a_cs;
    }

    StoreTile<kM, kVecs, kTail>(d, acc, p, tail_mask, tail_count);
}

// The kernel for kM rows: picks the tile variant for this call's n and A
// layout (two well-predicted branches per call, against K * kM * 2 FMAs).
template <int kM>
void Kernel(const gemm::ukernel_args *p) {
    const D d;
    const int64_t L = static_cast<int64_t>(hn::Lanes(d));
    const int64_t n = p->n;
    if (p->a_cs == 1) {
        if (n == 2 * L)
            Tile<kM, 2, false, true>(p);
        else if (n > L)
            Tile<kM, 2, true, true>(p);
        else
            Tile<kM, 1, true, true>(p);
    } else if (p->a_rs == 1) {
        if (n == 2 * L)
            Tile<kM, 2, false, false>(p);
        else if (n > L)
            Tile<kM, 2, true, false>(p);
        else
            Tile<kM, 1, true, false>(p);
    } else {
        // The contract has one unit stride; should a caller break it, the
        // reference kernel still gives the contract's bits.
        ref::sgemm_ukernel(p);
    }
}

template <size_t... I>
constexpr std::array<gemm::ukernel_fn, sizeof...(I)> MakeKernels(std::index_sequence<I...>) {
    return {{&Kernel<int(I) + 1>...}};
}

// Exported (one instance per target; see the dispatch tables below).
void DescribeTarget(hwy_target_kernels *out) {
    const D d;
    out->target = HWY_TARGET;
    out->mr = kMR;
    out->nr = static_cast<int>(kNV * hn::Lanes(d));
}

gemm::ukernel_fn GetKernel(int m, int n) {
    static constexpr std::array<gemm::ukernel_fn, kMR> kKernels =
        MakeKernels(std::make_index_sequence<kMR>());
    const D d;
    if (m < 1 || m > kMR || n < 1 || n > static_cast<int>(kNV * hn::Lanes(d))) return nullptr;
    return kKernels[size_t(m - 1)];
}

}  // namespace HWY_NAMESPACE
}  // namespace anvil::fallback
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "fallback/hwy_dispatch_index.h"
namespace anvil::fallback {

HWY_EXPORT(DescribeTarget);
HWY_EXPORT(GetKernel);

namespace {

// Fills *out for compiled target t; false if the tables do not hold it (a
// layout we do not understand): DescribeTarget reports its own HWY_TARGET,
// which guards the index arithmetic of hwy_dispatch_index.h.
bool describe(int64_t t, hwy_target_kernels *out) {
    size_t idx = 0;
    if ((t & HWY_TARGETS) == 0 || !hwy_dispatch_index(t, &idx)) return false;
    const auto describe_fn = HWY_DISPATCH_TABLE(DescribeTarget)[idx];
    const auto get_fn = HWY_DISPATCH_TABLE(GetKernel)[idx];
    if (!describe_fn || !get_fn) return false;
    hwy_target_kernels k;
    describe_fn(&k);
    if (k.target != t) return false;
    k.name = hwy::TargetName(t);
    k.get = get_fn;
    *out = k;
    return true;
}

class hwy_backend_t final : public gemm::backend {
public:
    explicit hwy_backend_t(const hwy_target_kernels &k)
        : k_(k), name_(std::string("hwy:") + k.name) {
        // One kernel per row count serves every n; its name says so.  The
        // backend is never destroyed, so these stay valid for ukernel_ref.
        for (int m = 1; m <= k.mr; ++m)
            kernel_names_.push_back(name_ + ":sgemm_" + std::to_string(m) + "x(1.." +
                                    std::to_string(k.nr) + ")");
    }
    const char *name() const override { return name_.c_str(); }
    // Whatever the target, this is the backend of the avx2 tier (and of
    // CPUs the tiers do not describe).
    anvil_isa_t tier() const override { return anvil_isa_avx2; }
    int mr() const override { return k_.mr; }
    int nr() const override { return k_.nr; }
    anvil_status_t get(const gemm::ukernel_desc &desc, gemm::ukernel_ref *out) const override {
        const gemm::ukernel_fn fn = k_.get(desc.m, desc.n);
        if (!fn) return anvil_invalid_argument;
        out->fn = fn;
        out->keep_alive.reset();  // static code
        out->name = kernel_names_[size_t(desc.m) - 1].c_str();
        return anvil_success;
    }

private:
    hwy_target_kernels k_;
    std::string name_;
    std::vector<std::string> kernel_names_;
};

// One backend object per target, made on first use and never destroyed
// (callers keep raw pointers; no static-destruction-order hazards).  The
// driver asks on every GEMM, so the common path is one acquire load.
const gemm::backend *backend_for_target(int64_t t) {
    static std::mutex mu;
    static std::atomic<const hwy_backend_t *> slots[64];
    std::atomic<const hwy_backend_t *> &slot =
        slots[hwy::Num0BitsBelowLS1Bit_Nonzero64(static_cast<uint64_t>(t))];
    if (const hwy_backend_t *b = slot.load(std::memory_order_acquire)) return b;
    std::lock_guard<std::mutex> lock(mu);
    if (const hwy_backend_t *b = slot.load(std::memory_order_relaxed)) return b;
    hwy_target_kernels k;
    if (!describe(t, &k)) return nullptr;
    const hwy_backend_t *b = new hwy_backend_t(k);
    slot.store(b, std::memory_order_release);
    return b;
}

// hwy::SupportedTargets() re-runs CPUID on every call (about 60 us on the
// development VM, where CPUID traps to the hypervisor) and the driver asks
// for a backend on every GEMM, so the backend uses a snapshot taken once.
// compiled_targets() asks afresh so that tests can narrow it with
// hwy::SetSupportedTargetsForTest.  (Hence hwy::DisableTargets() after the
// first GEMM does not affect anvil.)
int64_t supported_once() {
    static const int64_t s = hwy::SupportedTargets();
    return s;
}

}  // namespace

int64_t allowed_targets(anvil_isa_t tier) {
    const int64_t fallback = HWY_EMU128 | HWY_SCALAR;
    if (tier >= anvil_isa_avx512_core) return ~int64_t(0);
    if (tier == anvil_isa_scalar) return fallback;
#if HWY_ARCH_X86
    // The avx2 tier: nothing that executes AVX-512 instructions.
    return HWY_AVX2 | HWY_SSE4 | HWY_SSSE3 | fallback;
#else
    // The tiers describe x86; elsewhere avx2 just means "SIMD allowed".
    return ~int64_t(0);
#endif
}

std::vector<hwy_target_kernels> compiled_targets() {
    std::vector<hwy_target_kernels> out;
    // Lower bits are better targets, so this lists the best first.
    for (int64_t bits = hwy::SupportedTargets() & HWY_TARGETS; bits != 0; bits &= bits - 1) {
        hwy_target_kernels k;
        if (describe(bits & -bits, &k)) out.push_back(k);
    }
    return out;
}

const gemm::backend *highway_backend_for(int64_t supported, anvil_isa_t tier) {
    const int64_t usable = supported & HWY_TARGETS & allowed_targets(tier);
    for (int64_t bits = usable; bits != 0; bits &= bits - 1)
        if (const gemm::backend *b = backend_for_target(bits & -bits)) return b;
    return nullptr;
}

}  // namespace anvil::fallback

namespace anvil::gemm {

// The cap is read without freezing it: the driver has already frozen it
// through select_backend, and tools/tests may ask before computing.
const backend *highway_backend() {
    return fallback::highway_backend_for(fallback::supported_once(), cpu::effective_tier(false));
}

const backend *highway_backend_at(anvil_isa_t tier) {
    return fallback::highway_backend_for(fallback::supported_once(), tier);
}

}  // namespace anvil::gemm
#endif  // HWY_ONCE
