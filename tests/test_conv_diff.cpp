// anvil_conv2d against the scalar reference (tests/conv_ref.h) and oneDNN's
// convolution primitive, on the shape lists under tools/inputs/ (conv_tails,
// conv_resnet50, conv_mobilenet_v2), for every supported type combination,
// both weight layouts, with and without bias, scales, zero points and
// post-op chains.
//
// Exactness: integer-valued fills (|src|, |w| <= 4 for f32 / bf16, so every
// partial sum of K <= 4608 products stays an integer below 2^24; int8 is
// exact anyway) make the accumulator exact in any order, and the chain is
// emulated in fp32 bit for bit (conv_ref.h), so results are compared with
// == (ints and bf16 too) unless a transcendental post-op is in the chain,
// which is held to its documented bound (docs/postops.md).  Random
// fractions (f32, bf16) are held to gamma_{K+3} * sum |products|.
//
// Where the expected values come from:
//   reference: the scalar reference for every element (tails, small cases);
//   onednn:    the model layers: oneDNN computes the bare accumulator of
//              every element (s32 / f32 dst, no attributes: exact for these
//              fills), which is checked against the scalar reference on
//              sampled pixels, and the reference chain is applied to it
//              (builds without oneDNN, onednn_peer.h: as `samples`);
//   samples:   random fractions on model layers: the reference on sampled
//              pixels only.
// oneDNN with the same attributes is a second peer, held to the same
// expected values (its own eltwise bound, benchdnn's 4e-6; an integer
// output may round an exact .5 tie the other way).  The reference itself
// is checked against oneDNN's bare accumulators and against a scatter-form
// direct convolution written independently of it.
//
// oneDNN 2.6 quirks worked around (both reproduced on the matmul):
//  - it adds the bias before the output scale ((acc + bias) * scale); anvil
//    follows the header (acc * scale + bias), so oneDNN gets bias / scale
//    when the scales are powers of two (exact) and is no peer when bias and
//    other scales meet;
//  - a chain with two relu-family ops of different slopes reuses the first
//    slope: no peer for those chains.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "anvil/anvil.h"
#include "conv/conv_descriptor.h"
#include "conv/conv_dw.h"
#include "conv/dw_backend.h"
#include "cpu/isa.h"
#include "conv_ref.h"
#include "lowp_util.h"
#include "onednn_peer.h"
#include "test_util.h"

