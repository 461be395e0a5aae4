// Packed weights are plain bytes (anvil.h): written to a file and mapped
// back read-only (PROT_READ, a page-aligned address other than the one
// they were packed at), they give the same results as the buffer they were
// packed into -- for the matmul handle in every type and for conv2d.  bf16
// and int8 matmul weights are also the same bytes under every ISA cap, so
// one mapped file serves handles made under each of them (the fp32
// panels depend on the kernel tier: another tier's handle refuses them).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "cpu/isa.h"
#include "test_util.h"

namespace {

// `bytes` written to an unlinked temporary file and mapped PROT_READ.
class read_only_file_map {
public:
    read_only_file_map(const void *bytes, size_t n) : n_(n) {
        const char *dir = std::getenv("TMPDIR");
        std::string path = std::string(dir && *dir ? dir : "/tmp") + "/anvil_packed_XXXXXX";
        fd_ = mkstemp(path.data());
        REQUIRE(fd_ >= 0);
        unlink(path.c_str());
        const auto *p = static_cast<const uint8_t *>(bytes);
        for (size_t done = 0; done < n;) {
            const ssize_t w = write(fd_, p + done, n - done);
            REQUIRE(w > 0);
            done += size_t(w);
        }
        map_ = mmap(nullptr, n, PROT_READ, MAP_PRIVATE, fd_, 0);
        REQUIRE(map_ != MAP_FAILED);
    }
    ~read_only_file_map() {
        if (map_ != MAP_FAILED) munmap(map_, n_);
        if (fd_ >= 0) close(fd_);
    }
    read_only_file_map(const read_only_file_map &) = delete;
    read_only_file_map &operator=(const read_only_file_map &) = delete;
    const void *data() const { return map_; }

private:
    size_t n_;
    int fd_ = -1;
    void *map_ = MAP_FAILED;
};

uint16_t bf16_of_int(int v) {
    const float f = float(v);  // small integers: exact in bf16
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return uint16_t(u >> 16);
}

struct matmul_case {
    const char *name;
    anvil_data_type_t a_dt, b_dt, c_dt;
    char transb;
    bool attrs;  // zero points, per-N scales, bias, relu
};

// Operands of small integers (every product sum exact in fp32, so every
// kernel tier gives the same bits).
struct matmul_data {
    anvil_matmul_desc_t d{};
    std::vector<uint8_t> A, B;
    std::vector<float> scales, bias;
    anvil_post_op_t relu{};
    size_t c_bytes = 0;
};

void make_matmul(const matmul_case &mc, tu::rng &r, matmul_data *m) {
    anvil_matmul_desc_t &d = m->d;
    d.a_dt = mc.a_dt;
    d.b_dt = mc.b_dt;
    d.c_dt = mc.c_dt;
    d.transa = 'N';
    d.transb = mc.transb;
    d.M = 37;
    d.N = 70;
    d.K = 131;  // not a multiple of 2 or 4
    d.lda = d.K;
    d.ldb = mc.transb == 'T' ? d.K : d.N;
    d.ldc = d.N;
    const size_t a_elems = size_t(d.M * d.K), b_elems = size_t(d.K * d.N);
    auto fill = [&](std::vector<uint8_t> &v, anvil_data_type_t dt, size_t n) {
        switch (dt) {
            case anvil_dt_f32: {
                v.resize(n * 4);
                for (size_t i = 0; i < n; ++i) {
                    const float f = float(r.ival(-4, 4));
                    std::memcpy(&v[i * 4], &f, 4);
                }
                break;
            }
            case anvil_dt_bf16: {
                v.resize(n * 2);
                for (size_t i = 0; i < n; ++i) {
                    const uint16_t b = bf16_of_int(int(r.ival(-4, 4)));
                    std::memcpy(&v[i * 2], &b, 2);
                }
                break;
            }
            case anvil_dt_u8:
                v.resize(n);
                for (auto &x : v) x = uint8_t(r.ival(0, 255));
                break;
            default:  // s8
                v.resize(n);
                for (auto &x : v) x = uint8_t(int8_t(r.ival(-128, 127)));
                break;
        }
    };
    fill(m->A, mc.a_dt, a_elems);
    fill(m->B, mc.b_dt, b_elems);
    if (mc.attrs) {
        d.a_zero_point = mc.a_dt == anvil_dt_u8 ? 9 : 0;
        if (mc.c_dt == anvil_dt_u8 || mc.c_dt == anvil_dt_s8) d.c_zero_point = 5;
        m->scales.resize(size_t(d.N));
        for (auto &s : m->scales) s = float(r.ival(1, 8)) / 4096.0f;  // powers of two times small ints
        d.scales = m->scales.data();
        d.scales_per_n = 1;
        m->bias.resize(size_t(d.N));
        for (auto &b : m->bias) b = float(r.ival(-20, 20));
        d.bias = m->bias.data();
        m->relu.kind = anvil_post_op_eltwise;
        m->relu.alg = anvil_eltwise_relu;
        d.num_post_ops = 1;
        d.post_ops = &m->relu;
    }
    const size_t c_elem = mc.c_dt == anvil_dt_f32 || mc.c_dt == anvil_dt_s32 ? 4 : mc.c_dt == anvil_dt_bf16 ? 2 : 1;
    m->c_bytes = size_t(d.M * d.N) * c_elem;
}

std::vector<uint8_t> run_matmul(anvil_matmul_t h, const matmul_data &m, const void *packed) {
    std::vector<uint8_t> C(m.c_bytes, 0xA5);
    REQUIRE(anvil_matmul_execute(h, m.A.data(), packed, C.data(), nullptr) == anvil_success);
    return C;
}

}  // namespace

