#include "jit/jit_eltwise_exact.h"

#include <cstdint>
#include <cstring>

namespace anvil::jit {

using namespace Xbyak;

namespace {

// Offsets of the constants (dwords) after the `consts` label.
enum : int {
    kSign,       // 0x80000000
    kOne,        // 1.0f
    kZero,       // 0.0f
    kNegZero,    // -0.0f
    kLog2e,      // exp: x log2(e)
    kMagic,      // 1.5 * 2^23: round to nearest integer
    kLn2Hi,      // C1 = 0.693359375
    kLn2Lo,      // C2 = -2.12194440e-4
    kP7,         // 1/5040
    kP6,         // 1/720
    kP5,         // 1/120
    kP4,         // 1/24
    kP3,         // 1/6
    kP2,         // 0.5
    kBias127,    // int 127
    kNegClamp,   // -200: x in the sigmoid-like products
    kGeluFloor,  // -80: gelu_tanh's exp argument floor
    kExpFloor,   // -172: exp's low clamp (silu's floor, sigmoid's clamp)
    kGeluC1,     // 2 sqrt(2/pi)
    kGeluC2,     // 2 sqrt(2/pi) 0.044715, rounded as the portable code does
    kAbsMask,    // 0x7fffffff
    kErfScale,   // 0.5 / sqrt(2): z / 2 = |x| * this
    kErf0,       // erfcc's Chebyshev coefficients, highest power first
    kErf1, kErf2, kErf3, kErf4, kErf5, kErf6, kErf7, kErf8, kErf9,
    kExpCeil,    // 89: exp's high clamp
    kTanhSmall,  // 0.625: tanh's Pade / exp switch
    kTwo,        // 2.0f
    kPade21, kPade1260, kPade10395, kPade210, kPade4725,
    kCount
};

uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof(u));
    return u;
}

// One float per line, in the order above: the same float expressions as
// hwy_postops.cc, so the same roundings.
void put_constants(CodeGenerator &g) {
    const uint32_t table[kCount] = {
        0x80000000u,
        bits(1.0f),
        bits(0.0f),
        bits(-0.0f),
        bits(1.44269504088896341f),
        bits(12582912.0f),
        bits(0.693359375f),
        bits(-2.12194440e-4f),
        bits(1.0f / 5040.0f),
        bits(1.0f / 720.0f),
        bits(1.0f / 120.0f),
        bits(1.0f / 24.0f),
        bits(1.0f / 6.0f),
        bits(0.5f),
        127u,
        bits(-200.0f),
        bits(-80.0f),
        bits(-172.0f),
        bits(1.5957691216057308f),
        bits(1.5957691216057308f * 0.044715f),
        0x7fffffffu,
        bits(0.35355339059327373f),
        bits(0.17087277f),
        bits(-0.82215223f),
        bits(1.48851587f),
        bits(-1.13520398f),
        bits(0.27886807f),
        bits(-0.18628806f),
        bits(0.09678418f),
        bits(0.37409196f),
        bits(1.00002368f),
        bits(-1.26551223f),
        bits(89.0f),
        bits(0.625f),
        bits(2.0f),
        bits(21.0f),
        bits(1260.0f),
        bits(10395.0f),
        bits(210.0f),
        bits(4725.0f),
    };
    for (uint32_t v : table) g.dd(v);
}

// The registers of one vector's computation.
struct stream {
    Zmm v, a, b, c, d;  // the value (in place) and four temporaries
    Opmask ka, kb;
};

// Emits each step for every stream before the next step, so that the
// streams' dependency chains (~110 cycles of latency each) interleave in
// the instruction stream and the out-of-order core overlaps them.
struct emitter {
    CodeGenerator &g;
    const Label &consts;
    stream *ss;
    int n;
    Address c(int k) const { return g.ptr_b[g.rip + consts + k * 4]; }
    Address c_plain(int k) const { return g.ptr[g.rip + consts + k * 4]; }
    template <typename F>
    void each(F f) {
        for (int i = 0; i < n; ++i) f(ss[i]);
    }

