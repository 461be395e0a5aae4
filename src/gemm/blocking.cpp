#include "gemm/blocking.h"

#include <algorithm>

#include "cpu/isa.h"

namespace anvil::gemm {
namespace {

int64_t round_down(int64_t x, int64_t m) { return std::max(m, x / m * m); }
// ceil(x / m) for x >= 0, m > 0, without overflow near INT64_MAX (sizes
// that no call could run still reach here through anvil_explain_sgemm).
int64_t ceil_div_safe(int64_t x, int64_t m) { return x / m + (x % m != 0); }

// Rows up to which A is read in place (the batch-1 inference case and small
// GEMMs): every row tile then streams its rows of A straight from the
// caller's buffer and no copy is made.
constexpr int64_t kSmallM = 16;

// A no larger than this (bytes) is read in place even when its rows alias:
// the copy would cost more than the conflict misses of so few lines.
constexpr int64_t kDirectABytes = 16 * 1024;
// Rows of A whose lines may share an L1 set without thrashing it.
constexpr int64_t kAliasRowsInL1 = 8;

}  // namespace

// lda * 4 bytes a multiple of 2 KiB (lda itself may be near INT64_MAX).
bool stride_aliases_l1(int64_t ld) { return ld % (2048 / int64_t(sizeof(float))) == 0; }

blocking choose_blocking(const backend &be, bool transa, bool transb, int64_t M, int64_t N,
                         int64_t K, int64_t lda, int64_t ldb, bool b_prepacked, int nthreads) {
    (void)transa;
    const cpu::cache_sizes &cs = cpu::info().caches;
    blocking b;
    b.mr = be.mr();
    b.nr = be.nr();
    const int64_t fsz = sizeof(float);

    // KC: the kc x nr micro-panel of B is reused by every row tile of the
    // mc block.  BLIS sizes it to half of L1d; measured on Zen 5 a panel as
    // large as L1d (kc = 384 for 48 KiB) is faster: it halves the passes
    // over C (each pass reads and writes all of C), and the B lines it
    // pushes out are brought back by the kernels' next-block prefetch.
    b.kc = std::clamp<int64_t>(round_down(cs.l1d / (b.nr * fsz), 16), 64, 1024);
    // MC: the mc x kc block of A is reused across all nc/nr panels, so it
    // lives in L2; half of L2 leaves room for the B panels passing through
    // (an eighth on Intel, measured faster: cpu_info::a_block_l2_divisor).
    const int64_t a_block_bytes = cs.l2 / std::max<int64_t>(1, cpu::info().a_block_l2_divisor);
    b.mc = std::clamp<int64_t>(round_down(a_block_bytes / (b.kc * fsz), b.mr), b.mr, 4096);
    // NC: the kc x nc block of packed B is shared by all threads and
    // revisited for every mc block: half of the L3 share.
    b.nc = std::clamp<int64_t>(round_down(cs.l3 / 2 / (b.kc * fsz), b.nr), b.nr, 1 << 20);

    // A is read in place (no copy to amortise) unless its stride makes the
    // rows of a tile collide in L1: with a stride that is a multiple of
    // 2 KiB, more than 8 rows' lines share one or two L1 sets (12 ways,
    // which B and C lines need too) and every k step misses.  The kernels
    // read A in either orientation, and the mc x kc block stays in L2.
    b.pack_a = M > kAliasRowsInL1 && stride_aliases_l1(lda) && M * K > kDirectABytes / fsz;
    if (M <= kSmallM) b.mc = M;  // one row block: the batch-1 inference rows

    // B is copied into panels when it is transposed or large, except for
    // small M: there every element of B is used by at most a few rows, so
    // the copy would cost as much as the product (it is streamed in place).
    // Rows that spread over L1's sets (a stride that is not a 2 KiB
    // multiple) stay in place for more rows (backend::in_place_b_policy).
    const backend::in_place_b_policy in_place = be.in_place_b();
    const bool b_rows_spread = !transb && !stride_aliases_l1(ldb);
    const int64_t in_place_rows =
        b_rows_spread ? std::max(in_place.max_rows, in_place.max_rows_spread) : in_place.max_rows;
    int64_t in_place_kc_cap = M > in_place.max_rows ? in_place.kc_cap_spread : in_place.kc_cap;
    if (!transb && !b_rows_spread && in_place.kc_cap_aliased > 0)
        in_place_kc_cap = in_place_kc_cap > 0 ? std::min(in_place_kc_cap, in_place.kc_cap_aliased)
                                              : in_place.kc_cap_aliased;
    b.pack_b = !b_prepacked && (transb || (M > in_place_rows && K * N > kDirectBBytes / fsz));

    // One row tile and nothing to reuse B for: do not split K at all, so C
    // is read and written once (M = 1..mr, weights streamed once).
    const int64_t row_tiles = ceil_div_safe(M, b.mr);
    if (row_tiles <= 1 && b_prepacked) b.kc = std::max<int64_t>(K, 1);
    if (!b_prepacked && !b.pack_b && M <= in_place_rows && in_place_kc_cap > 0) {
        // B read in place by few rows: short K blocks, so one block of B
        // (kc rows x N) is swept row-block by row-block with a handful of
        // sequential streams instead of K strided ones per panel.
        b.kc = std::min<int64_t>(b.kc, in_place_kc_cap);
        // All rows in one block: a second row block would stream the strips
        // of B from memory again (M = 128 with mc = 126 re-read all of B
        // for 2 rows).  A's block is at most 128 rows x kc_cap_spread.
        b.mc = M;
        // K * N * 4 > l3 / 2 without overflow (sizes near INT64_MAX reach
        // here through anvil_explain_sgemm).
        const bool b_from_memory = K > cs.l3 / 2 / fsz / std::max<int64_t>(N, 1);
        if (M <= in_place.few_rows && b_from_memory && in_place.kc_cap_few_rows > 0)
            b.kc = std::min<int64_t>(b.kc, in_place.kc_cap_few_rows);
    }
    // Spread K evenly over the passes (K = 256 runs as 2 x 128, not
    // 192 + 64): same number of passes over C, no short last pass.
    const int64_t passes = std::max<int64_t>(1, ceil_div_safe(K, b.kc));
    b.kc = std::max<int64_t>(1, ceil_div_safe(K, passes));
    if (b.nc > N) b.nc = std::max<int64_t>(N, 1);

    // Threads split N first (each takes a range of panels of every row
    // block).  When there are fewer panels than threads, split M instead:
    // at least one row block per thread, of near-equal height.
    const int64_t panels = (std::min(b.nc, N) + b.nr - 1) / b.nr;
    if (panels < nthreads && M > b.mr) {
        const int64_t blocks = std::max<int64_t>(ceil_div_safe(M, b.mc), nthreads);
        const int64_t rows = ceil_div_safe(M, blocks);
        b.mc = std::max<int64_t>(b.mr, ceil_div_safe(rows, b.mr) * b.mr);
    }
    return b;
}

std::string describe(const blocking &b) {
    return "mr=" + std::to_string(b.mr) + " nr=" + std::to_string(b.nr) +
           " kc=" + std::to_string(b.kc) + " mc=" + std::to_string(b.mc) +
           " nc=" + std::to_string(b.nc) + " pack_a=" + (b.pack_a ? "yes" : "no") +
           " pack_b=" + (b.pack_b ? "yes" : "no");
}

}  // namespace anvil::gemm
