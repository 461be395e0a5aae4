// Packing loops for the lp GEMMs (see lp_pack.h).  B is packed on every
// BLAS-style call, so its loops matter as much as the kernels for small M:
//  - transb == 'N' (B row-major K x N): 2 (bf16) or 4 (int8) rows are
//    interleaved into dwords: whole panels of whole groups with 256-bit
//    Highway shuffles (fallback::interleave_panels, AVX2 and up), the rest
//    16 bytes of each row at a time with SSE2 unpacks (baseline x86-64; a
//    scalar loop elsewhere).
//  - transb == 'T' (weights stored N x K, as linear layers keep them): each
//    group is already a contiguous dword of its row, so packing is a dword
//    transpose, done in 4 x 4 blocks with SSE2.
// Column sums (int8) are taken from the caller's B with loops the compiler
// vectorises; row sums of A likewise.
#include "lowp/lp_pack.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "cpu/isa.h"
#include "fallback/hwy_interleave.h"
#include "lowp/bf16_convert.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace anvil::lowp {

namespace {

constexpr int64_t kPanelBytesPerGroup = int64_t(kNR) * kGroupBytes;

// ---- transb == 'N': interleave gk rows (gk = 2 bf16 or 4 int8) ----------

#if defined(__SSE2__)
// One SSE2 step: the dwords of columns [0, 16) (int8: 4 rows of bytes) or
// [0, 8) (bf16: 2 rows) of the rows r0..r3 (bf16: r0, r1), to dst.
template <int kElem>
inline void interleave_step(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2,
                            const uint8_t *r3, uint8_t *dst) {
    __m128i *out = reinterpret_cast<__m128i *>(dst);
    const __m128i x0 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(r0));
    const __m128i x1 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(r1));
    if constexpr (kElem == 1) {
        const __m128i x2 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(r2));
        const __m128i x3 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(r3));
        const __m128i a = _mm_unpacklo_epi8(x0, x1), b = _mm_unpackhi_epi8(x0, x1);
        const __m128i c = _mm_unpacklo_epi8(x2, x3), d = _mm_unpackhi_epi8(x2, x3);
        _mm_storeu_si128(out + 0, _mm_unpacklo_epi16(a, c));
        _mm_storeu_si128(out + 1, _mm_unpackhi_epi16(a, c));
        _mm_storeu_si128(out + 2, _mm_unpacklo_epi16(b, d));
        _mm_storeu_si128(out + 3, _mm_unpackhi_epi16(b, d));
    } else {
        (void)r2, (void)r3;
        _mm_storeu_si128(out + 0, _mm_unpacklo_epi16(x0, x1));
        _mm_storeu_si128(out + 1, _mm_unpackhi_epi16(x0, x1));
    }
}
#endif

// dst receives, for columns [0, nj) (nj <= kNR), the dwords of the
// 4 / kElem rows at rows[] (a missing row points at zeros), each a byte
// pointer to column 0.  Returns the columns written: nj, or more (up to
// kNR) when the last step ran over zero padding (those dwords are zero).
template <int kElem>
int64_t interleave_rows(const uint8_t *const *rows, int64_t nj, uint8_t *dst) {
    constexpr int gk = 4 / kElem;
    const uint8_t *r0 = rows[0], *r1 = rows[1];
    const uint8_t *r2 = gk > 2 ? rows[2] : r0, *r3 = gk > 2 ? rows[3] : r0;
    int64_t j = 0;
#if defined(__SSE2__)
    constexpr int64_t step = 16 / kElem;  // columns per SSE2 step
    for (; j + step <= nj; j += step)
        interleave_step<kElem>(r0 + j * kElem, r1 + j * kElem, r2 + j * kElem, r3 + j * kElem,
                               dst + j * 4);
    if (j < nj) {
        // The ragged end (N not a multiple of 8 / 16): through zero-padded
        // copies of the rows, one vector step instead of a byte loop per
        // column (which cost more than the kernels at 23x31x17).  The step
        // ends at or before kNR, inside the panel row.
        alignas(16) uint8_t pad[4][16] = {};
        for (int t = 0; t < gk; ++t)
            std::memcpy(pad[t], rows[t] + j * kElem, size_t((nj - j) * kElem));
        interleave_step<kElem>(pad[0], pad[1], pad[2], pad[3], dst + j * 4);
        return j + step;
    }
#endif
    for (; j < nj; ++j)
        for (int t = 0; t < gk; ++t)
            std::memcpy(dst + j * 4 + t * kElem, rows[t] + j * kElem, size_t(kElem));
    return nj;
}