namespace {

using dt = anvil_data_type_t;
using anvil::conv::conv_shape;

// ------------------------------------------------------------ shape lists

std::string inputs_dir() {
    if (const char *e = std::getenv("ANVIL_CONV_INPUTS")) return e;
    std::string f = __FILE__;  // <root>/tests/test_conv_diff.cpp
    f = f.substr(0, f.rfind('/'));
    return f.substr(0, f.rfind('/')) + "/tools/inputs";
}

std::vector<conv_shape> load_shapes(const std::string &file) {
    const std::string path = inputs_dir() + "/" + file;
    std::ifstream in(path);
    INFO("shape list ", path, " (set ANVIL_CONV_INPUTS to the tools/inputs directory)");
    REQUIRE(in.good());
    std::vector<conv_shape> out;
    std::string line;
    while (std::getline(in, line)) {
        const size_t h = line.find('#');
        if (h != std::string::npos) line = line.substr(0, h);
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        conv_shape s;
        std::string err;
        INFO(line);
        REQUIRE_MESSAGE(anvil::conv::parse_conv_descriptor(line, &s, &err), err);
        out.push_back(s);
    }
    REQUIRE(!out.empty());
    return out;
}

int multiplicity(const std::string &name) {
    const size_t star = name.rfind('*');
    return star == std::string::npos ? 1 : std::atoi(name.c_str() + star + 1);
}

// ------------------------------------------------------------ cases

enum class fill { small_int, fraction, full_range };
enum class acc_src { reference, onednn, samples };

struct conv_cfg {
    conv_shape s;
    dt src = anvil_dt_f32, wei = anvil_dt_f32, dst = anvil_dt_f32;
    anvil_conv_weights_layout_t layout = anvil_conv_weights_oihw;
    bool bias = false;
    int scale_mode = 0;  // 0 none, 1 per tensor, 2 per OC
    bool pow2_scales = true;
    int32_t szp = 0, dzp = 0;
    std::vector<anvil_post_op_t> ops;  // binary: ld holds the padding past OC
    fill f = fill::small_int;
    acc_src acc = acc_src::reference;
    bool peer = true;
    std::string str() const {
        std::ostringstream o;
        o << anvil::conv::format_conv_descriptor(s) << " types=" << src << "," << wei << "," << dst
          << " layout=" << (layout == anvil_conv_weights_oihw ? "oihw" : "hwio") << " bias=" << bias
          << " scales=" << scale_mode << (pow2_scales ? "p2" : "") << " zp=" << szp << "/" << dzp
          << " fill=" << int(f) << " acc=" << int(acc) << " ops=";
        for (const auto &op : ops)
            if (op.kind == anvil_post_op_sum)
                o << "sum:" << op.alpha << ":" << op.beta << ",";
            else
                o << (op.kind == anvil_post_op_binary ? "b" : "e") << op.alg
                  << (op.kind == anvil_post_op_binary ? (op.per_n ? "n" : "t") : "") << ",";
        return o.str();
    }
};

using lt::binary;
using lt::eltwise;
using lt::two_relu_slopes;

// A typed buffer, 64-byte aligned, with `margin` guard bytes of 0xA5 on
// both sides (outputs: nothing outside the tensor may change).
struct tbuf {
    std::vector<uint8_t> raw;
    size_t bytes = 0;
    static constexpr size_t margin = 128;
    uint8_t *p = nullptr;
    tbuf() = default;
    tbuf(int64_t count, dt t) { reset(count, t); }
    // Copies keep the contents and guards (p points into their own bytes).
    tbuf(const tbuf &o) : raw(o.raw), bytes(o.bytes), p(o.p ? raw.data() + (o.p - o.raw.data()) : nullptr) {}
    tbuf &operator=(const tbuf &o) {
        if (this != &o) {
            raw = o.raw;
            bytes = o.bytes;
            p = o.p ? raw.data() + (o.p - o.raw.data()) : nullptr;
        }
        return *this;
    }
    tbuf(tbuf &&) = default;
    tbuf &operator=(tbuf &&) = default;
    void reset(int64_t count, dt t) {
        bytes = size_t(std::max<int64_t>(count, 1)) * size_t(cr::elem_bytes(t));
        raw.assign(bytes + 2 * margin + 64, 0xA5);
        const uintptr_t base = reinterpret_cast<uintptr_t>(raw.data()) + margin;
        p = raw.data() + margin + (64 - base % 64) % 64;
    }
    bool guards_intact() const {
        const uint8_t *b = raw.data(), *e = raw.data() + raw.size();
        for (const uint8_t *q = b; q < p; ++q)
            if (*q != 0xA5) return false;
        for (const uint8_t *q = p + bytes; q < e; ++q)
            if (*q != 0xA5) return false;
        return true;
    }
};

void fill_buf(tu::rng &r, tbuf &b, int64_t count, dt t, fill f, bool weights) {
    for (int64_t k = 0; k < count; ++k) {
        switch (t) {
            case anvil_dt_f32:
                reinterpret_cast<float *>(b.p)[k] = f == fill::fraction ? r.frac() : r.small_int();
                break;
            case anvil_dt_bf16:
                reinterpret_cast<uint16_t *>(b.p)[k] =
                    f == fill::fraction ? lt::bf16_frac(r) : lt::bf16_small_int(r);
                break;
            case anvil_dt_u8:
                b.p[k] = uint8_t(f == fill::full_range ? r.ival(0, 255) : r.ival(0, 6));
                break;
            default:
                b.p[k] = uint8_t(int8_t(f == fill::full_range ? r.ival(-128, 127) : r.ival(-4, 4)));
        }
    }
    (void)weights;
}

// ------------------------------------------------------------ oneDNN

int g_dnnl_ref_skips = 0, g_dnnl_unimpl = 0, g_dnnl_tie = 0, g_dnnl_gemm_binary = 0;
std::set<std::string> g_dnnl_reasons;

#if ANVIL_TESTS_HAVE_ONEDNN
using peer::dnnl_alg;
using peer::dnnl_dt;

dnnl::engine &dnnl_engine() {
    static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    return eng;
}

// Runs oneDNN's convolution.  with_attrs == false: the bare accumulator
// (no bias, scales, post-ops; src zero point kept), into `dst_dt`.
// Returns false (with *why) when oneDNN has no implementation or only its
// reference one for a large problem (too slow for the budget), or when the
// build has no oneDNN.
bool onednn_conv(const anvil_conv2d_desc_t &d, anvil_conv_weights_layout_t layout, const void *src,
                 const void *wei, const float *bias, const std::vector<const void *> &bins,
                 bool with_attrs, dt dst_dt, void *dst, std::string *why) {
    if (cr::is_int8(d.src_dt) && !peer::int8_peer()) {
        *why = "oneDNN's int8 is not exact on this CPU";
        return false;
    }
    using namespace dnnl;
    using dims = memory::dims;
    using tag = memory::format_tag;
    engine &eng = dnnl_engine();
    stream st(eng);
    try {
        const memory::desc src_md({d.N, d.IC, d.IH, d.IW}, dnnl_dt(d.src_dt), tag::nhwc);
        const memory::desc dst_md({d.N, d.OC, d.OH, d.OW}, dnnl_dt(dst_dt), tag::nhwc);
        const int64_t G = d.G, O = d.OC, Og = O / G, Ig = d.IC / G, KH = d.KH, KW = d.KW;
        dims wdims, wstrides;
        if (G == 1) {
            wdims = {O, Ig, KH, KW};
            wstrides = layout == anvil_conv_weights_oihw ? dims{Ig * KH * KW, KH * KW, KW, 1}
                                                         : dims{1, O, KW * Ig * O, Ig * O};
        } else {
            wdims = {G, Og, Ig, KH, KW};
            wstrides = layout == anvil_conv_weights_oihw
                           ? dims{Og * Ig * KH * KW, Ig * KH * KW, KH * KW, KW, 1}
                           : dims{Og, 1, O, KW * Ig * O, Ig * O};
        }
        const memory::desc wuser_md(wdims, dnnl_dt(d.wei_dt), wstrides);
        const memory::desc wany_md(wdims, dnnl_dt(d.wei_dt), tag::any);
        const memory::desc bias_md({O}, memory::data_type::f32, tag::x);
        const bool use_bias = with_attrs && bias;
        primitive_attr attr;
        std::vector<float> scales;
        std::vector<memory::desc> bin_mds;
        if (d.src_zero_point) attr.set_zero_points(DNNL_ARG_SRC, 0, {d.src_zero_point});
        if (with_attrs) {
            if (d.scales) {
                scales.assign(d.scales, d.scales + (d.scales_per_oc ? O : 1));
                attr.set_output_scales(d.scales_per_oc ? 2 : 0, scales);
            }
            if (d.dst_zero_point) attr.set_zero_points(DNNL_ARG_DST, 0, {d.dst_zero_point});
            post_ops po;
            for (int t = 0; t < d.num_post_ops; ++t) {
                const anvil_post_op_t &o = d.post_ops[t];
                if (o.kind == anvil_post_op_eltwise) {
                    po.append_eltwise(1.0f, dnnl_alg(o.alg),
                                      o.alg == anvil_eltwise_silu ? 1.0f : o.alpha, o.beta);
                } else if (o.kind == anvil_post_op_sum) {
                    po.append_sum(o.alpha, int32_t(o.beta), dnnl_dt(dst_dt));
                } else {
                    const memory::desc md =
                        o.per_n ? memory::desc({1, O, 1, 1}, dnnl_dt(o.src_dt), tag::nchw)
                                : memory::desc({d.N, O, d.OH, d.OW}, dnnl_dt(o.src_dt),
                                               dims{d.OH * d.OW * o.ld, 1, d.OW * o.ld, o.ld});
                    po.append_binary(o.alg == anvil_binary_add ? algorithm::binary_add
                                                               : algorithm::binary_mul,
                                     md);
                    bin_mds.push_back(md);
                }
            }
            attr.set_post_ops(po);
        }
        const dims strides{d.SH, d.SW}, dil{d.DH, d.DW}, pl{d.pad_t, d.pad_l}, pr{d.pad_b, d.pad_r};
        const auto cd =
            use_bias ? convolution_forward::desc(prop_kind::forward_inference,
                                                 algorithm::convolution_direct, src_md, wany_md,
                                                 bias_md, dst_md, strides, dil, pl, pr)
                     : convolution_forward::desc(prop_kind::forward_inference,
                                                 algorithm::convolution_direct, src_md, wany_md,
                                                 dst_md, strides, dil, pl, pr);
        const convolution_forward::primitive_desc pd(cd, attr, eng);
        const std::string impl = pd.impl_info_str();
        // oneDNN 2.6's gemm-based f32 convolution (x64:gemm:jit) applies a
        // dst-shaped binary post-op operand as if it were per-channel: every
        // pixel gets pixel 0's values (reproduced: 1x1 conv, IC 1, OC 1,
        // 1x2 image, binary_add with a dense {1,1,1,2} nhwc src1 gives
        // dst(w=1) = src1(w=0)).  No peer for those.
        bool dst_shaped_binary = false;
        for (int t = 0; with_attrs && t < d.num_post_ops; ++t)
            dst_shaped_binary |= d.post_ops[t].kind == anvil_post_op_binary && !d.post_ops[t].per_n;
        if (dst_shaped_binary && d.src_dt == anvil_dt_f32 && impl.find("gemm") != std::string::npos) {
            ++g_dnnl_gemm_binary;
            *why = "oneDNN 2.6 gemm f32 conv broadcasts dst-shaped binary operands";
            return false;
        }
        // oneDNN 2.6's int8 depthwise kernel gets a sum post-op with a
        // zero point wrong (MobileNet-like 12x12x32, u8 src, sum(0.5, 2):
        // -15 where the chain gives 0.5; with zero point 0 it agrees).  No
        // peer for those.
        // oneDNN 2.6 crashes (SIGSEGV in brgconv's execute) on a sum with
        // more post-ops when an output's window is all padding (anvil-bench
        // avoids the same): no peer.
        {
            bool has_sum = false;
            for (int t = 0; with_attrs && t < d.num_post_ops; ++t)
                has_sum |= d.post_ops[t].kind == anvil_post_op_sum;
            const int64_t ekh = (d.KH - 1) * (d.DH + 1), ekw = (d.KW - 1) * (d.DW + 1);
            if (has_sum && d.num_post_ops > 1 &&
                (ekh < d.pad_t || ekw < d.pad_l || (d.OH - 1) * d.SH - d.pad_t >= d.IH ||
                 (d.OW - 1) * d.SW - d.pad_l >= d.IW)) {
                *why = "oneDNN 2.6 crashes on a sum with other post-ops and an all-padding window";
                return false;
            }
        }
        bool sum_zero_point = false;
        for (int t = 0; with_attrs && t < d.num_post_ops; ++t)
            sum_zero_point |= d.post_ops[t].kind == anvil_post_op_sum && d.post_ops[t].beta != 0.0f;
        if (sum_zero_point && cr::is_int8(d.src_dt) && d.G > 1 && d.IC == d.G) {
            *why = "oneDNN 2.6 int8 depthwise conv mishandles a sum zero point (" + impl + ")";
            return false;
        }
        const double macs = double(cr::dst_elems(d)) * double(cr::kdim(d));
        if (impl.rfind("ref", 0) == 0 && macs > 3e7) {
            ++g_dnnl_ref_skips;
            *why = "oneDNN picks " + impl + " (too slow at this size)";
            return false;
        }
        memory wuser(wuser_md, eng, const_cast<void *>(wei));
        memory w(pd.weights_desc(), eng);
        reorder(wuser, w).execute(st, wuser, w);
        memory msrc(src_md, eng, const_cast<void *>(src)), mdst(dst_md, eng, dst);
        std::vector<float> dbias;
        std::unordered_map<int, memory> args{{DNNL_ARG_SRC, msrc}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, mdst}};
        if (use_bias) {
            // oneDNN 2.6: (acc + bias) * scale; anvil: acc * scale + bias.
            dbias.assign(bias, bias + O);
            for (int64_t j = 0; j < O; ++j)
                dbias[size_t(j)] /= scales.empty() ? 1.0f : scales[size_t(d.scales_per_oc ? j : 0)];
            args.insert({DNNL_ARG_BIAS, memory(bias_md, eng, dbias.data())});
        }
        int bi = 0;
        for (int t = 0; with_attrs && t < d.num_post_ops; ++t)
            if (d.post_ops[t].kind == anvil_post_op_binary) {
                args.insert({DNNL_ARG_ATTR_MULTIPLE_POST_OP(t) | DNNL_ARG_SRC_1,
                             memory(bin_mds[size_t(bi)], eng, const_cast<void *>(bins[size_t(bi)]))});
                ++bi;
            }
        convolution_forward(pd).execute(st, args);
        st.wait();
        return true;
    } catch (const dnnl::error &e) {
        ++g_dnnl_unimpl;
        *why = std::string("oneDNN: ") + e.what();
        g_dnnl_reasons.insert(std::to_string(d.src_dt) + "," + std::to_string(d.wei_dt) + "->" +
                              std::to_string(dst_dt) + " zp " + std::to_string(d.src_zero_point) + "/" +
                              std::to_string(d.dst_zero_point) + ": " + e.what());
        return false;
    }
}
#else
bool onednn_conv(const anvil_conv2d_desc_t &, anvil_conv_weights_layout_t, const void *,
                 const void *, const float *, const std::vector<const void *> &, bool, dt, void *,
                 std::string *why) {
    *why = peer::onednn_version();
    return false;
}
#endif

// ------------------------------------------------------------ runner

struct conv_problem {
    anvil_conv2d_desc_t d{};
    std::vector<float> scales, bias;
    std::vector<anvil_post_op_t> ops;
    tbuf src, wei;
    tbuf dst0;  // dst's contents before the call (a sum op reads them)
    std::vector<tbuf> bins;
    std::vector<const void *> bin_ptrs;
};

void build_problem(const conv_cfg &q, uint64_t seed, conv_problem &P) {
    anvil_conv2d_desc_t &d = P.d;
    d = anvil_conv2d_desc_t{};
    anvil::conv::fill_conv_desc(q.s, &d);
    d.src_dt = q.src;
    d.wei_dt = q.wei;
    d.dst_dt = q.dst;
    d.src_zero_point = q.szp;
    d.dst_zero_point = q.dzp;
    tu::rng r(seed);
    P.src.reset(cr::src_elems(d), q.src);
    P.wei.reset(cr::wei_elems(d), q.wei);
    fill_buf(r, P.src, cr::src_elems(d), q.src, q.f, false);
    fill_buf(r, P.wei, cr::wei_elems(d), q.wei, q.f, true);
    if (q.scale_mode) {
        P.scales.resize(size_t(q.scale_mode == 2 ? d.OC : 1));
        for (auto &v : P.scales)
            v = q.pow2_scales ? std::ldexp(1.0f, int(r.ival(-5, 1)))
                              : float(r.ival(1, 1 << 20)) * 0x1p-22f;  // (0, 0.25], 20 bits
        d.scales = P.scales.data();
        d.scales_per_oc = q.scale_mode == 2;
    }
    if (q.bias) {
        P.bias.resize(size_t(d.OC));
        for (auto &v : P.bias) v = q.f == fill::fraction ? r.frac() : float(r.ival(-20, 20));
    }
    P.ops = q.ops;
    for (auto &o : P.ops) {
        if (o.kind != anvil_post_op_binary) continue;
        o.ld = o.per_n ? 0 : d.OC + o.ld;
        const int64_t count = o.per_n ? d.OC : cr::pixels(d) * o.ld;
        tbuf b(count, o.src_dt);
        const bool mul = o.alg == anvil_binary_mul;
        for (int64_t k = 0; k < count; ++k) {
            const float v = float(r.ival(mul ? -2 : -9, mul ? 2 : 9));
            if (o.src_dt == anvil_dt_bf16) reinterpret_cast<uint16_t *>(b.p)[k] = cr::f32_to_bf16(v);
            else reinterpret_cast<float *>(b.p)[k] = v;
        }
        P.bins.push_back(std::move(b));
    }
    for (auto &b : P.bins) P.bin_ptrs.push_back(b.p);
    // dst before the call: 0xA5 bytes, or for a sum op small integers of
    // dst's type (the sum adds alpha * (value - beta), exact).
    P.dst0.reset(cr::dst_elems(d), q.dst);
    if (std::any_of(P.ops.begin(), P.ops.end(), [](const anvil_post_op_t &o) { return o.kind == anvil_post_op_sum; }))
        for (int64_t k = 0; k < cr::dst_elems(d); ++k)
            lt::store_int(q.dst, P.dst0.p, k, q.dst == anvil_dt_u8 ? r.ival(0, 30) : r.ival(-30, 30));
    d.num_post_ops = int(P.ops.size());
    d.post_ops = P.ops.data();
}