TEST_SUITE("once") {
TEST_CASE("matmul: packed weights memory-mapped read-only from a file, under every ISA cap") {
    const matmul_case cases[] = {
        {"bf16 -> f32, B N", anvil_dt_bf16, anvil_dt_bf16, anvil_dt_f32, 'N', false},
        {"bf16 -> bf16, B T, attrs", anvil_dt_bf16, anvil_dt_bf16, anvil_dt_bf16, 'T', true},
        {"u8 s8 -> s8, B T, attrs", anvil_dt_u8, anvil_dt_s8, anvil_dt_s8, 'T', true},
        {"u8 s8 -> s32, B N", anvil_dt_u8, anvil_dt_s8, anvil_dt_s32, 'N', false},
        {"s8 s8 -> u8, B N, attrs", anvil_dt_s8, anvil_dt_s8, anvil_dt_u8, 'N', true},
        {"f32 -> f32, B N, attrs", anvil_dt_f32, anvil_dt_f32, anvil_dt_f32, 'N', true},
    };
    const anvil_isa_t initial = tu::initial_isa_cap();
    const anvil_isa_t caps[] = {anvil_isa_scalar, anvil_isa_avx2, anvil_isa_avx512_core,
                                anvil_isa_avx512_core_vnni, anvil_isa_avx512_core_bf16, anvil_isa_amx};
    tu::rng r(404);
    for (const matmul_case &mc : cases) {
        INFO(std::string(mc.name));
        matmul_data m;
        make_matmul(mc, r, &m);
        anvil::cpu::set_max_isa_for_test(initial);
        anvil_matmul_t h = nullptr;
        const anvil_status_t st = anvil_matmul_create(&h, &m.d);
        INFO(anvil_status_str(st));
        REQUIRE(st == anvil_success);
        size_t bytes = 0;
        REQUIRE(anvil_matmul_packed_weights_size(h, &bytes) == anvil_success);
        std::vector<uint8_t> packed(bytes + 64);
        uint8_t *at = packed.data() + (64 - reinterpret_cast<uintptr_t>(packed.data()) % 64) % 64;
        REQUIRE(anvil_matmul_pack_weights(h, m.B.data(), at) == anvil_success);
        const std::vector<uint8_t> want = run_matmul(h, m, at);
        const read_only_file_map file(at, bytes);
        CHECK(file.data() != static_cast<const void *>(at));
        CHECK(run_matmul(h, m, file.data()) == want);
        anvil_matmul_destroy(h);
        if (mc.b_dt == anvil_dt_f32) continue;  // tier-specific panels (anvil.h)
        for (anvil_isa_t cap : caps) {
            anvil::cpu::set_max_isa_for_test(cap);
            INFO("cap ", anvil_isa_name(cap), " effective ", anvil_isa_name(anvil::cpu::effective_tier(false)));
            anvil_matmul_t h2 = nullptr;
            REQUIRE(anvil_matmul_create(&h2, &m.d) == anvil_success);
            size_t bytes2 = 0;
            REQUIRE(anvil_matmul_packed_weights_size(h2, &bytes2) == anvil_success);
            CHECK(bytes2 == bytes);
            std::vector<uint8_t> packed2(bytes2);
            REQUIRE(anvil_matmul_pack_weights(h2, m.B.data(), packed2.data()) == anvil_success);
            CHECK(std::memcmp(packed2.data(), at, std::min(bytes, bytes2)) == 0);
            CHECK(run_matmul(h2, m, file.data()) == want);
            anvil_matmul_destroy(h2);
        }
        anvil::cpu::set_max_isa_for_test(initial);
    }
}

TEST_CASE("conv2d: packed weights memory-mapped read-only from a file, used by a second handle") {
    struct conv_case {
        const char *name;
        anvil_data_type_t src, wei, dst;
        int64_t IC, OC, G, K, S;
    };
    const conv_case cases[] = {
        {"f32 3x3", anvil_dt_f32, anvil_dt_f32, anvil_dt_f32, 24, 40, 1, 3, 1},
        {"bf16 1x1 stride 2", anvil_dt_bf16, anvil_dt_bf16, anvil_dt_bf16, 64, 48, 1, 1, 2},
        {"u8 s8 depthwise 3x3", anvil_dt_u8, anvil_dt_s8, anvil_dt_u8, 80, 80, 80, 3, 1},
        {"s8 s8 grouped 3x3", anvil_dt_s8, anvil_dt_s8, anvil_dt_s8, 32, 32, 4, 3, 2},
    };
    tu::rng r(505);
    for (const conv_case &cc : cases) {
        INFO(std::string(cc.name));
        anvil_conv2d_desc_t d{};
        d.src_dt = cc.src;
        d.wei_dt = cc.wei;
        d.dst_dt = cc.dst;
        d.N = 2;
        d.IC = cc.IC;
        d.OC = cc.OC;
        d.G = cc.G;
        d.IH = 11;
        d.IW = 9;
        d.KH = d.KW = cc.K;
        d.SH = d.SW = cc.S;
        d.pad_t = d.pad_l = d.pad_b = d.pad_r = cc.K / 2;
        d.OH = (d.IH + 2 * (cc.K / 2) - cc.K) / cc.S + 1;
        d.OW = (d.IW + 2 * (cc.K / 2) - cc.K) / cc.S + 1;
        const float scale = 1.0f / 64.0f;
        const bool int8 = cc.src != anvil_dt_f32 && cc.src != anvil_dt_bf16;
        if (int8) {
            d.scales = &scale;
            d.src_zero_point = cc.src == anvil_dt_u8 ? 100 : 0;
            d.dst_zero_point = cc.dst == anvil_dt_u8 ? 7 : 0;
        }
        const size_t src_n = size_t(d.N * d.IH * d.IW * d.IC);
        const size_t wei_n = size_t(d.OC * (d.IC / d.G) * d.KH * d.KW);
        const size_t dst_n = size_t(d.N * d.OH * d.OW * d.OC);
        auto esz = [](anvil_data_type_t t) {
            return t == anvil_dt_f32 ? size_t(4) : t == anvil_dt_bf16 ? size_t(2) : size_t(1);
        };
        auto fill = [&](anvil_data_type_t t, size_t n) {
            std::vector<uint8_t> v(n * esz(t));
            for (size_t i = 0; i < n; ++i) {
                const int x = int(r.ival(-3, 3));
                if (t == anvil_dt_f32) {
                    const float f = float(x);
                    std::memcpy(&v[i * 4], &f, 4);
                } else if (t == anvil_dt_bf16) {
                    const uint16_t b = bf16_of_int(x);
                    std::memcpy(&v[i * 2], &b, 2);
                } else if (t == anvil_dt_u8) {
                    v[i] = uint8_t(r.ival(0, 255));
                } else {
                    v[i] = uint8_t(int8_t(r.ival(-128, 127)));
                }
            }
            return v;
        };
        const std::vector<uint8_t> src = fill(cc.src, src_n), wei = fill(cc.wei, wei_n);
        anvil_conv2d_t h = nullptr, h2 = nullptr;
        REQUIRE(anvil_conv2d_create(&h, &d) == anvil_success);
        size_t bytes = 0;
        REQUIRE(anvil_conv2d_packed_weights_size(h, &bytes) == anvil_success);
        std::vector<uint32_t> packed(bytes / 4 + 16);
        REQUIRE(anvil_conv2d_pack_weights(h, wei.data(), anvil_conv_weights_oihw, packed.data()) == anvil_success);
        auto run = [&](anvil_conv2d_t c, const void *p) {
            std::vector<uint8_t> out(dst_n * esz(cc.dst), 0x5A);
            REQUIRE(anvil_conv2d_execute(c, src.data(), p, nullptr, out.data(), nullptr) == anvil_success);
            return out;
        };
        const std::vector<uint8_t> want = run(h, packed.data());
        const read_only_file_map file(packed.data(), bytes);
        CHECK(run(h, file.data()) == want);
        anvil_conv2d_destroy(h);  // the bytes outlive the handle that packed them
        REQUIRE(anvil_conv2d_create(&h2, &d) == anvil_success);
        CHECK(run(h2, file.data()) == want);
        anvil_conv2d_destroy(h2);
    }
}
}  // TEST_SUITE("once")