    // ExpSplit of hwy_postops.cc for an argument x (in a) already in
    // [-172, 0] (its NaN screen and clamp are identities there): m = p *
    // 2^n1 into d, s2 = 2^n2 into b; a and c are clobbered.
    void exp_split() {
        each([&](stream &s) { g.vmulps(s.b, s.a, c(kLog2e)); });  // t = x log2(e)
        each([&](stream &s) { g.vaddps(s.b, s.b, c(kMagic)); });
        each([&](stream &s) { g.vsubps(s.b, s.b, c(kMagic)); });  // nf: t rounded to nearest even
        each([&](stream &s) { g.vmulps(s.c, s.b, c(kLn2Hi)); });
        each([&](stream &s) { g.vsubps(s.c, s.a, s.c); });
        each([&](stream &s) { g.vmulps(s.a, s.b, c(kLn2Lo)); });
        each([&](stream &s) { g.vsubps(s.c, s.c, s.a); });  // r = (x - nf C1) - nf C2
        // Taylor polynomial of degree 7, Horner with separate mul and add.
        each([&](stream &s) { g.vmulps(s.d, s.c, c(kP7)); });
        for (int k : {kP6, kP5, kP4, kP3, kP2, kOne}) {
            each([&](stream &s) { g.vaddps(s.d, s.d, c(k)); });
            each([&](stream &s) { g.vmulps(s.d, s.d, s.c); });
        }
        each([&](stream &s) { g.vaddps(s.d, s.d, c(kOne)); });  // p
        // 2^n = 2^n1 2^n2, n1 = n >> 1 (arithmetic), n2 = n - n1.
        each([&](stream &s) { g.vcvttps2dq(s.b, s.b); });  // exact: nf is an integer
        each([&](stream &s) { g.vpsrad(s.a, s.b, 1); });
        each([&](stream &s) { g.vpsubd(s.b, s.b, s.a); });
        each([&](stream &s) { g.vpaddd(s.a, s.a, c(kBias127)); });
        each([&](stream &s) { g.vpslld(s.a, s.a, 23); });  // 2^n1
        each([&](stream &s) { g.vpaddd(s.b, s.b, c(kBias127)); });
        each([&](stream &s) { g.vpslld(s.b, s.b, 23); });  // 2^n2
        each([&](stream &s) { g.vmulps(s.d, s.d, s.a); });  // m = p 2^n1, exact
    }

    // v = v * sigmoid(t) (MulSigmoid) for t in a (clobbered) with the sign
    // of v, exp's argument floored at `floor_k`.
    void mul_sigmoid(int floor_k) {
        each([&](stream &s) { g.vpord(s.a, s.a, c(kSign)); });  // -|t|
        // -|t| < floor: the result is -0 (x < 0)
        each([&](stream &s) { g.vcmpps(s.ka, s.a, c(floor_k), 1); });
        each([&](stream &s) { g.vmaxps(s.a, s.a, c(floor_k)); });
        exp_split();  // d = m, b = s2
        each([&](stream &s) { g.vmulps(s.c, s.d, s.b); });
        each([&](stream &s) { g.vaddps(s.c, s.c, c(kOne)); });  // den = 1 + m s2
        each([&](stream &s) { g.vmaxps(s.a, s.v, c(kNegClamp)); });  // xc
        each([&](stream &s) { g.vmulps(s.a, s.a, s.d); });  // xc m
        each([&](stream &s) { g.vcmpps(s.kb, s.v, c(kZero), 1); });  // x < 0
        each([&](stream &s) { g.vblendmps(s.a | s.kb, s.v, s.a); });  // x < 0 ? xc m : x
        each([&](stream &s) { g.vdivps(s.a, s.a, s.c); });  // q
        each([&](stream &s) { g.vmulps(s.d, s.a, s.b); });  // q s2
        each([&](stream &s) { g.vbroadcastss(s.d | s.ka, c_plain(kNegZero)); });
        // x < 0 ? (floor ? -0 : q s2) : q
        each([&](stream &s) { g.vblendmps(s.a | s.kb, s.a, s.d); });
        keep_nan();
    }

    // sigmoid: e = exp(-|x|) = m s2: 1 / (1 + e) for x >= 0, (m / (1 + e))
    // s2 below.
    void sigmoid() {
        each([&](stream &s) { g.vpord(s.a, s.v, c(kSign)); });
        each([&](stream &s) { g.vmaxps(s.a, s.a, c(kExpFloor)); });  // exp's clamp; -|x| <= 0 < 89
        exp_split();  // d = m, b = s2
        each([&](stream &s) { g.vmulps(s.c, s.d, s.b); });
        each([&](stream &s) { g.vaddps(s.c, s.c, c(kOne)); });  // den
        each([&](stream &s) { g.vcmpps(s.kb, s.v, c(kZero), 1); });
        each([&](stream &s) { g.vbroadcastss(s.a, c_plain(kOne)); });
        each([&](stream &s) { g.vmovaps(s.a | s.kb, s.d); });  // x < 0 ? m : 1
        each([&](stream &s) { g.vdivps(s.a, s.a, s.c); });    // q
        each([&](stream &s) { g.vmulps(s.d, s.a, s.b); });
        each([&](stream &s) { g.vmovaps(s.a | s.kb, s.d); });  // x < 0 ? q s2 : q
        keep_nan();
    }