// anvil: create, pack (in `layout`), execute into dst.
void anvil_run(const conv_problem &P, anvil_conv_weights_layout_t layout, tbuf &dst) {
    anvil_conv2d_t h = nullptr;
    REQUIRE(anvil_conv2d_create(&h, &P.d) == anvil_success);
    size_t bytes = 0;
    REQUIRE(anvil_conv2d_packed_weights_size(h, &bytes) == anvil_success);
    std::vector<uint8_t> packed(bytes + 64);
    void *pk = packed.data() + (64 - reinterpret_cast<uintptr_t>(packed.data()) % 64) % 64;
    REQUIRE(anvil_conv2d_pack_weights(h, P.wei.p, layout, pk) == anvil_success);
    const anvil_status_t st = anvil_conv2d_execute(h, P.src.p, pk, P.bias.empty() ? nullptr : P.bias.data(),
                                                   dst.p, P.bin_ptrs.empty() ? nullptr : P.bin_ptrs.data());
    anvil_conv2d_destroy(h);
    REQUIRE(st == anvil_success);
}

std::vector<int64_t> sample_pixels(const anvil_conv2d_desc_t &d, uint64_t seed) {
    const int64_t P = cr::pixels(d);
    std::vector<int64_t> px;
    if (P <= 64) {
        for (int64_t p = 0; p < P; ++p) px.push_back(p);
        return px;
    }
    // Corners and edges of the first and last image, then random pixels.
    const int64_t last = (d.N - 1) * d.OH * d.OW;
    for (int64_t base : {int64_t(0), last})
        for (int64_t p : {int64_t(0), d.OW - 1, (d.OH - 1) * d.OW, d.OH * d.OW - 1,
                          (d.OH / 2) * d.OW, (d.OH / 2) * d.OW + d.OW - 1})
            px.push_back(base + p);
    tu::rng r(seed ^ 0x5eed);
    for (int t = 0; t < 36; ++t) px.push_back(r.ival(0, P - 1));
    return px;
}

struct check_stats {
    int64_t checked = 0, bad = 0, bad_dnnl = 0;
    std::string first;
};

void check_element(const conv_cfg &q, const cr::expect &e, double got, const double *dn,
                   int64_t pixel, int64_t oc, check_stats &cs) {
    ++cs.checked;
    if (!cr::output_ok(q.dst, e.v, e.err, got) && cs.bad++ == 0 && cs.first.empty()) {
        std::ostringstream o;
        o.precision(10);
        o << "pixel " << pixel << " oc " << oc << ": anvil " << got << " want " << e.v << " (bound " << e.err << ")";
        cs.first = o.str();
    }
    if (!dn) return;
    bool ok = cr::output_ok(q.dst, e.v, e.err_d, *dn) || cr::output_ok(q.dst, e.v, e.err + e.err_d, *dn);
    if (!ok && cr::is_int_out(q.dst) && e.err_d == 0 && std::isfinite(e.v) &&
        e.v - std::floor(e.v) == 0.5 && std::fabs(*dn - cr::saturate(q.dst, std::nearbyint(e.v))) == 1) {
        ok = true;  // an exact .5 tie rounded the other way
        ++g_dnnl_tie;
    }
    if (!ok && cs.bad_dnnl++ == 0 && cs.first.empty()) {
        std::ostringstream o;
        o.precision(10);
        o << "pixel " << pixel << " oc " << oc << ": oneDNN " << *dn << " anvil " << got << " want " << e.v
          << " (bounds " << e.err << ", " << e.err_d << ")";
        cs.first = o.str();
    }
}

void run_case(const conv_cfg &q, uint64_t seed) {
    INFO(q.str(), " seed=", seed);
    conv_problem P;
    build_problem(q, seed, P);
    const anvil_conv2d_desc_t &d = P.d;
    tbuf dst = P.dst0;
    anvil_run(P, q.layout, dst);
    CHECK_MESSAGE(dst.guards_intact(), "anvil wrote outside dst");

    // oneDNN with the same attributes.
    const bool peer = q.peer && !two_relu_slopes(P.ops) && !(q.bias && q.scale_mode && !q.pow2_scales);
    tbuf ddst = P.dst0;
    std::string why;
    const bool have_dnnl = peer && onednn_conv(d, q.layout, P.src.p, P.wei.p,
                                               P.bias.empty() ? nullptr : P.bias.data(), P.bin_ptrs,
                                               true, q.dst, ddst.p, &why);
    cr::chain_args ca;
    ca.bias = P.bias.empty() ? nullptr : P.bias.data();
    ca.binary = P.bin_ptrs.empty() ? nullptr : P.bin_ptrs.data();
    ca.dst_old = P.dst0.p;
    const bool frac = q.f == fill::fraction;
    check_stats cs;
    auto check_pixel = [&](int64_t p, const cr::acc_value &a, int64_t oc) {
        const double acc_err = frac ? cr::acc_bound(cr::kdim(d), a.abs_sum) : 0.0;
        const cr::expect e = cr::run_chain(d, a, acc_err, p, oc, ca);
        const int64_t at = p * d.OC + oc;
        const double got = cr::load(q.dst, dst.p, at);
        double dn = 0;
        if (have_dnnl) dn = cr::load(q.dst, ddst.p, at);
        check_element(q, e, got, have_dnnl ? &dn : nullptr, p, oc, cs);
    };
    if (q.acc == acc_src::reference) {
        for (int64_t p = 0; p < cr::pixels(d); ++p)
            for (int64_t oc = 0; oc < d.OC; ++oc)
                check_pixel(p, cr::conv_acc(d, P.src.p, P.wei.p, q.layout, p, oc), oc);
    } else if (q.acc == acc_src::samples) {
        for (int64_t p : sample_pixels(d, seed))
            for (int64_t oc = 0; oc < d.OC; ++oc)
                check_pixel(p, cr::conv_acc(d, P.src.p, P.wei.p, q.layout, p, oc), oc);
    } else {
        // The bare accumulator of every element from oneDNN (exact for these
        // fills), checked on sampled pixels against the scalar reference.
        REQUIRE(!frac);
        const bool i8 = cr::is_int8(q.src);
        const dt acc_dt = i8 ? anvil_dt_s32 : anvil_dt_f32;
        tbuf acc(cr::dst_elems(d), acc_dt);
        std::string why_acc;
        const bool ok = onednn_conv(d, q.layout, P.src.p, P.wei.p, nullptr, {}, false, acc_dt, acc.p, &why_acc);
        if (!ok) {
            // No fast oneDNN (or none in this build): the reference on
            // samples.
            if (peer::kHaveOneDNN) MESSAGE("no oneDNN accumulator (", why_acc, "): sampled reference only");
            for (int64_t p : sample_pixels(d, seed))
                for (int64_t oc = 0; oc < d.OC; ++oc)
                    check_pixel(p, cr::conv_acc(d, P.src.p, P.wei.p, q.layout, p, oc), oc);
        } else {
            int64_t acc_bad = 0;
            for (int64_t p : sample_pixels(d, seed))
                for (int64_t oc = 0; oc < d.OC; ++oc) {
                    const cr::acc_value a = cr::conv_acc(d, P.src.p, P.wei.p, q.layout, p, oc);
                    acc_bad += a.sum != cr::load(acc_dt, acc.p, p * d.OC + oc);
                }
            CHECK_MESSAGE(acc_bad == 0, "oneDNN's bare accumulator differs from the scalar reference");
            for (int64_t p = 0; p < cr::pixels(d); ++p)
                for (int64_t oc = 0; oc < d.OC; ++oc) {
                    cr::acc_value a;
                    a.sum = cr::load(acc_dt, acc.p, p * d.OC + oc);
                    a.isum = int64_t(a.sum);
                    check_pixel(p, a, oc);
                }
        }
    }
    INFO(cs.first);
    CHECK(cs.checked > 0);
    CHECK(cs.bad == 0);
    CHECK(cs.bad_dnnl == 0);
}

// ------------------------------------------------------------ configurations

const dt kCombos[][3] = {
    {anvil_dt_f32, anvil_dt_f32, anvil_dt_f32},   {anvil_dt_bf16, anvil_dt_bf16, anvil_dt_f32},
    {anvil_dt_bf16, anvil_dt_bf16, anvil_dt_bf16}, {anvil_dt_u8, anvil_dt_s8, anvil_dt_f32},
    {anvil_dt_u8, anvil_dt_s8, anvil_dt_s32},     {anvil_dt_u8, anvil_dt_s8, anvil_dt_bf16},
    {anvil_dt_u8, anvil_dt_s8, anvil_dt_u8},      {anvil_dt_u8, anvil_dt_s8, anvil_dt_s8},
    {anvil_dt_s8, anvil_dt_s8, anvil_dt_f32},     {anvil_dt_s8, anvil_dt_s8, anvil_dt_s32},
    {anvil_dt_s8, anvil_dt_s8, anvil_dt_bf16},    {anvil_dt_s8, anvil_dt_s8, anvil_dt_u8},
    {anvil_dt_s8, anvil_dt_s8, anvil_dt_s8},
};
constexpr int kNumCombos = 13;

