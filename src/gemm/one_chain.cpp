#include "gemm/one_chain.h"

#include <new>
#include <vector>

namespace anvil::gemm {

namespace {

// The tile kernels of the call: row heights {mr, M % mr} x column widths
// {nr, N % nr}, at most four.
struct tile_kernels {
    ukernel_ref ref[2][2];
    int heights[2] = {0, 0}, widths[2] = {0, 0};

    ukernel_fn find(int m, int n) const {
        for (int h = 0; h < 2; ++h)
            for (int w = 0; w < 2; ++w)
                if (heights[h] == m && widths[w] == n) return ref[h][w].fn;
        return nullptr;
    }
};

}  // namespace

anvil_status_t run_one_chain(const backend &be, const sgemm_problem &p) {
    const int mr = be.mr(), nr = be.nr();
    // B^T copied row-major (K x N): the tile kernels read B by rows.
    std::vector<float> b_copy;
    const float *B = p.B;
    int64_t ldb = p.ldb;
    if (p.transb) {
        try {
            b_copy.resize(size_t(p.K * p.N));
        } catch (const std::bad_alloc &) {
            return anvil_out_of_memory;
        }
        for (int64_t k = 0; k < p.K; ++k)
            for (int64_t j = 0; j < p.N; ++j) b_copy[size_t(k * p.N + j)] = p.B[j * p.ldb + k];
        B = b_copy.data();
        ldb = p.N;
    }
    tile_kernels tk;
    tk.heights[0] = int(std::min<int64_t>(p.M, mr));
    tk.heights[1] = int(p.M % mr);
    tk.widths[0] = int(std::min<int64_t>(p.N, nr));
    tk.widths[1] = int(p.N % nr);
    for (int h = 0; h < 2; ++h)
        for (int w = 0; w < 2; ++w) {
            if (tk.heights[h] == 0 || tk.widths[w] == 0) continue;
            ukernel_desc d{};
            d.tier = uint8_t(be.tier());
            d.m = uint8_t(tk.heights[h]);
            d.n = uint8_t(tk.widths[w]);
            d.a = p.transa ? a_access::k_strided : a_access::row_major;
            d.beta = classify_beta(p.beta);
            d.alpha_one = p.alpha == 1.0f ? 1 : 0;
            if (const anvil_status_t st = be.get(d, &tk.ref[h][w]); st != anvil_success) return st;
        }
    ukernel_args args;
    args.k = p.K;
    args.b_ld = ldb;
    args.ldc = p.ldc;
    args.alpha = p.alpha;
    args.beta = p.beta;
    args.b_next = nullptr;
    args.k_segs = args.a_seg_rs = args.m_tiles = args.a_tile_rs = args.binary_ld = 0;
    args.bias = args.binary = nullptr;
    args.elt_alpha = args.elt_beta = 0.0f;
    for (int64_t i0 = 0; i0 < p.M; i0 += mr) {
        const int m = int(std::min<int64_t>(mr, p.M - i0));
        for (int64_t j0 = 0; j0 < p.N; j0 += nr) {
            const int n = int(std::min<int64_t>(nr, p.N - j0));
            if (p.transa) {  // A^T stored K x M: A(i, k) = A[k * lda + i]
                args.a = p.A + i0;
                args.a_rs = 1;
                args.a_cs = p.lda;
            } else {
                args.a = p.A + i0 * p.lda;
                args.a_rs = p.lda;
                args.a_cs = 1;
            }
            args.b = B + j0;
            args.c = p.C + i0 * p.ldc + j0;
            args.m = m;
            args.n = n;
            tk.find(m, n)(&args);
        }
    }
    return anvil_success;
}

}  // namespace anvil::gemm
