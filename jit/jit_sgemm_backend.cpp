// The JIT AVX-512 fp32 backend: kernels generated on first use, cached by
// descriptor.
#include <cstring>

#include "cache/kernel_cache.h"
#include "cpu/isa.h"
#include "gemm/backend.h"
#include "jit/jit_sgemm_avx512.h"

namespace anvil::gemm {
namespace {

// Per-thread front of the kernel cache: a small direct-mapped table keyed
// by the 8 descriptor bytes, so a cached call costs no lock and no string.
// It holds its kernels alive, bounded by its size, after a global eviction.
class front_cache {
public:
    static constexpr int kSlots = 64;
    const cache::kernel_ptr *find(uint64_t key) {
        const uint64_t e = cache::epoch();
        if (e != epoch_) {  // the cache was cleared: forget what we held
            for (slot &s : slots_) s.k.reset();
            epoch_ = e;
        }
        const slot &s = slots_[index(key)];
        return (s.k && s.key == key) ? &s.k : nullptr;
    }
    void put(uint64_t key, cache::kernel_ptr k) {
        slot &s = slots_[index(key)];
        s.key = key;
        s.k = std::move(k);
    }

private:
    struct slot {
        uint64_t key = 0;
        cache::kernel_ptr k;
    };
    static int index(uint64_t key) {
        return int((key * 0x9E3779B97F4A7C15ull) >> 58);  // top 6 bits
    }
    slot slots_[kSlots];
    uint64_t epoch_ = 0;
};

thread_local front_cache t_front;

template <typename Desc>
uint64_t desc_bits(const Desc &d) {
    static_assert(sizeof(Desc) == sizeof(uint64_t), "descriptors are 8 bytes");
    uint64_t v;
    std::memcpy(&v, &d, sizeof(v));
    return v;
}

class jit_avx512_backend_t final : public backend {
public:
    const char *name() const override { return "jit:avx512_core"; }
    anvil_isa_t tier() const override { return anvil_isa_avx512_core; }
    int mr() const override { return jit::jit_sgemm_avx512::kMaxM; }
    int nr() const override { return jit::jit_sgemm_avx512::kMaxN; }
    int max_n(int m) const override { return jit::jit_sgemm_avx512::max_n(m); }

    anvil_status_t get(const ukernel_desc &desc, ukernel_ref *out) const override {
        if (desc.m < 1 || desc.m > mr() || desc.n < 1 || desc.n > max_n(desc.m))
            return anvil_invalid_argument;
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

private:
    // This thread's front cache, then the shared cache, generating the
    // kernel (jit_sgemm_avx512 has a constructor per descriptor type) on a
    // miss.
    template <typename Desc>
    static anvil_status_t lookup(const Desc &d, const char *key_prefix, uint64_t front_tag,
                                 ukernel_ref *out) {
        const uint64_t bits = desc_bits(d) | front_tag;
        if (const cache::kernel_ptr *hit = t_front.find(bits)) {
            cache::note_front_hit();
            fill(*hit, out);
            return anvil_success;
        }
        std::string key = key_prefix;
        key.append(reinterpret_cast<const char *>(&d), sizeof(d));
        cache::kernel_ptr k;
        anvil_status_t st = cache::get_or_generate(
            key,
            [&](cache::kernel_ptr *made) -> anvil_status_t {
                try {
                    jit::jit_sgemm_avx512 gen(d);
                    return gen.finalize(jit::jit_sgemm_avx512::kernel_name(d), made);
                } catch (const Xbyak::Error &) {
                    return anvil_jit_error;
                } catch (const std::bad_alloc &) {
                    return anvil_out_of_memory;
                }
            },
            &k);
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