// Post-op chains (index -> chain); the bias flag of chain 2 is forced on.
constexpr int kNumChains = 12;
std::vector<anvil_post_op_t> chain(int i) {
    switch (i % kNumChains) {
        case 0: return {};
        case 1: return {eltwise(anvil_eltwise_relu)};
        case 2:  // bias + gelu_tanh + residual add (dst-shaped)
            return {eltwise(anvil_eltwise_gelu_tanh), binary(anvil_binary_add, false)};
        case 3: return {eltwise(anvil_eltwise_leaky_relu, 0.125f), eltwise(anvil_eltwise_clip, -6.f, 6.f)};
        case 4:
            return {binary(anvil_binary_mul, true), eltwise(anvil_eltwise_relu),
                    binary(anvil_binary_add, false, anvil_dt_bf16, 3)};
        case 5: return {eltwise(anvil_eltwise_sigmoid)};
        case 6: return {eltwise(anvil_eltwise_silu), binary(anvil_binary_add, true, anvil_dt_bf16)};
        case 7: return {eltwise(anvil_eltwise_tanh), binary(anvil_binary_mul, false, anvil_dt_f32, 5)};
        case 8: return {eltwise(anvil_eltwise_gelu_erf), eltwise(anvil_eltwise_relu)};
        // ResNet's residual: add then relu (fused into the JIT stores), f32 /
        // bf16 operands with and without rows padded past OC.
        case 9: return {binary(anvil_binary_add, false), eltwise(anvil_eltwise_relu)};
        case 10:
            return {binary(anvil_binary_add, false, anvil_dt_bf16, 3),
                    eltwise(anvil_eltwise_leaky_relu, 0.25f)};
        default: return {binary(anvil_binary_add, false, anvil_dt_f32, 7)};
    }
}

// A configuration for case number c of a shape (rotates every attribute).
conv_cfg make_cfg(const conv_shape &s, int combo, int c, tu::rng &r) {
    conv_cfg q;
    q.s = s;
    q.src = kCombos[combo][0];
    q.wei = kCombos[combo][1];
    q.dst = kCombos[combo][2];
    q.layout = (c % 2) ? anvil_conv_weights_hwio : anvil_conv_weights_oihw;
    const int ch = int(r.ival(0, kNumChains - 1));
    q.ops = chain(ch);
    q.bias = ch == 2 || r.ival(0, 1);
    const bool i8 = cr::is_int8(q.src);
    q.scale_mode = int(r.ival(0, 2));
    // Requantised int8 outputs: always a scale (saturation and rounding).
    if (q.dst == anvil_dt_u8 || q.dst == anvil_dt_s8) q.scale_mode = 1 + int(r.ival(0, 1));
    q.pow2_scales = r.ival(0, 2) != 0;
    if (i8 && r.ival(0, 1)) q.szp = q.src == anvil_dt_u8 ? int32_t(r.ival(1, 6)) : int32_t(r.ival(-4, 4));
    if (q.dst == anvil_dt_u8 || q.dst == anvil_dt_s8)
        if (r.ival(0, 1)) q.dzp = int32_t(r.ival(-5, 5)) + (q.dst == anvil_dt_u8 ? 100 : 0);
    if (i8 && r.ival(0, 4) == 0) q.f = fill::full_range;
    return q;
}

bool scalar_cap() { return anvil_get_effective_isa() == anvil_isa_scalar; }

// The bare accumulators of a whole convolution (dst order, NHWC), computed
// apart from conv_ref.h's per-element gather: every source element is
// scattered to the outputs its taps reach, with the weight layouts of
// anvil.h written out afresh.  Exact for the tests' fills (integer-valued
// f32, int8: sums far below 2^53).  Padding taps contribute nothing, also
// with a source zero point.
std::vector<double> scatter_conv(const anvil_conv2d_desc_t &d, const void *src, const void *wei,
                                 anvil_conv_weights_layout_t layout) {
    std::vector<double> acc(size_t(d.N * d.OH * d.OW * d.OC), 0.0);
    const int64_t IG = d.IC / d.G, OG = d.OC / d.G;
    const double zp = cr::is_int8(d.src_dt) ? d.src_zero_point : 0;
    // Output index along one axis for input i and tap k, or -1 when none.
    auto out_at = [](int64_t i, int64_t k, int64_t stride, int64_t pad, int64_t dil, int64_t extent) {
        const int64_t t = i + pad - k * (dil + 1);
        if (t < 0 || t % stride) return int64_t(-1);
        return t / stride < extent ? t / stride : int64_t(-1);
    };
    for (int64_t n = 0; n < d.N; ++n)
        for (int64_t ih = 0; ih < d.IH; ++ih)
            for (int64_t iw = 0; iw < d.IW; ++iw)
                for (int64_t ic = 0; ic < d.IC; ++ic) {
                    const double s = lt::load(d.src_dt, src, ((n * d.IH + ih) * d.IW + iw) * d.IC + ic) - zp;
                    const int64_t g = ic / IG, c = ic % IG;
                    for (int64_t kh = 0; kh < d.KH; ++kh) {
                        const int64_t oh = out_at(ih, kh, d.SH, d.pad_t, d.DH, d.OH);
                        if (oh < 0) continue;
                        for (int64_t kw = 0; kw < d.KW; ++kw) {
                            const int64_t ow = out_at(iw, kw, d.SW, d.pad_l, d.DW, d.OW);
                            if (ow < 0) continue;
                            for (int64_t o = 0; o < OG; ++o) {
                                const int64_t oc = g * OG + o;
                                // OIHW: [OC][IC/G][KH][KW]; HWIO: [KH][KW][IC/G][OC].
                                const int64_t w_at = layout == anvil_conv_weights_oihw
                                                         ? ((oc * IG + c) * d.KH + kh) * d.KW + kw
                                                         : ((kh * d.KW + kw) * IG + c) * d.OC + oc;
                                acc[size_t(((n * d.OH + oh) * d.OW + ow) * d.OC + oc)] +=
                                    s * lt::load(d.wei_dt, wei, w_at);
                            }
                        }
                    }
                }
    return acc;
}

