// C++ consumer of an installed anvil through anvil.hpp: one sgemm on small
// integers (exact in fp32), the same product through a gemm_plan, and the
// exception path.
#include <anvil/anvil.hpp>

#include <cstdint>
#include <cstdio>
#include <type_traits>
#include <utility>
#include <vector>

static_assert(!std::is_copy_constructible<anvil::gemm_plan>::value, "gemm_plan is move-only");
static_assert(std::is_nothrow_move_constructible<anvil::gemm_plan>::value, "noexcept move");
static_assert(!std::is_copy_constructible<anvil::smm>::value, "smm is move-only");

namespace {

constexpr std::int64_t M = 11, N = 13, K = 6;

float a(std::int64_t i, std::int64_t k) { return float((i * 5 + k * 3) % 11 - 5); }
float b(std::int64_t k, std::int64_t j) { return float((k * 7 + j) % 13 - 6); }

// Exact alpha * A * B + beta * c0 in integers.
bool check(const std::vector<float> &C, long alpha, long beta, long c0, const char *what) {
    int bad = 0;
    for (std::int64_t i = 0; i < M; ++i)
        for (std::int64_t j = 0; j < N; ++j) {
            long want = beta * c0;
            for (std::int64_t k = 0; k < K; ++k) want += alpha * long(a(i, k)) * long(b(k, j));
            if (C[size_t(i * N + j)] != float(want) && bad++ < 5)
                std::fprintf(stderr, "%s: C[%lld][%lld] = %g, want %ld\n", what, (long long)i,
                             (long long)j, double(C[size_t(i * N + j)]), want);
        }
    if (bad) std::fprintf(stderr, "%s: %d wrong elements\n", what, bad);
    return bad == 0;
}

}  // namespace

int main() {
    // op(B) = B^T: the caller passes B^T, N x K, ldb = K.
    std::vector<float> A(size_t(M * K)), Bt(size_t(N * K)), B(size_t(K * N));
    for (std::int64_t i = 0; i < M; ++i)
        for (std::int64_t k = 0; k < K; ++k) A[size_t(i * K + k)] = a(i, k);
    for (std::int64_t k = 0; k < K; ++k)
        for (std::int64_t j = 0; j < N; ++j) {
            Bt[size_t(j * K + k)] = b(k, j);
            B[size_t(k * N + j)] = b(k, j);
        }

    try {
        std::vector<float> C(size_t(M * N), 2.f);
        anvil::sgemm('N', 'T', M, N, K, 1.f, A.data(), K, Bt.data(), K, -1.f, C.data(), N);
        if (!check(C, 1, -1, 2, "sgemm")) return 1;

        anvil::gemm_plan plan('N', 'N', M, N, K, K, N, N);
        std::vector<unsigned char> packed(plan.packed_b_size());
        plan.pack_b(B.data(), packed.data());
        std::vector<float> D(size_t(M * N), 0.f);
        plan.execute(3.f, A.data(), packed.data(), 0.f, D.data());
        if (!check(D, 3, 0, 0, "gemm_plan::execute")) return 1;

        anvil::gemm_plan moved = std::move(plan);
        if (plan || !moved) {
            std::fprintf(stderr, "move did not transfer the handle\n");
            return 1;
        }
        moved.pack_b_owned(B.data());
        moved.execute(1.f, A.data(), 1.f, D.data());  // D = 3AB + AB
        if (!check(D, 4, 0, 0, "gemm_plan owned")) return 1;

        // Dispatched small GEMM: C = 2 A B + 0 C, through the raw function
        // where the JIT made one, and through operator().
        const anvil::smm kernel('N', 'N', M, N, K, 2.f, K, N, 0.f, N);
        std::vector<float> E(size_t(M * N), -7.f);
        if (const anvil_smm_fn fn = kernel.function())
            fn(A.data(), B.data(), E.data());
        else
            kernel(A.data(), B.data(), E.data());
        if (!check(E, 2, 0, 0, "smm")) return 1;
        std::vector<float> F(size_t(M * N), -7.f);
        kernel(A.data(), B.data(), F.data());
        if (!check(F, 2, 0, 0, "smm operator()")) return 1;
    } catch (const anvil::error &e) {
        std::fprintf(stderr, "unexpected anvil::error: %s\n", e.what());
        return 1;
    }

    // Low precision: the int8 BLAS-style call and the matmul handle with a
    // relu, on the same small integers (exact).
    try {
        std::vector<std::uint8_t> A8(size_t(M * K));
        std::vector<std::int8_t> B8(size_t(K * N));
        for (std::int64_t i = 0; i < M; ++i)
            for (std::int64_t k = 0; k < K; ++k) A8[size_t(i * K + k)] = std::uint8_t(a(i, k) + 5);
        for (std::int64_t t = 0; t < K * N; ++t) B8[size_t(t)] = std::int8_t(B[size_t(t)]);
        const std::int32_t co = 0;
        std::vector<std::int32_t> C(size_t(M * N));
        // ao = 5 undoes the +5: C = A * B exactly.
        anvil::gemm_u8s8s32('N', 'N', 'F', M, N, K, 1.f, A8.data(), K, 5, B8.data(), N, 0, 0.f,
                            C.data(), N, &co);
        std::vector<float> Cf(C.begin(), C.end());
        if (!check(Cf, 1, 0, 0, "gemm_u8s8s32")) return 1;

        anvil_matmul_desc_t d{};
        d.a_dt = anvil_dt_u8;
        d.b_dt = anvil_dt_s8;
        d.c_dt = anvil_dt_f32;
        d.transa = 'N';
        d.transb = 'N';
        d.M = M;
        d.N = N;
        d.K = K;
        d.lda = K;
        d.ldb = N;
        d.ldc = N;
        d.a_zero_point = 5;
        anvil::matmul mm(d);
        std::vector<unsigned char> packed(mm.packed_weights_size() + 4);
        void *pk = packed.data() + (4 - reinterpret_cast<std::uintptr_t>(packed.data()) % 4) % 4;
        mm.pack_weights(B8.data(), pk);
        std::vector<float> D(size_t(M * N));
        mm.execute(A8.data(), pk, D.data());
        if (!check(D, 1, 0, 0, "matmul")) return 1;
    } catch (const anvil::error &e) {
        std::fprintf(stderr, "unexpected anvil::error (low precision): %s\n", e.what());
        return 1;
    }

    try {
        std::vector<float> C(size_t(M * N), 0.f);
        anvil::sgemm('N', 'N', M, N, K, 1.f, A.data(), K - 1, B.data(), N, 0.f, C.data(), N);
        std::fprintf(stderr, "lda < K did not throw\n");
        return 1;
    } catch (const anvil::error &e) {
        if (e.status() != anvil_bad_leading_dim) {
            std::fprintf(stderr, "lda < K: status %d (%s)\n", int(e.status()), e.what());
            return 1;
        }
    }

    std::printf("consumer_cpp ok: anvil %s, isa %s, %d threads\n", anvil::version(),
                anvil::isa_name(anvil::effective_isa()), anvil::num_threads());
    return 0;
}