// Groups [g0, g0 + gn) of the row-major B's panels [p0, p1), panel p at
// out + (p - p0) * gn groups.  Group by group, so each row is read once,
// left to right, across all the panels (one page and a few lines per row
// instead of one pass per panel).  Rows past K and columns past N are zero.
template <int kElem>
void pack_block_n(int64_t K, int64_t N, const uint8_t *b, int64_t ldb, int64_t p0, int64_t p1,
                  int64_t g0, int64_t gn, uint8_t *out) {
    constexpr int gk = 4 / kElem;
    static const uint8_t zeros[kNR * 4] = {};
    // A task packs only its own columns of each row (a few lines per 4 KiB
    // page, one page per row), a pattern the hardware prefetchers do not
    // follow, so every group's loads waited on memory.  Prefetching the
    // same columns kPrefetchGroups groups ahead keeps them in flight
    // (measured Zen 5, 1 thread: 16x4096x4096 u8s8s32 212 -> 382 GOP/s,
    // bf16 104 -> 195 GFLOP/s; 4 and 16 groups ahead gave less).  Into
    // L2 (prefetcht2), not L1: where B's rows are a multiple of 4 KiB apart
    // the lines at one column offset of all 32 rows ahead fall in one L1
    // set and evicted each other before use (Zen 5, 1 thread, alternating
    // runs: u8s8s32 16x4096x11008 273-282 -> 338-362 GOP/s; 4096 x 4096,
    // 11008 x 4096 and bf16 within noise).  Intel wants twice as far
    // (cpu_info::pack_prefetch_groups; the measurements are in cpu/isa.h).
    const int64_t kPrefetchGroups = cpu::info().pack_prefetch_groups;
    const int64_t seg_begin = p0 * kNR * kElem, seg_end = std::min(p1 * kNR, N) * kElem;
    const fallback::interleave_panels_fn interleave = fallback::interleave_panels_for_cap();
    for (int64_t g = 0; g < gn; ++g) {
        const uint8_t *rows[4] = {};
        for (int t = 0; t < gk; ++t) {
            const int64_t k = (g0 + g) * gk + t;
            rows[t] = k < K ? b + k * ldb * kElem : nullptr;
        }
        for (int t = 0; t < gk; ++t) {
            const int64_t k = (g0 + g + kPrefetchGroups) * gk + t;
            if (k >= K) break;
            const uint8_t *row = b + k * ldb * kElem;
            for (int64_t off = seg_begin; off < seg_end; off += 64) __builtin_prefetch(row + off, 0, 1);
        }
        // Whole panels of a whole group: 256-bit shuffles where the target
        // has them (fallback::interleave_panels), the loop below for the
        // rest.
        int64_t p = p0;
        const int64_t whole = std::min(p1, N / kNR) - p0;
        if (whole > 0 && rows[0] && rows[gk - 1]) {
            const uint8_t *r[4] = {};
            for (int t = 0; t < gk; ++t) r[t] = rows[t] + p0 * kNR * kElem;
            p += interleave(kElem, r, whole, out + g * kPanelBytesPerGroup, gn * kPanelBytesPerGroup);
        }
        for (; p < p1; ++p) {
            const int64_t j0 = p * kNR, nj = std::min<int64_t>(kNR, N - j0);
            const uint8_t *r[4];
            for (int t = 0; t < gk; ++t) r[t] = rows[t] ? rows[t] + j0 * kElem : zeros;
            uint8_t *dst = out + ((p - p0) * gn + g) * kPanelBytesPerGroup;
            const int64_t done = interleave_rows<kElem>(r, nj, dst);
            if (done < kNR) std::memset(dst + done * 4, 0, size_t((kNR - done) * 4));
        }
    }
}

// ---- transb == 'T': dword transpose ------------------------------------

// Rows ahead that the transpose prefetches (four steps of 4 rows; in-
// process A/B on the Zen 5 VM, 1 thread, B 'T' packed per call: bf16
// 4x4096x4096 +12%, 16x4096x4096 +23%, 3x4096x11008 +13% (8 rows ahead:
// +2%), int8 32x4096x4096 +27%, 256x4096x4096 +6%).
constexpr int64_t kTPrefetchRows = 16;