double elapsed(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

// ------------------------------------------------------------ suites

TEST_SUITE("once") {

TEST_CASE("conv inputs: the shape lists parse and add up to their models") {
    const auto rn = load_shapes("conv_resnet50");
    const auto mn = load_shapes("conv_mobilenet_v2");
    const auto tl = load_shapes("conv_tails");
    int rn_total = 0, mn_total = 0;
    for (const auto &s : rn) rn_total += multiplicity(s.name);
    for (const auto &s : mn) mn_total += multiplicity(s.name);
    CHECK(rn.size() == 20);
    CHECK(rn_total == 53);  // conv1 + 16 bottlenecks x 3 + 4 projection shortcuts
    CHECK(mn.size() == 30);
    CHECK(mn_total == 52);  // stem + 17 blocks (the first without expand) + conv_last
    CHECK(tl.size() >= 40);
    int dw = 0, dil = 0, asym = 0, s3 = 0;
    for (const auto &s : tl) {
        dw += s.g > 1 && s.g == s.ic;
        dil += s.dh > 0 || s.dw > 0;
        asym += s.pt != s.pb || s.pl != s.pr;
        s3 += s.sh == 3;
    }
    CHECK(dw >= 5);
    CHECK(dil >= 4);
    CHECK(asym >= 4);
    CHECK(s3 >= 2);
}

// The reference itself (no anvil involved) against a second formulation of
// the convolution and oneDNN's bare convolution (when built with it): the
// accumulators of every tail, both layouts, int8 with a source zero point
// and f32.
TEST_CASE("conv reference: exact accumulators agree with a scatter-form conv and oneDNN on every tail") {
    uint64_t seed = 100;
    for (const auto &s0 : load_shapes("conv_tails")) {
        for (int t = 0; t < 2; ++t) {
            conv_cfg q;
            q.s = s0;
            q.layout = t ? anvil_conv_weights_hwio : anvil_conv_weights_oihw;
            if (t) {
                q.src = anvil_dt_u8;
                q.wei = anvil_dt_s8;
                q.dst = anvil_dt_s32;
                q.szp = 3;
                q.f = fill::full_range;
            }
            INFO(q.str());
            conv_problem P;
            build_problem(q, seed++, P);
            const std::vector<double> sc = scatter_conv(P.d, P.src.p, P.wei.p, q.layout);
            tbuf acc(cr::dst_elems(P.d), q.dst);
            std::string why;
            const bool dnnl = onednn_conv(P.d, q.layout, P.src.p, P.wei.p, nullptr, {}, false, q.dst, acc.p, &why);
            // oneDNN runs every tail, but int8 only where its sums are exact.
            if (peer::kHaveOneDNN && (!cr::is_int8(q.src) || peer::int8_peer()))
                REQUIRE_MESSAGE(dnnl, why);
            int64_t bad = 0, bad_dnnl = 0;
            for (int64_t p = 0; p < cr::pixels(P.d); ++p)
                for (int64_t oc = 0; oc < P.d.OC; ++oc) {
                    const int64_t at = p * P.d.OC + oc;
                    const double want = cr::conv_acc(P.d, P.src.p, P.wei.p, q.layout, p, oc).sum;
                    bad += want != sc[size_t(at)];
                    if (dnnl) bad_dnnl += want != cr::load(q.dst, acc.p, at);
                }
            CHECK_MESSAGE(bad == 0, "the reference differs from the scatter-form convolution");
            CHECK_MESSAGE(bad_dnnl == 0, "the reference differs from oneDNN");
        }
    }
}

}  // TEST_SUITE("once")

TEST_CASE("conv: tails, every type combination and layout, vs the reference and oneDNN") {
    const auto t0 = std::chrono::steady_clock::now();
    const auto tails = load_shapes("conv_tails");
    tu::rng r(7);
    uint64_t seed = 1000;
    int n = 0;
    for (size_t li = 0; li < tails.size(); ++li)
        for (int combo = 0; combo < kNumCombos; ++combo) {
            // Under emulation each shape takes half of the type combinations
            // (alternating, so each combination still meets half of the
            // shapes and every shape runs).
            if (tu::emulated() && (li + size_t(combo)) % 2 != 0) continue;
            // The listed mb and mb 2 alternate over the type combinations.
            for (int mbi = int(combo % 2); mbi < int(combo % 2) + 1; ++mbi) {
                conv_shape s = tails[li];
                if (mbi == 1) s.mb = 2;
                conv_cfg q = make_cfg(s, combo, int(li + combo), r);
                // oneDNN (primitive creation dominates at these sizes) on
                // every third case; the reference on all.
                q.peer = (li + combo + mbi) % 3 == 0;
                run_case(q, seed++);
                ++n;
            }
        }
    MESSAGE(n, " tail cases in ", elapsed(t0), " s");
}

// The sum post-op (dst's old values, in dst's type) on every path: 3x3 and
// strided layers (K segments, edge columns), 1x1 (contiguous, row tiles),
// grouped, depthwise (fused-capable chains: sum must still read the old
// dst), with every type combination, bias, scales and zero points; the
// ResNet int8 residual pattern (sum + relu into u8) among them.
TEST_CASE("conv: sum post-op on every path and type, vs the reference and oneDNN") {
    const char *kShapes[] = {
        "mb1ic16ih9iw11oc32oh9ow11kh3kw3ph1pw1",  "mb2ic24ih8iw8oc40oh8ow8kh1kw1ph0pw0",
        "mb1ic17ih13iw7oc33oh7ow4kh3kw3sh2sw2ph1pw1", "mb1g4ic16ih7iw7oc8oh7ow7kh3kw3ph1pw1",
        "mb1g32ic32ih12iw12oc32oh12ow12kh3kw3ph1pw1", "mb2g48ic48ih9iw9oc48oh5ow5kh3kw3sh2sw2ph1pw1",
        "mb1ic64ih14iw14oc64oh14ow14kh1kw1ph0pw0",
    };
    const std::vector<std::vector<anvil_post_op_t>> kChains = {
        {lt::sum()},
        {lt::sum(), eltwise(anvil_eltwise_relu)},
        {lt::sum(0.5f, 2.0f), eltwise(anvil_eltwise_clip, -20.f, 20.f)},
        {eltwise(anvil_eltwise_relu), lt::sum(2.0f)},
        {binary(anvil_binary_add, false), lt::sum(-1.0f, -3.0f), eltwise(anvil_eltwise_gelu_tanh)},
    };
    tu::rng r(31);
    uint64_t seed = 60000;
    int n = 0;
    for (size_t si = 0; si < std::size(kShapes); ++si)
        for (int combo = 0; combo < kNumCombos; ++combo) {
            if (tu::emulated() && (si + size_t(combo)) % 2 != 0) continue;
            conv_shape s;
            std::string err;
            REQUIRE(anvil::conv::parse_conv_descriptor(kShapes[si], &s, &err));
            conv_cfg q = make_cfg(s, combo, int(si + combo), r);
            q.ops = kChains[(si + size_t(combo)) % kChains.size()];
            q.pow2_scales = true;
            run_case(q, seed++);
            ++n;
        }
    // f32 without scales or a zero point: a plain sum is fused into the fp32
    // kernels as a residual add of dst itself (before or after relu).
    for (size_t si = 0; si < std::size(kShapes); ++si) {
        conv_shape s;
        std::string err;
        REQUIRE(anvil::conv::parse_conv_descriptor(kShapes[si], &s, &err));
        conv_cfg q;
        q.s = s;
        q.bias = si % 2 == 0;
        q.ops = si % 3 == 0 ? std::vector<anvil_post_op_t>{lt::sum()}
                : si % 3 == 1 ? std::vector<anvil_post_op_t>{lt::sum(), eltwise(anvil_eltwise_relu)}
                              : std::vector<anvil_post_op_t>{eltwise(anvil_eltwise_relu), lt::sum()};
        q.layout = si % 2 ? anvil_conv_weights_hwio : anvil_conv_weights_oihw;
        run_case(q, seed++);
        ++n;
    }
    MESSAGE(n, " sum cases");
}

TEST_CASE("conv: sum post-op, bad parameters") {
    conv_shape s;
    std::string err;
    REQUIRE(anvil::conv::parse_conv_descriptor("mb1ic16ih5iw5oc16oh5ow5kh3kw3ph1pw1", &s, &err));
    anvil_conv2d_desc_t d{};
    anvil::conv::fill_conv_desc(s, &d);
    d.src_dt = d.wei_dt = d.dst_dt = anvil_dt_f32;
    for (const anvil_post_op_t bad : {lt::sum(NAN), lt::sum(1.0f, -INFINITY)}) {
        d.num_post_ops = 1;
        d.post_ops = &bad;
        anvil_conv2d_t h = nullptr;
        CHECK(anvil_conv2d_create(&h, &d) == anvil_invalid_argument);
        CHECK(h == nullptr);
    }
}

TEST_CASE("conv: requantised outputs saturate on every path (fused stores included)") {
    // Full-range int8 data with a per-tensor scale of 1 pushes nearly every
    // output past the u8 / s8 range, through the plain and the relu chain
    // (both fused into the JIT kernels' stores), for depthwise, grouped,
    // in-place and im2col convolutions.
    const char *const shapes[] = {"mb1_g17ic17ih9iw11_oc17_kh3sh1ph1",
                                  "mb2_g32ic32ih7iw7_oc32_kh3sh2ph1",
                                  "mb1_g2ic8ih6iw6_oc6_kh3sh1ph1",
                                  "mb1_ic40ih6iw7_oc33_kh3sh1ph1",
                                  "mb1_ic3ih9iw9_oc20_kh3sh2ph1"};
    uint64_t seed = 9000;
    for (const char *text : shapes) {
        conv_shape s;
        std::string err;
        REQUIRE(anvil::conv::parse_conv_descriptor(text, &s, &err));
        for (dt src : {anvil_dt_u8, anvil_dt_s8})
            for (dt out : {anvil_dt_u8, anvil_dt_s8})
                for (int ch : {0, 1, 9}) {
                    conv_cfg q;
                    q.s = s;
                    q.src = src;
                    q.wei = anvil_dt_s8;
                    q.dst = out;
                    q.f = fill::full_range;
                    q.scale_mode = 1;
                    q.pow2_scales = true;
                    q.ops = chain(ch);
                    q.bias = ch == 1;
                    q.szp = src == anvil_dt_u8 ? 7 : -3;
                    q.dzp = out == anvil_dt_u8 ? 100 : 5;
                    run_case(q, seed++);
                }
    }
}

TEST_CASE("conv: f32 and bf16 outputs of a quarter of the L3 (non-temporal stores) vs the reference") {
    // The JIT kernels store f32 / bf16 outputs of at least a quarter of the
    // L3 around the caches (conv_gemm.cpp): 1x1 and 3x3 layers past that
    // size, plain, with a fused chain and with one they do not fuse
    // (sigmoid: the portable chain for fp32, the masked path for lp).
    const int64_t l3 = anvil::cpu::info().caches.l3;
    uint64_t seed = 9500;
    for (const dt type : {anvil_dt_f32, anvil_dt_bf16}) {
        const int64_t image_bytes = 28 * 28 * 48 * (type == anvil_dt_f32 ? 4 : 2);
        const int64_t mb = (l3 / 4 + image_bytes - 1) / image_bytes;
        if (mb > 512) {
            MESSAGE("L3 of ", l3, " bytes: the output would be too large for a test, skipped");
            return;
        }
        for (const char *geom : {"ic8ih28iw28_oc48_kh1", "ic6ih28iw28_oc48_kh3sh1ph1"}) {
            conv_shape s;
            std::string err;
            REQUIRE(anvil::conv::parse_conv_descriptor("mb" + std::to_string(mb) + "_" + geom, &s, &err));
            for (int ch : {0, 9, 5}) {
                conv_cfg q;
                q.s = s;
                q.src = q.wei = q.dst = type;
                q.ops = chain(ch);
                q.bias = ch == 9;
                q.peer = false;  // the reference only (oneDNN would double the time)
                run_case(q, seed++);
            }
        }
    }
}

TEST_CASE("conv: random fractions (f32, bf16) within the accumulation bound") {
    const auto t0 = std::chrono::steady_clock::now();
    const auto tails = load_shapes("conv_tails");
    tu::rng r(8);
    uint64_t seed = 3000;
    const dt kF[][3] = {{anvil_dt_f32, anvil_dt_f32, anvil_dt_f32},
                        {anvil_dt_bf16, anvil_dt_bf16, anvil_dt_f32},
                        {anvil_dt_bf16, anvil_dt_bf16, anvil_dt_bf16}};
    for (size_t li = 0; li < tails.size(); ++li)
        for (int k = 0; k < 3; ++k) {
            conv_cfg q;
            q.s = tails[li];
            q.src = kF[k][0];
            q.wei = kF[k][1];
            q.dst = kF[k][2];
            q.f = fill::fraction;
            q.layout = (li + k) % 2 ? anvil_conv_weights_hwio : anvil_conv_weights_oihw;
            q.bias = r.ival(0, 1);
            q.ops = chain(int(r.ival(0, kNumChains - 1)));
            q.scale_mode = int(r.ival(0, 2));
            q.pow2_scales = r.ival(0, 1);
            q.peer = (li + k) % 2 == 0;
            run_case(q, seed++);
        }
    // Model layers, checked on sampled pixels.
    int idx = 0;
    for (const char *file : {"conv_resnet50", "conv_mobilenet_v2"})
        for (const auto &s0 : load_shapes(file)) {
            if (idx++ % 3) continue;
            conv_cfg q;
            q.s = s0;
            q.s.mb = 1;
            const int k = idx % 3;
            q.src = kF[k][0];
            q.wei = kF[k][1];
            q.dst = kF[k][2];
            q.f = fill::fraction;
            q.acc = acc_src::samples;
            q.layout = idx % 2 ? anvil_conv_weights_hwio : anvil_conv_weights_oihw;
            q.bias = true;
            q.ops = chain(idx % 2 ? 1 : 2);
            q.peer = !scalar_cap();
            run_case(q, seed++);
        }
    MESSAGE("fraction cases in ", elapsed(t0), " s");
}

TEST_CASE("conv: ResNet-50 and MobileNet-v2 layers vs oneDNN and the reference") {
    const auto t0 = std::chrono::steady_clock::now();
    // Under the scalar cap (anvil's slowest path) and under emulation only
    // mb 1 (mb 2 adds no kernel path: the same tiles over twice the rows).
    const int max_mb = scalar_cap() || tu::emulated() ? 1 : 2;
    tu::rng r(9);
    uint64_t seed = 5000;
    int li = 0;
    for (const char *file : {"conv_resnet50", "conv_mobilenet_v2"}) {
        for (const auto &s0 : load_shapes(file)) {
            for (int mb = 1; mb <= max_mb; ++mb) {
                conv_shape s = s0;
                s.mb = mb;
                const int combo = (li * 5 + mb * 3) % kNumCombos;
                conv_cfg q = make_cfg(s, combo, li + mb, r);
                q.acc = acc_src::onednn;
                run_case(q, seed++);
            }
            ++li;
        }
        MESSAGE(std::string(file), ": ", elapsed(t0), " s so far");
    }
    if (g_dnnl_ref_skips || g_dnnl_unimpl || g_dnnl_tie || g_dnnl_gemm_binary) {
        std::string reasons;
        for (const auto &s : g_dnnl_reasons) reasons += "\n  " + s;
        MESSAGE("oneDNN so far: ", g_dnnl_ref_skips, " skipped (reference impl, large), ", g_dnnl_unimpl,
                " unimplemented, ", g_dnnl_gemm_binary, " gemm-conv binary quirk, ", g_dnnl_tie,
                " ties rounded the other way", reasons);
    }
}

// Every unique ResNet-50 and MobileNet-v2 layer in every type combination
// (13 src / weights / dst triples), mb 1, at the CPU's own tier only (the
// ctest entry whose cap is what the CPU has: the JIT kernels here); the
// other caps and mb 2 rotate the combinations in the case above.  Each
// element against oneDNN's accumulators, sampled pixels against the
// scalar reference.
TEST_CASE("conv: every ResNet-50 and MobileNet-v2 layer in every type combination (native tier)") {
    if (anvil_get_effective_isa() != anvil_get_detected_isa() || tu::emulated()) {
        MESSAGE("runs only uncapped, natively (the cap's own entry rotates the types)");
        return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    tu::rng r(19);
    uint64_t seed = 80000;
    int n = 0, li = 0;
    for (const char *file : {"conv_resnet50", "conv_mobilenet_v2"})
        for (const auto &s0 : load_shapes(file)) {
            for (int combo = 0; combo < kNumCombos; ++combo) {
                conv_shape s = s0;
                s.mb = 1;
                conv_cfg q = make_cfg(s, combo, li + combo, r);
                q.acc = acc_src::onednn;
                run_case(q, seed++);
                ++n;
            }
            ++li;
        }
    MESSAGE(n, " layer x type cases in ", elapsed(t0), " s");
}

TEST_CASE("conv: NaN and infinity in a bf16 source and in the weights") {
    // bf16 src or weights with NaN / +-inf at random places, the other
    // operand small integers with some zeros (inf * 0 = NaN); 3x3, 1x1 and
    // depthwise layers (their different kernels); f32 and bf16 outputs, no
    // chain and relu.  IEEE: a NaN or inf reaching a sum decides it in any
    // order (no overflow with these magnitudes).
    // (ic17 / ic3 x 3 taps: kernel rows of an odd element count, read in
    // place with the next pixel's first channel masked off -- conv_plan::
    // row_k -- or gathered with a zero there.)
    const char *kShapes[] = {"mb2ic17ih9iw7oc20kh3ph1", "mb1ic32ih6iw7oc48kh1ph0", "mb1g32ic32ih8iw9oc32kh3ph1",
                             "mb1g64ic64ih7iw7oc64oh4ow4kh3sh2ph1", "mb1ic3ih15iw13oc24oh8ow7kh3sh2ph1",
                             "mb1ic3ih12iw12oc32oh12ow12kh7ph3"};
    tu::rng r(88);
    int c = 0;
    for (const char *text : kShapes)
        for (int in_weights = 0; in_weights < 2; ++in_weights)
            for (dt out : {anvil_dt_f32, anvil_dt_bf16})
                for (int relu = 0; relu < 2; ++relu) {
                    conv_shape s;
                    std::string err;
                    REQUIRE(anvil::conv::parse_conv_descriptor(text, &s, &err));
                    conv_cfg q;
                    q.s = s;
                    q.src = q.wei = anvil_dt_bf16;
                    q.dst = out;
                    if (relu) q.ops = {eltwise(anvil_eltwise_relu)};
                    q.peer = false;
                    conv_problem P;
                    build_problem(q, 42 + uint64_t(c++), P);
                    auto *src = reinterpret_cast<uint16_t *>(P.src.p);
                    auto *wei = reinterpret_cast<uint16_t *>(P.wei.p);
                    const int64_t ns = cr::src_elems(P.d), nw = cr::wei_elems(P.d);
                    uint16_t *special = in_weights ? wei : src;
                    uint16_t *other = in_weights ? src : wei;
                    const int64_t n_special = in_weights ? nw : ns, n_other = in_weights ? ns : nw;
                    const float kinds[3] = {tu::qnan(), tu::inf(), -tu::inf()};
                    for (int t = 0; t < 4 + int(n_special / 150); ++t)
                        special[r.ival(0, n_special - 1)] = cr::f32_to_bf16(kinds[r.ival(0, 2)]);
                    for (int64_t k = 0; k < n_other; k += 7) other[k] = 0;
                    tbuf dst(cr::dst_elems(P.d), out);
                    anvil_run(P, anvil_conv_weights_oihw, dst);
                    // Whether pixel p's window reaches into the padding.
                    const anvil_conv2d_desc_t &d = P.d;
                    auto touches_padding = [&](int64_t p) {
                        const int64_t oh = p / d.OW % d.OH, ow = p % d.OW;
                        const int64_t ih0 = oh * d.SH - d.pad_t, iw0 = ow * d.SW - d.pad_l;
                        const int64_t ih1 = ih0 + (d.KH - 1) * (d.DH + 1), iw1 = iw0 + (d.KW - 1) * (d.DW + 1);
                        return ih0 < 0 || iw0 < 0 || ih1 >= d.IH || iw1 >= d.IW;
                    };
                    int64_t bad = 0, nonfinite = 0;
                    cr::chain_args ca;
                    for (int64_t p = 0; p < cr::pixels(d); ++p)
                        for (int64_t oc = 0; oc < d.OC; ++oc) {
                            const cr::acc_value a =
                                cr::conv_acc(d, P.src.p, P.wei.p, anvil_conv_weights_oihw, p, oc);
                            const cr::expect e = cr::run_chain(d, a, 0.0, p, oc, ca);
                            nonfinite += !std::isfinite(e.v);
                            const double got = cr::load(out, dst.p, p * d.OC + oc);
                            // Non-finite weights and a window over the padding: the
                            // implicit-GEMM path may multiply the padding's zeros by
                            // them (0 * inf = NaN; anvil.h, conv2d), the depthwise
                            // kernels skip those taps.
                            const bool nan_ok = in_weights && d.G == 1 && touches_padding(p) && std::isnan(got);
                            bad += !nan_ok && !cr::output_ok(out, e.v, 0.0, got);
                        }
                    INFO(std::string(text), std::string(in_weights ? " specials in weights" : " specials in src"), " out=", out, " relu=", relu);
                    CHECK(nonfinite > 10);
                    CHECK(bad == 0);
                }
}

// ------------------------------------------------------------ threads

namespace {

struct run_out {
    std::vector<uint8_t> bytes;
};

// One problem executed by one handle into a fresh dst; returns its bytes.
std::vector<uint8_t> exec_bytes(anvil_conv2d_t h, const conv_problem &P, const void *packed) {
    tbuf dst(cr::dst_elems(P.d), P.d.dst_dt);
    REQUIRE(anvil_conv2d_execute(h, P.src.p, packed, P.bias.empty() ? nullptr : P.bias.data(), dst.p,
                                 P.bin_ptrs.empty() ? nullptr : P.bin_ptrs.data()) == anvil_success);
    return std::vector<uint8_t>(dst.p, dst.p + dst.bytes);
}

// u8 source, s8 weights, u8 destination over the full byte range, with a
// source and a destination zero point and per-channel scales (not powers
// of two): the int8 requantising configuration of the thread tests.
void set_u8_requant(conv_cfg &q) {
    q.src = anvil_dt_u8;
    q.wei = anvil_dt_s8;
    q.dst = anvil_dt_u8;
    q.f = fill::full_range;
    q.szp = 128;
    q.dzp = 3;
    q.scale_mode = 2;
    q.pow2_scales = false;
}

std::vector<conv_cfg> thread_cases() {
    std::vector<conv_cfg> v;
    conv_shape s;
    std::string err;
    REQUIRE(anvil::conv::parse_conv_descriptor("mb2ic64ih20iw19oc96kh3ph1", &s, &err));
    conv_cfg q;
    q.s = s;
    q.f = fill::fraction;  // f32: the summation order shows in the bits
    q.bias = true;
    q.ops = chain(2);
    v.push_back(q);
    set_u8_requant(q);
    q.ops = chain(1);
    v.push_back(q);
    REQUIRE(anvil::conv::parse_conv_descriptor("mb2g144ic144ih28iw27oc144kh3sh2ph1", &s, &err));
    conv_cfg dw;
    dw.s = s;
    dw.src = dw.wei = anvil_dt_bf16;
    dw.dst = anvil_dt_bf16;
    dw.f = fill::fraction;
    dw.ops = chain(6);
    v.push_back(dw);
    // Small depthwise maps, where several threads take blocks of fewer
    // channels (conv_dw.cpp, choose_split; a last block narrower than the
    // others): f32 written directly, f32 through the acc buffer and the
    // chain, u8 with the chain fused into the kernels.
    for (const char *desc : {"mb1g960ic960ih7iw7oc960kh3ph1", "mb1g200ic200ih9iw7oc200kh3ph1",
                             "mb1g576ic576ih14iw14oc576kh3sh2ph1"}) {
        REQUIRE(anvil::conv::parse_conv_descriptor(desc, &s, &err));
        conv_cfg small_dw;
        small_dw.s = s;
        small_dw.f = fill::fraction;
        v.push_back(small_dw);
        small_dw.bias = true;
        small_dw.ops = chain(2);
        v.push_back(small_dw);
        set_u8_requant(small_dw);
        small_dw.ops = chain(1);
        v.push_back(small_dw);
    }
    // Small maps, where several threads split the work finer (fewer
    // panels per block, then fewer pixels per 1x1 unit): f32 and bf16.
    for (const char *desc : {"mb1ic96ih7iw7oc160kh1", "mb1ic64ih7iw7oc96kh3ph1"}) {
        REQUIRE(anvil::conv::parse_conv_descriptor(desc, &s, &err));
        conv_cfg small;
        small.s = s;
        small.f = fill::fraction;
        small.bias = true;
        small.ops = chain(2);
        v.push_back(small);
        small.src = small.wei = small.dst = anvil_dt_bf16;
        v.push_back(small);
    }
    return v;
}

}  // namespace

TEST_CASE("conv: bitwise identical for 1 and 2 threads, a caller pool, both layouts") {
    const int initial = anvil_get_num_threads();
    uint64_t seed = 77;
    for (const conv_cfg &q : thread_cases()) {
        INFO(q.str());
        conv_problem P;
        build_problem(q, seed++, P);
        tu::std_thread_pool pool;
        pool.threads = 3;
        std::vector<uint8_t> out[4];
        for (int t = 0; t < 4; ++t) {
            if (t < 2) REQUIRE(anvil_set_num_threads(t + 1) == anvil_success);
            else  // a caller's pool of 3 threads that reports 3, then (t == 3) 300 workers
                REQUIRE(anvil_set_threadpool(&tu::std_thread_pool::parallel_for, &pool, t == 2 ? 3 : 300) ==
                        anvil_success);
            anvil_conv2d_t h = nullptr;
            REQUIRE(anvil_conv2d_create(&h, &P.d) == anvil_success);
            size_t bytes = 0;
            REQUIRE(anvil_conv2d_packed_weights_size(h, &bytes) == anvil_success);
            std::vector<uint32_t> packed(bytes / 4 + 1);
            // t == 3: the other layout too.
            std::vector<uint8_t> w(P.wei.p, P.wei.p + P.wei.bytes);
            anvil_conv_weights_layout_t l = anvil_conv_weights_oihw;
            if (t == 3) {
                // Rewrite the weights as HWIO.
                const int64_t esz = cr::elem_bytes(P.d.wei_dt);
                for (int64_t oc = 0; oc < P.d.OC; ++oc)
                    for (int64_t ic = 0; ic < cr::icg(P.d); ++ic)
                        for (int64_t kh = 0; kh < P.d.KH; ++kh)
                            for (int64_t kw = 0; kw < P.d.KW; ++kw)
                                std::memcpy(&w[size_t(cr::wei_at(P.d, anvil_conv_weights_hwio, oc, ic, kh, kw) * esz)],
                                            P.wei.p + cr::wei_at(P.d, anvil_conv_weights_oihw, oc, ic, kh, kw) * esz,
                                            size_t(esz));
                l = anvil_conv_weights_hwio;
            }
            REQUIRE(anvil_conv2d_pack_weights(h, w.data(), l, packed.data()) == anvil_success);
            out[t] = exec_bytes(h, P, packed.data());
            anvil_conv2d_destroy(h);
        }
        REQUIRE(anvil_set_threadpool(nullptr, nullptr, 1) == anvil_success);
        anvil_set_num_threads(initial);
        CHECK(pool.calls.load() > 0);
        for (int t = 1; t < 4; ++t) {
            INFO("run ", t);
            CHECK(out[0] == out[t]);
        }
    }
}

TEST_CASE("conv: concurrent execute on one handle; packed weights reused by a second handle") {
    uint64_t seed = 91;
    for (const conv_cfg &q : thread_cases()) {
        INFO(q.str());
        conv_problem P, P2;
        build_problem(q, seed, P);
        build_problem(q, seed + 1000, P2);  // a second src (same shape) for the other thread
        ++seed;
        anvil_conv2d_t h = nullptr;
        REQUIRE(anvil_conv2d_create(&h, &P.d) == anvil_success);
        size_t bytes = 0;
        REQUIRE(anvil_conv2d_packed_weights_size(h, &bytes) == anvil_success);
        std::vector<uint32_t> packed(bytes / 4 + 1);
        REQUIRE(anvil_conv2d_pack_weights(h, P.wei.p, anvil_conv_weights_oihw, packed.data()) == anvil_success);
        const std::vector<uint8_t> want1 = exec_bytes(h, P, packed.data());
        const std::vector<uint8_t> want2 = exec_bytes(h, P2, packed.data());
        std::vector<uint8_t> got1, got2;
        std::atomic<int> errors{0};
        auto worker = [&](const conv_problem &X, const std::vector<uint8_t> &want, std::vector<uint8_t> *got) {
            for (int it = 0; it < 3; ++it) {
                tbuf dst(cr::dst_elems(X.d), X.d.dst_dt);
                if (anvil_conv2d_execute(h, X.src.p, packed.data(), X.bias.empty() ? nullptr : X.bias.data(),
                                         dst.p, X.bin_ptrs.empty() ? nullptr : X.bin_ptrs.data()) != anvil_success)
                    ++errors;
                *got = std::vector<uint8_t>(dst.p, dst.p + dst.bytes);
                if (*got != want) ++errors;
            }
        };
        std::thread a(worker, std::cref(P), std::cref(want1), &got1);
        std::thread b(worker, std::cref(P2), std::cref(want2), &got2);
        a.join();
        b.join();
        CHECK(errors.load() == 0);
        // A second handle with the same descriptor executes with a copy of
        // the packed bytes after the first handle is gone.
        std::vector<uint32_t> copy = packed;
        anvil_conv2d_destroy(h);
        anvil_conv2d_t h2 = nullptr;
        REQUIRE(anvil_conv2d_create(&h2, &P.d) == anvil_success);
        CHECK(exec_bytes(h2, P, copy.data()) == want1);
        anvil_conv2d_destroy(h2);
    }
}

TEST_SUITE("once") {
// dst bytes of P on a handle created, packed (OIHW) and destroyed here:
// kernels chosen under the overrides in force.
std::vector<uint8_t> exec_fresh_handle(const conv_problem &P) {
    anvil_conv2d_t h = nullptr;
    REQUIRE(anvil_conv2d_create(&h, &P.d) == anvil_success);
    size_t bytes = 0;
    REQUIRE(anvil_conv2d_packed_weights_size(h, &bytes) == anvil_success);
    std::vector<uint32_t> packed(bytes / 4 + 1);
    REQUIRE(anvil_conv2d_pack_weights(h, P.wei.p, anvil_conv_weights_oihw, packed.data()) == anvil_success);
    std::vector<uint8_t> out = exec_bytes(h, P, packed.data());
    anvil_conv2d_destroy(h);
    return out;
}

// Puts a test override (set(-1): the default) back when the scope ends.
template <void (*Set)(int)>
struct override_restore {
    override_restore() = default;
    ~override_restore() { Set(-1); }
};

// Depthwise shapes that reach every kind of kernel call: 3x3 stride 1 and
// 2, 5x5, dilation, channel counts with every remainder shape.
const std::vector<const char *> kDwKernelShapes = {
    "g32mb1ic32ih13iw17oc32kh3ph1", "g77mb1ic77ih9iw11oc77kh3sh2ph1",    "g144mb2ic144ih8iw8oc144kh3ph1",
    "g50mb1ic50ih12iw12oc50kh5ph2", "g130mb1ic130ih9iw10oc130kh3dh1ph2", "g16mb1ic16ih6iw30oc16kh3sh2ph1"};

// For each descriptor and variant, the problem configure(q, variant) makes
// runs with set_override(0) and set_override(1) (fresh handles); the dst
// bytes must match.  Returns the number of problems compared.
template <typename Configure, typename SetOverride>
int same_bytes_both_ways(const std::vector<const char *> &descs, int variants, uint64_t seed,
                         Configure configure, SetOverride set_override) {
    int compared = 0;
    for (const char *desc : descs)
        for (int variant = 0; variant < variants; ++variant) {
            conv_shape s;
            std::string err;
            REQUIRE(anvil::conv::parse_conv_descriptor(desc, &s, &err));
            conv_cfg q;
            q.s = s;
            configure(q, variant);
            INFO(q.str());
            conv_problem P;
            build_problem(q, seed++, P);
            std::vector<uint8_t> out[2];
            for (int on = 0; on <= 1; ++on) {
                set_override(on);
                out[on] = exec_fresh_handle(P);
            }
            CHECK(out[0] == out[1]);
            ++compared;
        }
    return compared;
}

// bf16 convolutions on kernels that read the source widened to fp32 (the
// default where vdpbf16ps is slow, cpu_info::bf16_dot_half_rate; forced on
// and off here, so any AVX512-BF16 CPU runs both) store the bits of the
// vdpbf16ps kernels: padded 3x3 (K segments, row tiles), 1x1 contiguous and
// strided, the 7x7 stem (im2col rows), groups with odd channels (channel
// padding in the view), dilation; fused and unfused chains, f32 and bf16
// outputs; random fractions, so the order of each pair's roundings shows.
TEST_CASE("conv bf16: kernels on a widened source give the vdpbf16ps kernels' bits") {
    if (!lt::widened_bf16_kernels_here()) return;
    const lt::widen_override_scope restore;
    const std::vector<const char *> descs = {
        "mb1ic64ih14iw13oc96kh3ph1",  "mb2ic64ih9iw9oc80kh1",         "mb1ic64ih14iw14oc48kh1sh2",
        "mb1ic3ih30iw29oc64kh7sh2ph3", "g2mb1ic34ih9iw10oc18kh3ph1", "mb1ic32ih12iw12oc40kh3dh1ph2",
        "mb1ic33ih7iw7oc17kh3ph1"};
    const int compared = same_bytes_both_ways(
        descs, 3, 4242,
        [](conv_cfg &q, int variant) {
            q.src = q.wei = anvil_dt_bf16;
            q.dst = variant == 1 ? anvil_dt_f32 : anvil_dt_bf16;
            q.f = fill::fraction;
            q.bias = variant != 0;
            q.ops = chain(variant == 0 ? 0 : variant == 1 ? 2 : 4);
        },
        [](int on) { anvil::lowp::set_widen_bf16_a_override(on); });
    MESSAGE(compared, " convolutions compared");
}

// int8 depthwise convolutions on the byte-dot row kernels (vpdpbusd on
// permuted source bytes, the zero point folded into the starting values;
// forced on here wherever the CPU has AVX512-VBMI and the cap AVX512-VNNI,
// the default on Intel: cpu_info::int8_dw_byte_dot) give
// the bytes of the int32-row kernels: u8 and s8 sources, source zero
// points (0, 0 < zp, negative), full-range data, 3x3 stride 1 and 2,
// 5x5, dilation, channel counts with every remainder shape, fused and
// unfused chains, u8 / s8 / f32 outputs.
TEST_CASE("conv int8 depthwise: byte-dot kernels give the int32-row kernels' bytes") {
    const anvil::conv::dw_backend &be = anvil::conv::select_dw_backend();
    if (!be.supports_byte_dot()) return;
    const override_restore<anvil::conv::set_dw_byte_dot_override> restore;
    std::vector<const char *> descs = kDwKernelShapes;
    descs.push_back("g64mb1ic64ih7iw7oc64kh3ph1");
    const int compared = same_bytes_both_ways(
        descs, 4, 5151,
        [](conv_cfg &q, int variant) {
            q.src = variant % 2 ? anvil_dt_s8 : anvil_dt_u8;
            q.wei = anvil_dt_s8;
            q.dst = variant == 2 ? anvil_dt_f32 : variant == 3 ? anvil_dt_s8 : anvil_dt_u8;
            q.f = fill::full_range;
            q.szp = variant == 0 ? 0 : variant == 1 ? -7 : variant == 2 ? 131 : 100;
            q.dzp = variant == 3 ? 3 : 0;
            q.bias = variant != 1;
            q.scale_mode = variant == 2 ? 2 : 1;
            q.pow2_scales = false;
            q.ops = chain(variant == 0 ? 0 : 1);
        },
        [](int on) { anvil::conv::set_dw_byte_dot_override(on); });
    MESSAGE(compared, " convolutions compared");
}

// bf16 depthwise convolutions on the pair-dot kernels (two kernel rows per
// vdpbf16ps; forced on and off here wherever the cap allows AVX512-BF16,
// the default where vdpbf16ps is not slow: cpu_info::bf16_dot_half_rate)
// give the FMA kernels' bytes on integer data (every sum exact): 3x3
// stride 1 and 2, 5x5, dilation, maps whose rows see 1..3 kernel rows,
// channel counts with every last-slot shape (ymm whole / masked, zmm
// masked), fused and unfused chains, bf16 / f32 outputs.  With random
// fractions the sums round in another order; those stay within the
// accumulation bound against the reference (forced on).
TEST_CASE("conv bf16 depthwise: pair-dot kernels give the FMA kernels' bytes on integer data") {
    const anvil::conv::dw_backend &be = anvil::conv::select_dw_backend();
    if (!be.supports_bf16_pair_dot()) return;
    const override_restore<anvil::conv::set_dw_bf16_pair_override> restore;
    std::vector<const char *> descs = kDwKernelShapes;
    for (const char *d : {"g24mb1ic24ih7iw7oc24kh3ph1", "g9mb1ic9ih5iw12oc9kh3ph1", "g40mb1ic40ih3iw9oc40kh3ph1"})
        descs.push_back(d);
    const int compared = same_bytes_both_ways(
        descs, 3, 6161,
        [](conv_cfg &q, int variant) {
            q.src = q.wei = anvil_dt_bf16;
            q.dst = variant == 1 ? anvil_dt_f32 : anvil_dt_bf16;
            q.f = fill::small_int;
            q.bias = variant != 0;
            q.scale_mode = variant == 2 ? 2 : 0;
            q.ops = chain(variant == 0 ? 0 : 1);
        },
        [](int on) { anvil::conv::set_dw_bf16_pair_override(on); });
    MESSAGE(compared, " convolutions compared");
    anvil::conv::set_dw_bf16_pair_override(1);
    uint64_t seed = 6262;
    for (const char *desc : descs)
        for (int variant = 0; variant < 2; ++variant) {
            conv_cfg q;
            std::string err;
            REQUIRE(anvil::conv::parse_conv_descriptor(desc, &q.s, &err));
            q.src = q.wei = anvil_dt_bf16;
            q.dst = variant ? anvil_dt_bf16 : anvil_dt_f32;
            q.f = fill::fraction;
            q.bias = variant != 0;
            q.ops = chain(variant);
            run_case(q, seed++);
        }
}

// Depthwise layers with small maps and many channels, where 2..4 threads
// (and a caller pool of 300 workers) split the channels into narrower
// blocks than one thread (conv_dw.cpp,
// choose_split: multiples of 32 channels, of 64 for the int8 byte-dot
// kernels): the same bytes for 1, 2, 3 and 4 threads, for f32 (written
// directly and through the chain), bf16 with and without the pair-dot
// kernels and u8 with and without the byte-dot kernels where the CPU has
// them.  Fractions for f32 / bf16, so any change of summation order shows.
TEST_CASE("conv depthwise: the same bytes for 1 to 4 threads, every kernel kind") {
    const anvil::conv::dw_backend &be = anvil::conv::select_dw_backend();
    const override_restore<anvil::conv::set_dw_byte_dot_override> restore_dot;
    const override_restore<anvil::conv::set_dw_bf16_pair_override> restore_pair;
    const int initial = anvil_get_num_threads();
    std::vector<std::string> descs = {"mb1g960ic960ih7iw7oc960kh3ph1", "mb1g200ic200ih9iw7oc200kh3ph1",
                                      "mb1g576ic576ih14iw14oc576kh3sh2ph1", "mb2g352ic352ih5iw6oc352kh3ph1"};
    // And random small maps: any channel count, 3x3 / 5x5, strides 1..3,
    // padding up to the kernel size, dilation.
    tu::rng shapes(8080);
    for (int i = 0; i < 12; ++i) {
        const int64_t c = shapes.ival(1, 700), k = shapes.ival(0, 1) ? 3 : 5, d = shapes.ival(0, 3) == 0;
        const int64_t ext = (k - 1) * (d + 1) + 1, p = shapes.ival(0, k - 1);
        const int64_t h = shapes.ival(std::max<int64_t>(1, ext - 2 * p), 16), w = shapes.ival(std::max<int64_t>(1, ext - 2 * p), 16);
        descs.push_back("mb" + std::to_string(shapes.ival(1, 2)) + "g" + std::to_string(c) + "ic" + std::to_string(c) +
                        "ih" + std::to_string(h) + "iw" + std::to_string(w) + "oc" + std::to_string(c) + "kh" +
                        std::to_string(k) + "sh" + std::to_string(shapes.ival(1, 3)) + "ph" + std::to_string(p) +
                        "dh" + std::to_string(d));
    }
    uint64_t seed = 8181;
    int compared = 0;
    for (const std::string &desc : descs)
        for (int variant = 0; variant < 6; ++variant) {
            const bool special = variant == 3 || variant == 5;  // pair-dot / byte-dot kernels forced on
            if (variant == 3 && !be.supports_bf16_pair_dot()) continue;
            if (variant == 5 && !be.supports_byte_dot()) continue;
            conv_cfg q;
            std::string err;
            REQUIRE(anvil::conv::parse_conv_descriptor(desc, &q.s, &err));
            q.f = fill::fraction;
            q.bias = variant != 0;
            q.ops = chain(variant == 0 ? 0 : variant == 1 ? 2 : 1);
            if (variant == 2 || variant == 3) q.src = q.wei = q.dst = anvil_dt_bf16;
            if (variant >= 4) set_u8_requant(q);
            INFO(q.str(), " variant ", variant);
            anvil::conv::set_dw_bf16_pair_override(variant == 3 ? 1 : 0);
            anvil::conv::set_dw_byte_dot_override(variant == 5 ? 1 : 0);
            conv_problem P;
            build_problem(q, seed++, P);
            std::vector<uint8_t> out[5];
            for (int t = 0; t < 4; ++t) {
                REQUIRE(anvil_set_num_threads(t + 1) == anvil_success);
                out[t] = exec_fresh_handle(P);
            }
            anvil_set_num_threads(initial);
            // A caller pool that says it runs 300 workers (two threads do):
            // more workers than items, and the split search's item cap.
            tu::std_thread_pool pool;
            REQUIRE(anvil_set_threadpool(&tu::std_thread_pool::parallel_for, &pool, 300) == anvil_success);
            out[4] = exec_fresh_handle(P);
            REQUIRE(anvil_set_threadpool(nullptr, nullptr, 1) == anvil_success);
            for (int t = 1; t < 5; ++t) {
                const std::string who = t < 4 ? "threads " + std::to_string(t + 1) : "a pool of 300 workers";
                INFO(who, (special ? " (kernels forced on)" : ""));
                CHECK(out[0] == out[t]);
            }
            ++compared;
        }
    MESSAGE(compared, " convolutions compared");
}
}  // TEST_SUITE("once")
