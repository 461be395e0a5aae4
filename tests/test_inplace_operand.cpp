// In-place residuals: a binary post-op whose M x N (dst-shaped) operand is
// the output buffer itself -- `out = op(x) + out` written into `out` --
// as inference graphs do to save a buffer.  Every element's operand must
// be read before anything writes it, on every path: the fp32 matmul
// accumulates K blocks in C (it now computes into scratch panels then),
// the lp kernels and the conv drivers finish each tile in one pass.
// Integer data: exact against a double reference (a bf16 output is the
// reference rounded to nearest even).
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "lowp_util.h"
#include "test_util.h"

namespace {

using lt::bf16_to_f32;
using lt::f32_to_bf16;

size_t elem_size(anvil_data_type_t t) {
    return t == anvil_dt_f32 || t == anvil_dt_s32 ? 4 : t == anvil_dt_bf16 ? 2 : 1;
}

// Stores small integer v as element i of a buffer of type t.
void put(std::vector<uint8_t> &buf, anvil_data_type_t t, size_t i, int v) {
    if (t == anvil_dt_f32) {
        const float f = float(v);
        std::memcpy(&buf[i * 4], &f, 4);
    } else if (t == anvil_dt_bf16) {
        const uint16_t b = f32_to_bf16(float(v));
        std::memcpy(&buf[i * 2], &b, 2);
    } else {
        buf[i] = uint8_t(v);  // u8, or s8 in two's complement
    }
}

// Element i of an f32 or bf16 output.
double get_out(const std::vector<uint8_t> &buf, anvil_data_type_t t, size_t i) {
    if (t == anvil_dt_f32) {
        float f;
        std::memcpy(&f, &buf[i * 4], 4);
        return f;
    }
    uint16_t b;
    std::memcpy(&b, &buf[i * 2], 2);
    return bf16_to_f32(b);
}

// The exact value as the output type stores it.
double as_out(anvil_data_type_t t, double v) {
    return t == anvil_dt_f32 ? v : double(bf16_to_f32(f32_to_bf16(float(v))));
}

struct type_case {
    const char *name;
    anvil_data_type_t a, b;
};
const type_case kTypes[] = {{"f32", anvil_dt_f32, anvil_dt_f32},
                            {"bf16", anvil_dt_bf16, anvil_dt_bf16},
                            {"u8 s8", anvil_dt_u8, anvil_dt_s8}};

// A source value for element i: small integers (u8: 0..2).
int src_val(anvil_data_type_t t, int64_t i) { return t == anvil_dt_u8 ? int(i * 7 % 3) : int(i * 7 % 3) - 1; }
int wei_val(int64_t i) { return int(i * 3 % 5) - 2; }

}  // namespace

TEST_CASE("matmul: a binary operand that is C itself (in-place residual add / mul)") {
    struct shape {
        int64_t M, N, K, ldc;
    };
    // One row; K blocks; several row panels; C rows padded past N.
    const shape shapes[] = {{1, 17, 5, 17}, {7, 130, 700, 130}, {50, 17, 3000, 20}, {300, 130, 700, 133}};
    int checked = 0;
    for (const type_case &tc : kTypes)
        for (anvil_data_type_t c_dt : {anvil_dt_f32, anvil_dt_bf16})
            for (int alg : {int(anvil_binary_add), int(anvil_binary_mul)})
                for (const shape &sh : shapes) {
                    INFO(std::string(tc.name), " -> ", c_dt == anvil_dt_f32 ? "f32" : "bf16",
                         alg == anvil_binary_add ? " add" : " mul", " M ", sh.M, " N ", sh.N, " K ", sh.K,
                         " ldc ", sh.ldc);
                    anvil_post_op_t op{};
                    op.kind = anvil_post_op_binary;
                    op.alg = alg;
                    op.src_dt = c_dt;
                    op.ld = sh.ldc;
                    anvil_matmul_desc_t d =
                        lt::matmul_desc(tc.a, tc.b, c_dt, 'N', 'N', sh.M, sh.N, sh.K, sh.K, sh.N, sh.ldc);
                    d.num_post_ops = 1;
                    d.post_ops = &op;
                    std::vector<uint8_t> A(size_t(sh.M * sh.K) * elem_size(tc.a)),
                        B(size_t(sh.K * sh.N) * elem_size(tc.b)), C(size_t(sh.M * sh.ldc) * elem_size(c_dt));
                    for (int64_t i = 0; i < sh.M * sh.K; ++i) put(A, tc.a, size_t(i), src_val(tc.a, i));
                    for (int64_t i = 0; i < sh.K * sh.N; ++i) put(B, tc.b, size_t(i), wei_val(i));
                    for (int64_t i = 0; i < sh.M * sh.ldc; ++i) put(C, c_dt, size_t(i), int(i % 5) - 2);
                    const std::vector<uint8_t> C0 = C;
                    const void *bins[1] = {C.data()};
                    REQUIRE(lt::packed_matmul(d, B.data()).execute(A.data(), C.data(), bins) == anvil_success);
                    int bad = 0;
                    for (int64_t i = 0; i < sh.M; ++i)
                        for (int64_t j = 0; j < sh.ldc; ++j) {
                            const size_t at = size_t(i * sh.ldc + j);
                            const double old = get_out(C0, c_dt, at);
                            if (j >= sh.N) {  // padding: untouched
                                bad += get_out(C, c_dt, at) != old;
                                continue;
                            }
                            double acc = 0;
                            for (int64_t k = 0; k < sh.K; ++k)
                                acc += double(src_val(tc.a, i * sh.K + k)) * double(wei_val(k * sh.N + j));
                            const double want = as_out(c_dt, alg == anvil_binary_add ? acc + old : acc * old);
                            bad += get_out(C, c_dt, at) != want;
                        }
                    CHECK(bad == 0);
                    ++checked;
                }
    MESSAGE(checked, " in-place matmuls checked");
}