void pack_panel_t(int elem, int64_t K, int64_t N, const uint8_t *B, int64_t ldb, int64_t j0,
                  int64_t g0, int64_t gn, uint8_t *panel) {
    const int64_t nj = std::min<int64_t>(kNR, N - j0);
    // Validation bounds ((N - 1) * ldb + K) * elem; with one row the stride
    // is never used and ldb * elem alone may overflow.
    const int64_t row_bytes = N > 1 ? ldb * elem : 0;
    // Groups with all their K present, counted from g0.
    const int64_t full = std::clamp<int64_t>(K * elem / kGroupBytes - g0, 0, gn);
    int64_t j = 0;
#if defined(__SSE2__)
    for (; j + 4 <= nj; j += 4) {
        const uint8_t *r[4];
        for (int t = 0; t < 4; ++t) r[t] = B + (j0 + j + t) * row_bytes + g0 * kGroupBytes;
        // The rows kTPrefetchRows on (this panel's or the next one's): a
        // row's segment of the K block is a short stream (a few hundred
        // bytes) that the hardware prefetchers barely start on, and rows
        // are a page or more apart.  Prefetching never faults: rows past N
        // are harmless.
        // (An address, not a pointer into B: it may lie past B's end.)
        const uintptr_t pf = reinterpret_cast<uintptr_t>(B) +
                             uintptr_t((j0 + j + kTPrefetchRows) * row_bytes + g0 * kGroupBytes);
        int64_t g = 0;
        for (; g + 4 <= full; g += 4) {
            if (g % 16 == 0)  // one line of each of the 4 rows per 16 groups
                for (int t = 0; t < 4; ++t)
                    _mm_prefetch(reinterpret_cast<const char *>(pf + uintptr_t(t * row_bytes + g * 4)),
                                 _MM_HINT_T0);
            const __m128 x0 = _mm_loadu_ps(reinterpret_cast<const float *>(r[0] + g * 4));
            const __m128 x1 = _mm_loadu_ps(reinterpret_cast<const float *>(r[1] + g * 4));
            const __m128 x2 = _mm_loadu_ps(reinterpret_cast<const float *>(r[2] + g * 4));
            const __m128 x3 = _mm_loadu_ps(reinterpret_cast<const float *>(r[3] + g * 4));
            // 4 x 4 dword transpose (the bits are moved, never used as floats).
            const __m128 t0 = _mm_unpacklo_ps(x0, x1), t1 = _mm_unpackhi_ps(x0, x1);
            const __m128 t2 = _mm_unpacklo_ps(x2, x3), t3 = _mm_unpackhi_ps(x2, x3);
            uint8_t *d = panel + g * kPanelBytesPerGroup + j * 4;
            _mm_storeu_ps(reinterpret_cast<float *>(d), _mm_movelh_ps(t0, t2));
            _mm_storeu_ps(reinterpret_cast<float *>(d + kPanelBytesPerGroup), _mm_movehl_ps(t2, t0));
            _mm_storeu_ps(reinterpret_cast<float *>(d + 2 * kPanelBytesPerGroup), _mm_movelh_ps(t1, t3));
            _mm_storeu_ps(reinterpret_cast<float *>(d + 3 * kPanelBytesPerGroup), _mm_movehl_ps(t3, t1));
        }
        for (; g < full; ++g)
            for (int t = 0; t < 4; ++t)
                std::memcpy(panel + g * kPanelBytesPerGroup + (j + t) * 4, r[t] + g * 4, 4);
    }
#endif
    for (; j < nj; ++j) {
        const uint8_t *r = B + (j0 + j) * row_bytes + g0 * kGroupBytes;
        for (int64_t g = 0; g < full; ++g)
            std::memcpy(panel + g * kPanelBytesPerGroup + j * 4, r + g * 4, 4);
    }
    // Groups past the full ones: the one partial group (zero-padded) and
    // any beyond K (zero).
    for (int64_t g = full; g < gn; ++g) {
        uint8_t *d = panel + g * kPanelBytesPerGroup;
        std::memset(d, 0, size_t(kPanelBytesPerGroup));
        const int64_t first = (g0 + g) * kGroupBytes;  // byte offset of the group in a row
        const int64_t rest = std::min<int64_t>(kGroupBytes, K * elem - first);
        if (rest > 0)
            for (int64_t jj = 0; jj < nj; ++jj)
                std::memcpy(d + jj * 4, B + (j0 + jj) * row_bytes + first, size_t(rest));
    }
    if (nj < kNR)
        for (int64_t g = 0; g < full; ++g)
            std::memset(panel + g * kPanelBytesPerGroup + nj * 4, 0, size_t((kNR - nj) * 4));
}

// Column sums of op(B) (s8) for the columns [j0, j0 + kNR), zero past N,
// stored modulo 2^32 like the int32 accumulators they are combined with.
void column_sums(bool transb, int64_t K, int64_t N, const int8_t *B, int64_t ldb, int64_t j0,
                 int32_t *colsum) {
    const int64_t nj = std::min<int64_t>(kNR, N - j0);
    int32_t sums[kNR] = {};
    if (!transb) {
        for (int64_t k = 0; k < K; ++k) {
            const int8_t *row = B + k * ldb + j0;
            for (int64_t j = 0; j < nj; ++j) sums[j] += row[j];  // |sum| < 2^31 for K < 2^24
        }
    } else {
        for (int64_t j = 0; j < nj; ++j) {
            const int8_t *row = B + (j0 + j) * ldb;
            int64_t s = 0;
            for (int64_t k = 0; k < K; ++k) s += row[k];
            sums[j] = int32_t(uint32_t(uint64_t(s)));
        }
    }
    std::memcpy(colsum + j0, sums, sizeof(sums));
}

}  // namespace

