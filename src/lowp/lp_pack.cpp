// Portable packing loops for the lp GEMMs (see lp_pack.h).  The common
// layouts get dedicated loops: transb == 'T' (weights stored N x K, as
// linear layers keep them) copies whole dwords; transb == 'N' interleaves
// 2 or 4 rows.
#include "lowp/lp_pack.h"

#include <algorithm>
#include <cstring>

namespace anvil::lowp {

namespace {

constexpr int64_t kPanelBytesPerGroup = int64_t(kNR) * kGroupBytes;

template <typename T>
void pack_b_panel(bool transb, int64_t K, int64_t N, const T *B, int64_t ldb, int64_t p,
                  int64_t kg, uint8_t *panel, int32_t *colsum) {
    constexpr int gk = kGroupBytes / int(sizeof(T));
    const int64_t j0 = p * kNR;
    const int64_t nj = std::min<int64_t>(kNR, N - j0);
    std::memset(panel, 0, size_t(kg * kPanelBytesPerGroup));
    T *dst = reinterpret_cast<T *>(panel);
    if (transb) {
        // Column j of op(B) is row j of the stored B: groups are contiguous.
        const int64_t full = K / gk;
        for (int64_t j = 0; j < nj; ++j) {
            const T *src = B + (j0 + j) * ldb;
            for (int64_t g = 0; g < full; ++g)
                std::memcpy(dst + (g * kNR + j) * gk, src + g * gk, kGroupBytes);
            for (int64_t k = full * gk; k < K; ++k) dst[(full * kNR + j) * gk + (k - full * gk)] = src[k];
        }
    } else {
        for (int64_t k = 0; k < K; ++k) {
            const T *src = B + k * ldb + j0;
            T *d = dst + (k / gk) * kNR * gk + (k % gk);
            for (int64_t j = 0; j < nj; ++j) d[j * gk] = src[j];
        }
    }
    if (colsum) {
        // int64 sums, stored modulo 2^32 like the int32 accumulators they
        // are combined with.
        int64_t sums[kNR] = {};
        if constexpr (sizeof(T) == 1) {
            for (int64_t g = 0; g < kg; ++g)
                for (int64_t j = 0; j < kNR; ++j)
                    for (int t = 0; t < gk; ++t) sums[j] += int8_t(dst[(g * kNR + j) * gk + t]);
        }
        for (int64_t j = 0; j < kNR; ++j) colsum[j0 + j] = int32_t(uint32_t(uint64_t(sums[j])));
    }
}

}  // namespace

int64_t packed_b_bytes(lp_kind kind, int64_t K, int64_t N) {
    const int64_t panels = (N + kNR - 1) / kNR;
    return panels * k_groups(kind, K) * kPanelBytesPerGroup;
}

void pack_b(lp_kind kind, bool transb, int64_t K, int64_t N, const void *B, int64_t ldb,
            int64_t p0, int64_t p1, uint8_t *out, int32_t *colsum) {
    const int64_t kg = k_groups(kind, K);
    for (int64_t p = p0; p < p1; ++p) {
        uint8_t *panel = out + p * kg * kPanelBytesPerGroup;
        if (kind == lp_kind::bf16)
            pack_b_panel(transb, K, N, static_cast<const uint16_t *>(B), ldb, p, kg, panel, colsum);
        else
            pack_b_panel(transb, K, N, static_cast<const uint8_t *>(B), ldb, p, kg, panel, colsum);
    }
}

void pack_a(lp_elem elem, bool transa, int64_t K, const void *A, int64_t lda, int64_t i0,
            int64_t i1, uint8_t *out, int64_t row_bytes, int32_t *rowsum) {
    if (elem == lp_elem::bf16) {
        const auto *a = static_cast<const uint16_t *>(A);
        const int64_t padded = k_groups(lp_kind::bf16, K) * 2;
        for (int64_t i = i0; i < i1; ++i) {
            auto *d = reinterpret_cast<uint16_t *>(out + (i - i0) * row_bytes);
            if (!transa) {
                std::memcpy(d, a + i * lda, size_t(K) * 2);
            } else {
                for (int64_t k = 0; k < K; ++k) d[k] = a[k * lda + i];
            }
            for (int64_t k = K; k < padded; ++k) d[k] = 0;
        }
        return;
    }
    const auto *a = static_cast<const uint8_t *>(A);
    const int64_t padded = k_groups(lp_kind::u8s8, K) * 4;
    const bool is_signed = elem == lp_elem::s8;
    const uint8_t flip = is_signed ? 0x80 : 0x00;
    for (int64_t i = i0; i < i1; ++i) {
        uint8_t *d = out + (i - i0) * row_bytes;
        int64_t sum = 0;
        if (!transa) {
            const uint8_t *src = a + i * lda;
            if (is_signed) {
                for (int64_t k = 0; k < K; ++k) {
                    sum += int8_t(src[k]);
                    d[k] = uint8_t(src[k] ^ flip);
                }
            } else {
                for (int64_t k = 0; k < K; ++k) {
                    sum += src[k];
                    d[k] = src[k];
                }
            }
        } else {
            for (int64_t k = 0; k < K; ++k) {
                const uint8_t v = a[k * lda + i];
                sum += is_signed ? int32_t(int8_t(v)) : int32_t(v);
                d[k] = uint8_t(v ^ flip);
            }
        }
        // Padding: the shifted zero, so that the padded k contribute
        // u8(pad) * 0 = 0 (B's padded k are zero anyway).
        for (int64_t k = K; k < padded; ++k) d[k] = 0;
        if (rowsum) rowsum[i - i0] = int32_t(uint32_t(uint64_t(sum)));
    }
}

}  // namespace anvil::lowp
