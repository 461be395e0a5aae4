// AMX palette 1: ldtilecfg, sttilecfg, tilerelease, tilezero, tileloadd[t1],
// tilestored, tdpbf16ps and tdpb[su][su]d, following the operation sections
// of the Intel SDM (Vol. 2, "Intel AMX Instruction Set Reference") and the
// exception classes of its section "Intel AMX Instruction Exception Classes"
// (AMX-E1..E4), as far as they can arise in user code.
//
// A tile holds 16 rows x 64 bytes here; the configured shape (rows, colsb)
// selects the part an instruction reads and writes, and every write zeroes
// the bytes beyond colsb in each written row and the rows beyond `rows`
// (write_row_and_zero / zero_upper_rows in the SDM pseudo-code).
#include <xmmintrin.h>

#include <cmath>
#include <cstdio>

#include "amx_emu_machine.h"

namespace anvil::test::emu {

void release_tiles(machine &m) {
    // TILERELEASE / palette 0: the init state; tile data reads as zero.
    m.tiles_configured = false;
    std::memset(m.tilecfg, 0, sizeof m.tilecfg);
    std::memset(m.rows, 0, sizeof m.rows);
    std::memset(m.colsb, 0, sizeof m.colsb);
    std::memset(m.tile, 0, sizeof m.tile);
}

namespace {

std::string tmm_name(int t) { return "tmm" + std::to_string(t); }

int tile_number(const machine &m, const insn &in, const ZydisDecodedOperand &op) {
    if (op.type != ZYDIS_OPERAND_TYPE_REGISTER ||
        ZydisRegisterGetClass(op.reg.value) != ZYDIS_REGCLASS_TMM)
        m.unmodelled(in, "tile operand form");
    return op.reg.value - ZYDIS_REGISTER_TMM0;
}

// #UD unless tiles are configured and tile t has a shape (rows and colsb
// both non-zero; ldtilecfg guarantees they are zero or non-zero together).
void require_valid(const machine &m, const insn &in, int t) {
    if (!m.tiles_configured) m.fail(in, "tile instruction while tiles are not configured (#UD)");
    if (m.rows[t] == 0 || m.colsb[t] == 0)
        m.fail(in, tmm_name(t) + " has no shape in the loaded tile configuration (#UD)");
}

// Loads and stores also need colsb to be a multiple of 4 (the tile's rows
// are moved in dwords).  The emulator is strict here: the SDM's exception
// class text was not available to check whether this is #UD for
// tileloadd/tilestored too (it is for the dot products).
void require_dword_rows(const machine &m, const insn &in, int t) {
    if (m.colsb[t] % 4)
        m.fail(in, tmm_name(t) + ": colsb " + std::to_string(m.colsb[t]) +
                       " is not a multiple of 4 (#UD)");
}

// ---- configuration

void exec_ldtilecfg(machine &m, const insn &in) {
    uint8_t cfg[64];
    load_bytes(cfg, effective_address(m, in, in.v(0)), 64);
    const int palette = cfg[0];
    if (palette == 0) {  // the init state, as tilerelease
        release_tiles(m);
        return;
    }
    if (palette != 1) m.fail(in, "ldtilecfg: palette " + std::to_string(palette) + " (#GP)");
    for (int b = 2; b < 64; ++b) {
        const bool reserved = b < 16 || (b >= 32 && b < 48) || b >= 56;
        if (reserved && cfg[b])
            m.fail(in, "ldtilecfg: reserved byte " + std::to_string(b) + " is not zero (#GP)");
    }
    uint8_t rows[8];
    uint16_t colsb[8];
    for (int t = 0; t < 8; ++t) {
        colsb[t] = uint16_t(cfg[16 + 2 * t] | (cfg[17 + 2 * t] << 8));
        rows[t] = cfg[48 + t];
        if (colsb[t] > 64 || rows[t] > 16)
            m.fail(in, "ldtilecfg: " + tmm_name(t) + " is " + std::to_string(rows[t]) + " x " +
                           std::to_string(colsb[t]) + " bytes, palette 1 allows 16 x 64 (#GP)");
        // An unused tile has rows == colsb == 0; one zero and the other
        // not is an invalid configuration.
        if ((rows[t] == 0) != (colsb[t] == 0))
            m.fail(in, "ldtilecfg: " + tmm_name(t) + " has rows " + std::to_string(rows[t]) +
                           " and colsb " + std::to_string(colsb[t]) + " (#GP)");
    }
    // start_row is only non-zero when an interrupted tileloadd/tilestored
    // restarts; the emulator does not model restarts.
    if (cfg[1] != 0) m.unmodelled(in, "ldtilecfg with start_row != 0");
    release_tiles(m);  // a successful ldtilecfg zeroes all tile data
    m.tiles_configured = true;
    std::memcpy(m.tilecfg, cfg, 64);
    std::memcpy(m.rows, rows, sizeof rows);
    std::memcpy(m.colsb, colsb, sizeof colsb);
}

void exec_sttilecfg(machine &m, const insn &in) {
    uint8_t cfg[64] = {};  // unconfigured: 64 zero bytes
    if (m.tiles_configured) std::memcpy(cfg, m.tilecfg, 64);
    store_bytes(effective_address(m, in, in.v(0)), cfg, 64);
}

// ---- data movement

// Start address and stride of tileloadd / tilestored's SIB operand: the
// SDM computes membegin = base + displacement and stride = index << scale,
// with stride 0 when the encoding has no index register.
void tile_address(const machine &m, const insn &in, const ZydisDecodedOperand &op,
                  uint64_t *begin, uint64_t *stride) {
    if (op.type != ZYDIS_OPERAND_TYPE_MEMORY) m.unmodelled(in, "tile memory operand form");
    ZydisDecodedOperand base_only = op;
    base_only.mem.index = ZYDIS_REGISTER_NONE;
    base_only.mem.scale = 0;
    *begin = effective_address(m, in, base_only);
    *stride = 0;
    if (op.mem.index != ZYDIS_REGISTER_NONE) {
        if (ZydisRegisterGetClass(op.mem.index) != ZYDIS_REGCLASS_GPR64)
            m.unmodelled(in, "tile stride register");
        *stride = read_gpr(m, in, op.mem.index) * (op.mem.scale ? op.mem.scale : 1);
    }
}

void exec_tileload(machine &m, const insn &in) {
    const int t = tile_number(m, in, in.v(0));
    require_valid(m, in, t);
    require_dword_rows(m, in, t);
    uint64_t begin = 0, stride = 0;
    tile_address(m, in, in.v(1), &begin, &stride);
    std::memset(m.tile[t], 0, sizeof m.tile[t]);
    for (int r = 0; r < m.rows[t]; ++r)
        load_bytes(m.tile[t][r], begin + uint64_t(r) * stride, m.colsb[t]);
}

void exec_tilestore(machine &m, const insn &in) {
    const int t = tile_number(m, in, in.v(1));
    require_valid(m, in, t);
    require_dword_rows(m, in, t);
    uint64_t begin = 0, stride = 0;
    tile_address(m, in, in.v(0), &begin, &stride);
    for (int r = 0; r < m.rows[t]; ++r)
        store_bytes(begin + uint64_t(r) * stride, m.tile[t][r], m.colsb[t]);
}

// ---- dot products

// AMX-E4 shape checks of tdp* tsrcdest (C, m x n), tsrc1 (A, m x k),
// tsrc2 (B, k x n); every violation is #UD.
void check_dot_shapes(const machine &m, const insn &in, int c, int a, int b) {
    if (in.nval != 3) m.unmodelled(in, "operand count");
    if (c == a || c == b || a == b) m.fail(in, "the three tiles must be distinct (#UD)");
    for (int t : {c, a, b}) {
        require_valid(m, in, t);
        require_dword_rows(m, in, t);
    }
    auto shape = [&](int t) {
        return tmm_name(t) + " " + std::to_string(m.rows[t]) + "x" + std::to_string(m.colsb[t]) + "B";
    };
    const std::string shapes = " (C " + shape(c) + ", A " + shape(a) + ", B " + shape(b) + ")";
    if (m.colsb[c] != m.colsb[b]) m.fail(in, "C.colsb != B.colsb (#UD)" + shapes);
    if (m.rows[c] != m.rows[a]) m.fail(in, "C.rows != A.rows (#UD)" + shapes);
    if (m.colsb[a] / 4 != m.rows[b]) m.fail(in, "A.colsb / 4 != B.rows (#UD)" + shapes);
    // tmul_maxn = tmul_maxk = 16 (palette 1): implied by the limits
    // ldtilecfg enforces, kept as the SDM lists them.
    if (m.colsb[c] / 4 > 16 || m.colsb[a] / 4 > 16 || m.rows[b] > 16)
        m.fail(in, "dot-product shape beyond tmul_maxn / tmul_maxk (#UD)" + shapes);
}

// After C has been written: zero the bytes beyond colsb and the rows
// beyond rows (write_row_and_zero, zero_upper_rows).
void zero_outside_shape(machine &m, int t) {
    for (int r = 0; r < 16; ++r) {
        if (r < m.rows[t])
            std::memset(m.tile[t][r] + m.colsb[t], 0, size_t(64 - m.colsb[t]));
        else
            std::memset(m.tile[t][r], 0, 64);
    }
}

// TDPBSSD / TDPBSUD / TDPBUSD / TDPBUUD: C.dword[m][n] += sum over k and
// i < 4 of A.byte[m][4k+i] * B.byte[k][4n+i]; the first of the two s/u
// letters is A's signedness, the second B's.  32-bit wrapping sums (no
// saturation).
void exec_dpb(machine &m, const insn &in, bool a_signed, bool b_signed) {
    const int c = tile_number(m, in, in.v(0)), a = tile_number(m, in, in.v(1)),
              b = tile_number(m, in, in.v(2));
    check_dot_shapes(m, in, c, a, b);
    auto ext = [](uint8_t v, bool s) { return s ? int32_t(int8_t(v)) : int32_t(v); };
    const int M = m.rows[c], N = m.colsb[c] / 4, K = m.colsb[a] / 4;
    for (int i = 0; i < M; ++i) {
        for (int n = 0; n < N; ++n) {
            uint32_t acc;
            std::memcpy(&acc, m.tile[c][i] + 4 * n, 4);
            for (int k = 0; k < K; ++k) {
                int32_t dot = 0;  // |dot| <= 4 * 255 * 255: no overflow
                for (int e = 0; e < 4; ++e)
                    dot += ext(m.tile[a][i][4 * k + e], a_signed) * ext(m.tile[b][k][4 * n + e], b_signed);
                acc += uint32_t(dot);  // wraps modulo 2^32
            }
            std::memcpy(m.tile[c][i] + 4 * n, &acc, 4);
        }
    }
    zero_outside_shape(m, c);
}

// ---- TDPBF16PS arithmetic
//
// The SDM operation section (TDPBF16PS) keeps, per output element, two fp32
// accumulators that start at zero: temp1.fp32[2n] sums the products of the
// even bf16 of each pair, temp1.fp32[2n+1] those of the odd bf16, each step
// "FP32 FMA with DAZ=FTZ=1, RNE rounding"; after the k loop it adds the two
// (tmpf32 = even + odd, DAZ/FTZ, RNE) and then adds that to C
// (C = C + tmpf32, DAZ/FTZ, RNE).  MXCSR is neither consulted nor updated
// and no exception is raised.  (The Intrinsics Guide's pseudo-code instead
// accumulates straight into C; that rounds differently, and the SDM is
// followed here.)
//
// Each step is one IEEE fp32 FMA, std::fmaf here: a*b + c with a single
// rounding.  For bf16 inputs the product alone is exact in fp32 (8-bit x
// 8-bit significands) unless it overflows or underflows, so "multiply, then
// add with one rounding" and the FMA agree; fmaf is exact in every case.
//
// DAZ: a denormal input (a bf16 element, an accumulator, C) counts as a zero
// of the same sign.  FTZ: a result that is denormal after rounding becomes a
// zero of its sign.  (Whether the hardware detects tininess before or after
// rounding is not modelled: a result within half an ulp below FLT_MIN may
// differ in that edge case.)  NaN results are NaN, but which NaN payload the
// hardware returns is not modelled.

float daz(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; }
float ftz(float x) { return daz(x); }

float bf16_to_fp32(const uint8_t *p) {  // make_fp32: the bf16 bits become the upper half
    const uint32_t bits = uint32_t(p[0] | (p[1] << 8)) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return daz(f);
}

// Host fp arithmetic under the rules above: round to nearest even, no
// FTZ/DAZ of the host's own (those are applied explicitly), exceptions
// masked -- whatever MXCSR the calling test set.
class scoped_mxcsr {
public:
    scoped_mxcsr() : saved_(_mm_getcsr()) { _mm_setcsr(0x1f80); }
    ~scoped_mxcsr() { _mm_setcsr(saved_); }

private:
    unsigned saved_;
};

void exec_tdpbf16ps(machine &m, const insn &in) {
    const int c = tile_number(m, in, in.v(0)), a = tile_number(m, in, in.v(1)),
              b = tile_number(m, in, in.v(2));
    check_dot_shapes(m, in, c, a, b);
    const scoped_mxcsr mxcsr;
    const int M = m.rows[c], N = m.colsb[c] / 4, K = m.colsb[a] / 4;
    for (int i = 0; i < M; ++i) {
        float even[16] = {}, odd[16] = {};
        for (int k = 0; k < K; ++k) {
            for (int n = 0; n < N; ++n) {
                const uint8_t *pa = m.tile[a][i] + 4 * k, *pb = m.tile[b][k] + 4 * n;
                even[n] = ftz(std::fmaf(bf16_to_fp32(pa), bf16_to_fp32(pb), daz(even[n])));
                odd[n] = ftz(std::fmaf(bf16_to_fp32(pa + 2), bf16_to_fp32(pb + 2), daz(odd[n])));
            }
        }
        for (int n = 0; n < N; ++n) {
            float acc;
            std::memcpy(&acc, m.tile[c][i] + 4 * n, 4);
            const float pair = ftz(daz(even[n]) + daz(odd[n]));
            acc = ftz(daz(acc) + pair);
            std::memcpy(m.tile[c][i] + 4 * n, &acc, 4);
        }
    }
    zero_outside_shape(m, c);
}

}  // namespace

bool exec_tiles(machine &m, const insn &in) {
    switch (in.d.mnemonic) {
    case ZYDIS_MNEMONIC_LDTILECFG: exec_ldtilecfg(m, in); return true;
    case ZYDIS_MNEMONIC_STTILECFG: exec_sttilecfg(m, in); return true;
    case ZYDIS_MNEMONIC_TILERELEASE: release_tiles(m); return true;
    case ZYDIS_MNEMONIC_TILEZERO: {
        const int t = tile_number(m, in, in.v(0));
        require_valid(m, in, t);
        std::memset(m.tile[t], 0, sizeof m.tile[t]);
        return true;
    }
    case ZYDIS_MNEMONIC_TILELOADD:
    case ZYDIS_MNEMONIC_TILELOADDT1: exec_tileload(m, in); return true;
    case ZYDIS_MNEMONIC_TILESTORED: exec_tilestore(m, in); return true;
    case ZYDIS_MNEMONIC_TDPBF16PS: exec_tdpbf16ps(m, in); return true;
    case ZYDIS_MNEMONIC_TDPBSSD: exec_dpb(m, in, true, true); return true;
    case ZYDIS_MNEMONIC_TDPBSUD: exec_dpb(m, in, true, false); return true;
    case ZYDIS_MNEMONIC_TDPBUSD: exec_dpb(m, in, false, true); return true;
    case ZYDIS_MNEMONIC_TDPBUUD: exec_dpb(m, in, false, false); return true;
    default: return false;
    }
}

}  // namespace anvil::test::emu