int64_t packed_b_bytes(lp_kind kind, int64_t K, int64_t N) {
    const int64_t panels = N / kNR + (N % kNR != 0);
    const int64_t groups = k_groups(kind, K);
    return groups == 0 ? 0 : panels * groups * kPanelBytesPerGroup;
}

void pack_b_block(lp_kind kind, bool transb, int64_t K, int64_t N, const void *B, int64_t ldb,
                  int64_t p0, int64_t p1, int64_t g0, int64_t gn, uint8_t *out) {
    const int elem = kind == lp_kind::bf16 ? 2 : 1;
    const auto *b = static_cast<const uint8_t *>(B);
    if (transb) {  // each panel reads its own 32 rows: panel by panel
        for (int64_t p = p0; p < p1; ++p)
            pack_panel_t(elem, K, N, b, ldb, p * kNR, g0, gn, out + (p - p0) * gn * kPanelBytesPerGroup);
        return;
    }
    if (elem == 1)
        pack_block_n<1>(K, N, b, ldb, p0, p1, g0, gn, out);
    else
        pack_block_n<2>(K, N, b, ldb, p0, p1, g0, gn, out);
}

void b_column_sums(bool transb, int64_t K, int64_t N, const int8_t *B, int64_t ldb, int64_t p0,
                   int64_t p1, int32_t *colsum) {
    for (int64_t p = p0; p < p1; ++p) {
        if (K < (int64_t(1) << 24)) {
            column_sums(transb, K, N, B, ldb, p * kNR, colsum);
            continue;
        }
        for (int64_t j = 0; j < kNR; ++j) {  // huge K: int64 sums
            int64_t s = 0;
            if (p * kNR + j < N)
                for (int64_t k = 0; k < K; ++k) s += transb ? B[(p * kNR + j) * ldb + k] : B[k * ldb + p * kNR + j];
            colsum[p * kNR + j] = int32_t(uint32_t(uint64_t(s)));
        }
    }
}

void pack_b(lp_kind kind, bool transb, int64_t K, int64_t N, const void *B, int64_t ldb,
            int64_t p0, int64_t p1, uint8_t *out, int32_t *colsum) {
    // All of K as one block: row-major B is then read row by row across the
    // panels (see pack_b_block), not once per panel.
    const int64_t kg = k_groups(kind, K);
    pack_b_block(kind, transb, K, N, B, ldb, p0, p1, 0, kg, out + p0 * kg * kPanelBytesPerGroup);
    if (!colsum) return;
    if (kind == lp_kind::u8s8)
        b_column_sums(transb, K, N, static_cast<const int8_t *>(B), ldb, p0, p1, colsum);
    else
        std::memset(colsum + p0 * kNR, 0, size_t((p1 - p0) * kNR) * sizeof(int32_t));
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
    for (int64_t i = i0; i < i1; ++i) {
        uint8_t *d = out + (i - i0) * row_bytes;
        if (!transa) {
            const uint8_t *src = a + i * lda;
            if (is_signed)  // s8 -> u8 (+128): the vpdpbusd operand is unsigned
                for (int64_t k = 0; k < K; ++k) d[k] = uint8_t(src[k] ^ 0x80u);
            else
                std::memcpy(d, src, size_t(K));
        } else {
            const uint8_t flip = is_signed ? 0x80 : 0x00;
            for (int64_t k = 0; k < K; ++k) d[k] = uint8_t(a[k * lda + i] ^ flip);
        }
        // Padding k: the kernels multiply it with B's zero padding.
        for (int64_t k = K; k < padded; ++k) d[k] = 0;
        if (rowsum) {
            // Sum of the values as given: the packed bytes minus the shift.
            uint64_t s = 0;
            for (int64_t k = 0; k < K; ++k) s += d[k];
            if (is_signed) s -= uint64_t(128) * uint64_t(K);
            rowsum[i - i0] = int32_t(uint32_t(s));
        }
    }
}

void pack_a_bf16_widened(bool transa, int64_t K, const uint16_t *A, int64_t lda, int64_t i0,
                         int64_t i1, uint8_t *out, int64_t row_bytes) {
    const int64_t padded = k_groups(lp_kind::bf16, K) * 2;
    for (int64_t i = i0; i < i1; ++i) {
        auto *d = reinterpret_cast<float *>(out + (i - i0) * row_bytes);
        if (!transa) {
            convert_bf16_to_f32(A + i * lda, d, K);
        } else {
            for (int64_t k = 0; k < K; ++k) {
                const uint32_t bits = uint32_t(A[k * lda + i]) << 16;
                std::memcpy(&d[k], &bits, 4);
            }
        }
        for (int64_t k = K; k < padded; ++k) d[k] = 0.0f;
    }
}

}  // namespace anvil::lowp