    // gelu_erf: x - 0.5 x erfc(z) for x >= 0, 0.5 x erfc(|z|) below (z =
    // x / sqrt(2)), erfc(z) = t exp(p(t) - z^2) with t = 1 / (1 + z / 2);
    // for x < 0 ((0.5 x t) m) s2, with exp(...) = m s2.  t is computed
    // twice (before exp for p, after it for the products) so that four
    // temporaries do, which lets two vectors interleave.
    void erf_t(const Zmm stream::*t, const Zmm stream::*tmp) {
        each([&](stream &s) { g.vpandd(s.*tmp, s.v, c(kAbsMask)); });
        each([&](stream &s) { g.vmulps(s.*tmp, s.*tmp, c(kErfScale)); });
        each([&](stream &s) { g.vaddps(s.*tmp, s.*tmp, c(kOne)); });
        each([&](stream &s) { g.vbroadcastss(s.*t, c_plain(kOne)); });
        each([&](stream &s) { g.vdivps(s.*t, s.*t, s.*tmp); });
    }

    void gelu_erf() {
        erf_t(&stream::c, &stream::a);  // t in c
        each([&](stream &s) { g.vmulps(s.d, s.c, c(kErf0)); });
        for (int k = kErf1; k <= kErf9; ++k) {
            each([&](stream &s) { g.vaddps(s.d, s.d, c(k)); });
            if (k < kErf9) each([&](stream &s) { g.vmulps(s.d, s.d, s.c); });
        }
        each([&](stream &s) { g.vmulps(s.a, s.v, s.v); });
        each([&](stream &s) { g.vmulps(s.a, s.a, c(kP2)); });  // z^2 = x x 0.5
        each([&](stream &s) { g.vsubps(s.d, s.d, s.a); });     // arg = p - z^2
        // Below exp's floor (|x| > 12.6) the result is -0 (x < 0) or x.
        each([&](stream &s) { g.vcmpps(s.ka, s.d, c(kGeluFloor), 1); });
        each([&](stream &s) { g.vmaxps(s.a, s.d, c(kGeluFloor)); });
        exp_split();  // d = m, b = s2
        // Those lanes' products would only be discarded (x < 0) or rounded
        // away (1 - 0.5 erfc = 1 for erfc < 2^-25), but t m s2 is subnormal
        // for |x| > ~3000 and costs a microcode assist per vector: m = 0
        // there gives the same results without them.
        each([&](stream &s) { g.vxorps(s.d | s.ka, s.d, s.d); });
        erf_t(&stream::a, &stream::c);  // t in a
        each([&](stream &s) { g.vmaxps(s.c, s.v, c(kNegClamp)); });
        each([&](stream &s) { g.vmulps(s.c, s.c, c(kP2)); });  // hx = 0.5 x (clamped)
        each([&](stream &s) { g.vmulps(s.c, s.c, s.a); });
        each([&](stream &s) { g.vmulps(s.c, s.c, s.d); });
        each([&](stream &s) { g.vmulps(s.c, s.c, s.b); });  // neg = ((hx t) m) s2
        each([&](stream &s) { g.vbroadcastss(s.c | s.ka, c_plain(kNegZero)); });
        each([&](stream &s) { g.vmulps(s.d, s.d, s.b); });
        each([&](stream &s) { g.vmulps(s.d, s.a, s.d); });  // erfc = t (m s2)
        each([&](stream &s) { g.vmulps(s.d, s.d, c(kP2)); });
        each([&](stream &s) { g.vbroadcastss(s.a, c_plain(kOne)); });
        each([&](stream &s) { g.vsubps(s.a, s.a, s.d); });
        each([&](stream &s) { g.vmulps(s.a, s.v, s.a); });  // pos = x (1 - 0.5 erfc)
        each([&](stream &s) { g.vcmpps(s.kb, s.v, c(kZero), 1); });
        each([&](stream &s) { g.vblendmps(s.a | s.kb, s.a, s.c); });  // x < 0 ? neg : pos
        keep_nan();
    }

