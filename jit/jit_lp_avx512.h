// AVX-512 low-precision micro-kernel generator (lowp/lp_ukernel.h) on zmm:
// bf16 with vdpbf16ps (AVX512-BF16), u8s8 with vpdpbusd (AVX512-VNNI).
// Specialised on kind, m (1..12), nv (1..2) and accumulate.
#pragma once
#include <optional>
#include <string>

#include "jit/jit_eltwise_exact.h"
#include "jit/jit_lp_generator.h"

namespace anvil::jit {

class jit_lp_avx512 : public jit_lp_generator {
public:
    static constexpr int kLanes = 16;  // dwords per zmm
    static constexpr int kVecBytes = 64;

    explicit jit_lp_avx512(const lowp::lp_ukernel_desc &d);
    static std::string kernel_name(const lowp::lp_ukernel_desc &d);

private:
    // Register map: the m * nv <= 24 accumulators from zmm0 up, the nv B
    // vectors of the current k-group from zmm31 down, and below them up to
    // four A broadcasts, rotating so consecutive rows' broadcasts are
    // independent (bf16 with one vector per row takes A as an embedded
    // {1to16} memory operand instead: k_group).
    Xbyak::Zmm acc(int i, int j) const { return Xbyak::Zmm(i * d_.nv + j); }
    Xbyak::Zmm b_vec(int j) const { return Xbyak::Zmm(31 - j); }
    Xbyak::Zmm bcast(int i) const { return Xbyak::Zmm(31 - d_.nv - i % n_bcast_); }
    // Widened A (desc.a_f32, bf16): each B vector of pairs is split into
    // its element-1 half (b_hi, the high words: already fp32 once the low
    // words are cleared) and its element-0 half (b_lo, shifted up), below
    // them the mask that clears the low words; A's fp32 values are
    // broadcast from memory into the FMAs.
    Xbyak::Zmm b_hi(int j) const { return Xbyak::Zmm(31 - j); }
    Xbyak::Zmm b_lo(int j) const { return Xbyak::Zmm(31 - d_.nv - j); }
    Xbyak::Zmm high_words_mask() const { return Xbyak::Zmm(31 - 2 * d_.nv); }
    // The fused store's compensation colsum x col_factor of vector j,
    // computed once per tile into zmm30 / zmm31 (free at the store) unless
    // a transcendental op takes a row's two vectors together (its second
    // vector's scratch is zmm29..31).
    static Xbyak::Zmm z_comp(int j) { return Xbyak::Zmm(30 + j); }
    bool comp_hoisted() const;
    void k_group_widened(int u);
    void k_group_tail(int u) override;
    Xbyak::Label tail_mask_;  // desc.k_tail: the A dword's valid word, after the code
    bool is_int() const { return d_.kind == lowp::lp_kind::u8s8; }
    // u8 / s8 output of an int8 kernel whose chain after the compensation is
    // at most relu: saturated from int32 directly (store_converted).
    bool int_narrow_store() const;
    bool is_clip() const { return (d_.epi_ops & lowp::EPI_ELT_MASK) == lowp::EPI_ELT_CLIP; }
    void load_vec(const Xbyak::Zmm &z, const Xbyak::Address &src);
    void store_vec(const Xbyak::Address &dst, const Xbyak::Zmm &z);

    void init_acc() override;
    void k_group(int u) override;
    void store_acc() override;
    void prefetch_epilogue() override;
    // The fused epilogue (desc.epi_out != 0): finish and store each row.
    void store_fused();
    void store_fused_rows();  // its rows, masked or (full_cols_) not
    Xbyak::Address dst_at(int offset, int j) const;
    bool nt_ = false;         // emitting full_cols_ stores by non-temporal moves (nt_capable)
    bool nt_capable() const;
    bool full_cols_ = false;  // emitting the store of a tile with every column
    void load_dst_row0();  // rax = dst of the chunk's first row
    void to_chunk_row(const Xbyak::Reg64 &p, const Xbyak::Reg64 &ld, const Xbyak::Reg64 &tmp);
    bool fast_bf16_store() const;
    bool fast_store_screens_rows() const;  // whether the chain can make denormals
    void store_rows_bf16_fast();
    void finish_vec(const Xbyak::Zmm &v, int j);  // the whole chain on one vector
    void finish_pre(const Xbyak::Zmm &v, int j);   // ... up to the transcendental op
    void finish_post(const Xbyak::Zmm &v, int j);  // ... after it
    std::optional<exact_eltwise> elt_op() const;
    void add_residual(const Xbyak::Zmm &v, int j);
    void store_converted(const Xbyak::Zmm &v, int j);
    int dst_elem_bytes() const;
    void prefetch_rows_l2(size_t ptr_field, size_t ld_field, int bytes);
    Xbyak::Label consts_;  // broadcast constants of the conversions, after the code
    Xbyak::Label elt_consts_;  // those of the transcendental eltwise ops

    int n_bcast_ = 0;
};

}  // namespace anvil::jit
