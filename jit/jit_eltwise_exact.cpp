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
    };
    for (uint32_t v : table) g.dd(v);
}

struct emitter {
    CodeGenerator &g;
    const Label &consts;
    Address c(int k) const { return g.ptr_b[g.rip + consts + k * 4]; }

    // ExpSplit of hwy_postops.cc for an argument x already in [-172, 0]
    // (its NaN screen and clamp are identities there): m = p * 2^n1 into m,
    // s2 = 2^n2 into s2.  x and r are clobbered.
    void exp_split(const Zmm &x, const Zmm &m, const Zmm &s2, const Zmm &r) {
        g.vmulps(s2, x, c(kLog2e));  // t = x log2(e)
        g.vaddps(s2, s2, c(kMagic));
        g.vsubps(s2, s2, c(kMagic));  // nf: t rounded to nearest even
        g.vmulps(r, s2, c(kLn2Hi));
        g.vsubps(r, x, r);
        g.vmulps(x, s2, c(kLn2Lo));
        g.vsubps(r, r, x);  // r = (x - nf C1) - nf C2
        // Taylor polynomial of degree 7, Horner with separate mul and add.
        g.vmulps(m, r, c(kP7));
        for (int k : {kP6, kP5, kP4, kP3, kP2, kOne}) {
            g.vaddps(m, m, c(k));
            g.vmulps(m, m, r);
        }
        g.vaddps(m, m, c(kOne));  // p
        // 2^n = 2^n1 2^n2, n1 = n >> 1 (arithmetic), n2 = n - n1.
        g.vcvttps2dq(s2, s2);  // exact: nf is an integer
        g.vpsrad(x, s2, 1);
        g.vpsubd(s2, s2, x);
        g.vpaddd(x, x, c(kBias127));
        g.vpslld(x, x, 23);  // 2^n1
        g.vpaddd(s2, s2, c(kBias127));
        g.vpslld(s2, s2, 23);  // 2^n2
        g.vmulps(m, m, x);     // m = p 2^n1, exact
    }

    // v = v * sigmoid(t) (MulSigmoid) for t in a (clobbered) with the sign
    // of v, exp's argument floored at `floor_k`.
    void mul_sigmoid(const Zmm &v, const Zmm &a, int floor_k, const Zmm &b, const Zmm &cc,
                     const Zmm &d, const Opmask &k_a, const Opmask &k_b) {
        g.vpord(a, a, c(kSign));  // -|t|
        g.vcmpps(k_a, a, c(floor_k), 1);  // -|t| < floor: the result is -0 (x < 0)
        g.vmaxps(a, a, c(floor_k));
        exp_split(a, d, b, cc);  // d = m, b = s2
        g.vmulps(cc, d, b);
        g.vaddps(cc, cc, c(kOne));         // den = 1 + m s2
        g.vmaxps(a, v, c(kNegClamp));      // xc
        g.vmulps(a, a, d);                 // xc m
        g.vcmpps(k_b, v, c(kZero), 1);     // x < 0
        g.vblendmps(a | k_b, v, a);        // x < 0 ? xc m : x
        g.vdivps(a, a, cc);                // q
        g.vmulps(d, a, b);                 // q s2
        g.vbroadcastss(d | k_a, c_plain(kNegZero));
        g.vblendmps(a | k_b, a, d);        // x < 0 ? (floor ? -0 : q s2) : q
        keep_nan(v, a, k_a);
    }

    // v = isnan(v) ? v : y.
    void keep_nan(const Zmm &v, const Zmm &y, const Opmask &k) {
        g.vcmpps(k, v, v, 3);  // unordered
        g.vblendmps(v | k, y, v);
    }

    Address c_plain(int k) const { return g.ptr[g.rip + consts + k * 4]; }
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
    emitter e{g, consts};
    switch (op) {
        case exact_eltwise::gelu_tanh:
            // t = x (c1 + c2 x^2) = 2u, then x sigmoid(t), exp floored at -80.
            g.vmulps(t0, v, v);
            g.vmulps(t0, t0, e.c(kGeluC2));
            g.vaddps(t0, t0, e.c(kGeluC1));
            g.vmulps(t0, t0, v);
            e.mul_sigmoid(v, t0, kGeluFloor, t1, t2, t3, k_a, k_b);
            break;
        case exact_eltwise::silu:
            g.vmovaps(t0, v);
            e.mul_sigmoid(v, t0, kExpFloor, t1, t2, t3, k_a, k_b);
            break;
        case exact_eltwise::sigmoid:
            // e = exp(-|x|) = m s2: 1 / (1 + e) for x >= 0, (m / (1 + e)) s2 below.
            g.vpord(t0, v, e.c(kSign));
            g.vmaxps(t0, t0, e.c(kExpFloor));  // exp's clamp; -|x| <= 0 < 89
            e.exp_split(t0, t3, t1, t2);       // t3 = m, t1 = s2
            g.vmulps(t2, t3, t1);
            g.vaddps(t2, t2, e.c(kOne));  // den
            g.vcmpps(k_b, v, e.c(kZero), 1);
            g.vbroadcastss(t0, e.c_plain(kOne));
            g.vmovaps(t0 | k_b, t3);  // x < 0 ? m : 1
            g.vdivps(t0, t0, t2);     // q
            g.vmulps(t3, t0, t1);
            g.vmovaps(t0 | k_b, t3);  // x < 0 ? q s2 : q
            e.keep_nan(v, t0, k_a);
            break;
    }
}

}  // namespace anvil::jit