TEST_CASE("conv2d: a binary operand that is dst itself (in-place residual add)") {
    struct shape {
        int64_t IC, OC, G, K, S, H;
    };
    // 3x3 (K segments, padding), 1x1 (GEMM path), depthwise, a small map,
    // the 3-channel stem (im2col rows).
    const shape shapes[] = {{64, 64, 1, 3, 1, 14}, {128, 256, 1, 1, 1, 14}, {32, 32, 32, 3, 1, 14},
                            {512, 128, 1, 1, 1, 7}, {3, 32, 1, 3, 2, 32}};
    int checked = 0;
    for (const type_case &tc : kTypes)
        for (anvil_data_type_t dst_dt : {anvil_dt_f32, anvil_dt_bf16})
            for (const shape &sh : shapes) {
                if (tc.a == anvil_dt_f32 && dst_dt == anvil_dt_bf16) continue;  // f32 conv: f32 out
                INFO(std::string(tc.name), " -> ", dst_dt == anvil_dt_f32 ? "f32" : "bf16", " ic ", sh.IC, " oc ",
                     sh.OC, " g ", sh.G, " k ", sh.K, " s ", sh.S, " h ", sh.H);
                anvil_conv2d_desc_t d =
                    tu::square_conv_desc(tc.a, tc.b, dst_dt, 1, sh.G, sh.IC, sh.OC, sh.H, sh.K, sh.S);
                anvil_post_op_t add{};
                add.kind = anvil_post_op_binary;
                add.alg = anvil_binary_add;
                add.src_dt = dst_dt;
                add.ld = d.OC;
                d.num_post_ops = 1;
                d.post_ops = &add;
                const int64_t icg = d.IC / d.G, ocg = d.OC / d.G;
                const int64_t src_n = d.IH * d.IW * d.IC, wei_n = d.OC * icg * d.KH * d.KW,
                              dst_n = d.OH * d.OW * d.OC;
                std::vector<uint8_t> src(size_t(src_n) * elem_size(tc.a)), wei(size_t(wei_n) * elem_size(tc.b)),
                    dst(size_t(dst_n) * elem_size(dst_dt));
                for (int64_t i = 0; i < src_n; ++i) put(src, tc.a, size_t(i), src_val(tc.a, i));
                for (int64_t i = 0; i < wei_n; ++i) put(wei, tc.b, size_t(i), wei_val(i));
                for (int64_t i = 0; i < dst_n; ++i) put(dst, dst_dt, size_t(i), int(i % 9) - 4);
                const std::vector<uint8_t> dst0 = dst;
                anvil_conv2d_t h = nullptr;
                REQUIRE(anvil_conv2d_create(&h, &d) == anvil_success);
                size_t bytes = 0;
                REQUIRE(anvil_conv2d_packed_weights_size(h, &bytes) == anvil_success);
                std::vector<uint32_t> packed(bytes / 4 + 1);
                REQUIRE(anvil_conv2d_pack_weights(h, wei.data(), anvil_conv_weights_oihw, packed.data()) ==
                        anvil_success);
                const void *bins[1] = {dst.data()};
                REQUIRE(anvil_conv2d_execute(h, src.data(), packed.data(), nullptr, dst.data(), bins) ==
                        anvil_success);
                anvil_conv2d_destroy(h);
                int bad = 0;
                for (int64_t oh = 0; oh < d.OH; ++oh)
                    for (int64_t ow = 0; ow < d.OW; ++ow)
                        for (int64_t oc = 0; oc < d.OC; ++oc) {
                            const int64_t g = oc / ocg;
                            double acc = 0;
                            for (int64_t ic = 0; ic < icg; ++ic)
                                for (int64_t kh = 0; kh < d.KH; ++kh)
                                    for (int64_t kw = 0; kw < d.KW; ++kw) {
                                        const int64_t ih = oh * d.SH - d.pad_t + kh, iw = ow * d.SW - d.pad_l + kw;
                                        if (ih < 0 || iw < 0 || ih >= d.IH || iw >= d.IW) continue;
                                        acc += double(src_val(tc.a, (ih * d.IW + iw) * d.IC + g * icg + ic)) *
                                               double(wei_val(((oc * icg + ic) * d.KH + kh) * d.KW + kw));
                                    }
                            const size_t at = size_t((oh * d.OW + ow) * d.OC + oc);
                            bad += get_out(dst, dst_dt, at) != as_out(dst_dt, acc + get_out(dst0, dst_dt, at));
                        }
                CHECK(bad == 0);
                ++checked;
            }
    MESSAGE(checked, " in-place convolutions checked");
}