    // tanh: for |x| < 0.625 x (P / Q), the [5/6] Pade approximant (P = 10395
    // + 1260 x^2 + 21 x^4, Q = 10395 + 4725 x^2 + 210 x^4 + x^6);
    // otherwise 1 - 2 / (exp(2|x|) + 1) with the sign of x.
    void tanh() {
        each([&](stream &s) { g.vpandd(s.a, s.v, c(kAbsMask)); });
        each([&](stream &s) { g.vcmpps(s.kb, s.a, c(kTanhSmall), 1); });  // |x| < 0.625
        each([&](stream &s) { g.vaddps(s.a, s.a, s.a); });
        each([&](stream &s) { g.vminps(s.a, s.a, c(kExpCeil)); });  // exp's clamp (2|x| >= 0)
        exp_split();  // d = m, b = s2
        each([&](stream &s) { g.vmulps(s.d, s.d, s.b); });  // e = exp(2|x|)
        each([&](stream &s) { g.vmulps(s.a, s.v, s.v); });  // y = x^2
        each([&](stream &s) { g.vmulps(s.b, s.a, c(kPade21)); });
        each([&](stream &s) { g.vaddps(s.b, s.b, c(kPade1260)); });
        each([&](stream &s) { g.vmulps(s.b, s.b, s.a); });
        each([&](stream &s) { g.vaddps(s.b, s.b, c(kPade10395)); });  // P
        each([&](stream &s) { g.vaddps(s.c, s.a, c(kPade210)); });
        each([&](stream &s) { g.vmulps(s.c, s.c, s.a); });
        each([&](stream &s) { g.vaddps(s.c, s.c, c(kPade4725)); });
        each([&](stream &s) { g.vmulps(s.c, s.c, s.a); });
        each([&](stream &s) { g.vaddps(s.c, s.c, c(kPade10395)); });  // Q
        each([&](stream &s) { g.vaddps(s.d, s.d, c(kOne)); });         // e + 1
        each([&](stream &s) { g.vbroadcastss(s.a, c_plain(kTwo)); });
        each([&](stream &s) { g.vmovaps(s.a | s.kb, s.b); });  // small ? P : 2
        each([&](stream &s) { g.vmovaps(s.d | s.kb, s.c); });  // small ? Q : e + 1
        each([&](stream &s) { g.vdivps(s.a, s.a, s.d); });     // q
        each([&](stream &s) { g.vmulps(s.b, s.v, s.a); });     // small: x q
        each([&](stream &s) { g.vbroadcastss(s.c, c_plain(kOne)); });
        each([&](stream &s) { g.vsubps(s.c, s.c, s.a); });  // big: 1 - q
        // |big| with the sign of x (ternlog: sign bits from v, the rest from c).
        each([&](stream &s) { g.vpternlogd(s.c, s.v, c(kAbsMask), 0xe4); });
        each([&](stream &s) { g.vmovaps(s.a, s.c); });
        each([&](stream &s) { g.vmovaps(s.a | s.kb, s.b); });
        keep_nan();
    }

    // v = isnan(v) ? v : a.
    void keep_nan() {
        each([&](stream &s) { g.vcmpps(s.ka, s.v, s.v, 3); });  // unordered
        each([&](stream &s) { g.vblendmps(s.v | s.ka, s.a, s.v); });
    }

    void run(exact_eltwise op) {
        switch (op) {
            case exact_eltwise::gelu_tanh:
                // t = x (c1 + c2 x^2) = 2u, then x sigmoid(t), exp floored at -80.
                each([&](stream &s) { g.vmulps(s.a, s.v, s.v); });
                each([&](stream &s) { g.vmulps(s.a, s.a, c(kGeluC2)); });
                each([&](stream &s) { g.vaddps(s.a, s.a, c(kGeluC1)); });
                each([&](stream &s) { g.vmulps(s.a, s.a, s.v); });
                mul_sigmoid(kGeluFloor);
                break;
            case exact_eltwise::silu:
                each([&](stream &s) { g.vmovaps(s.a, s.v); });
                mul_sigmoid(kExpFloor);
                break;
            case exact_eltwise::sigmoid: sigmoid(); break;
            case exact_eltwise::gelu_erf: gelu_erf(); break;
            case exact_eltwise::tanh: tanh(); break;
        }
    }
};

}  // namespace

void emit_eltwise_constants(CodeGenerator &g, Label &consts) {
    g.ud2();  // never reached: marks the end of the code (see emit_store_constants)
    g.align(64);
    g.L(consts);
    put_constants(g);
}

void emit_exact_eltwise(CodeGenerator &g, exact_eltwise op, const Zmm &v, const Label &consts,
                        const Zmm &t0, const Zmm &t1, const Zmm &t2, const Zmm &t3,
                        const Opmask &k_a, const Opmask &k_b) {
    stream s{v, t0, t1, t2, t3, k_a, k_b};
    emitter{g, consts, &s, 1}.run(op);
}

void emit_exact_eltwise2(CodeGenerator &g, exact_eltwise op, const Label &consts,
                         const eltwise_regs &r0, const eltwise_regs &r1) {
    stream s[2] = {{r0.v, r0.t[0], r0.t[1], r0.t[2], r0.t[3], r0.k_a, r0.k_b},
                   {r1.v, r1.t[0], r1.t[1], r1.t[2], r1.t[3], r1.k_a, r1.k_b}};
    emitter{g, consts, s, 2}.run(op);
}

}  // namespace anvil::jit
