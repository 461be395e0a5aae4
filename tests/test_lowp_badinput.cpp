// Argument validation of the low-precision calls and the matmul handle:
// every bad input gives its specific status and writes nothing (C, packed
// weights, handles stay bit-identical).
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "anvil/anvil.h"

namespace {

constexpr int64_t kBig = int64_t(1) << 62;
constexpr uint8_t kFill = 0x5c;

struct blas_call {
    char ta = 'N', tb = 'N', offc = 'F';
    int64_t M = 4, N = 5, K = 3, lda = 3, ldb = 5, ldc = 5;
    bool null_a = false, null_b = false, null_c = false, null_co = false;
    float alpha = 1.0f;
    std::string str() const {
        return std::string("trans=") + ta + tb + " offc=" + offc + " M=" + std::to_string(M) +
               " N=" + std::to_string(N) + " K=" + std::to_string(K) + " lda=" + std::to_string(lda) +
               " ldb=" + std::to_string(ldb) + " ldc=" + std::to_string(ldc) +
               " null(A,B,C,co)=" + std::to_string(null_a) + std::to_string(null_b) +
               std::to_string(null_c) + std::to_string(null_co);
    }
};

// Runs the call through all three BLAS-style entry points against small
// real buffers (absurd shapes must be refused before they are touched) and
// checks the status and that C is unchanged.
void expect(const blas_call &c, anvil_status_t want) {
    CAPTURE(c.str());
    static std::vector<uint8_t> A(4096, 1), B(4096, 1);
    std::vector<uint8_t> C(4096, kFill);
    const int32_t co[64] = {};
    const auto *a8 = c.null_a ? nullptr : A.data();
    const auto *b8 = c.null_b ? nullptr : reinterpret_cast<const int8_t *>(B.data());
    auto *c32 = c.null_c ? nullptr : reinterpret_cast<int32_t *>(C.data());
    const int32_t *cop = c.null_co ? nullptr : co;
    CHECK(anvil_gemm_u8s8s32(c.ta, c.tb, c.offc, c.M, c.N, c.K, c.alpha, a8, c.lda, 0, b8, c.ldb, 0,
                             0.0f, c32, c.ldc, cop) == want);
    CHECK(anvil_gemm_s8s8s32(c.ta, c.tb, c.offc, c.M, c.N, c.K, c.alpha,
                             reinterpret_cast<const int8_t *>(a8), c.lda, 0, b8, c.ldb, 0, 0.0f, c32,
                             c.ldc, cop) == want);
    if (c.offc == 'F' && !c.null_co)
        CHECK(anvil_gemm_bf16bf16f32(c.ta, c.tb, c.M, c.N, c.K, c.alpha,
                                     reinterpret_cast<const uint16_t *>(a8), c.lda,
                                     reinterpret_cast<const uint16_t *>(b8), c.ldb, 0.0f,
                                     reinterpret_cast<float *>(c32), c.ldc) == want);
    if (want != anvil_success) {
        bool intact = true;
        for (uint8_t v : C) intact &= v == kFill;
        CHECK(intact);
    }
}

TEST_CASE("lowp bad input: BLAS-style calls give a clear status and leave C untouched") {
    expect(blas_call{}, anvil_success);
    blas_call c;
    c.ta = 'X';
    expect(c, anvil_invalid_argument);
    c = {};
    c.tb = 'n' + 1;
    expect(c, anvil_invalid_argument);
    c = {};
    c.offc = 'Q';
    expect(c, anvil_invalid_argument);
    for (int which = 0; which < 3; ++which) {
        c = {};
        (which == 0 ? c.M : which == 1 ? c.N : c.K) = -1;
        expect(c, anvil_bad_size);
    }
    c = {};
    c.lda = 2;
    expect(c, anvil_bad_leading_dim);
    c = {};
    c.ldb = 4;
    expect(c, anvil_bad_leading_dim);
    c = {};
    c.ldc = 4;
    expect(c, anvil_bad_leading_dim);
    c = {};
    c.ta = 'T';  // A is K x M = 3 x 4: lda must be >= 4
    expect(c, anvil_bad_leading_dim);
    c = {};
    c.M = kBig;
    c.lda = kBig;
    expect(c, anvil_size_overflow);
    c = {};
    c.N = kBig;
    c.ldb = kBig;
    c.ldc = kBig;
    expect(c, anvil_size_overflow);
    c = {};
    c.N = int64_t(1) << 40;  // N * K elements of B fit, N * K * 4 packed bytes do not
    c.K = int64_t(1) << 22;
    c.lda = c.K;
    c.ldb = c.N;
    c.ldc = c.N;
    expect(c, anvil_size_overflow);
    c = {};
    c.null_a = true;
    expect(c, anvil_null_pointer);
    c = {};
    c.null_b = true;
    expect(c, anvil_null_pointer);
    c = {};
    c.null_c = true;
    expect(c, anvil_null_pointer);
    c = {};
    c.null_co = true;
    expect(c, anvil_null_pointer);
    // Zero sizes are valid no-ops, even with null pointers.
    c = {};
    c.M = 0;
    c.null_a = c.null_b = c.null_c = true;
    expect(c, anvil_success);
    c = {};
    c.alpha = 0.0f;  // A and B are not read
    c.null_a = c.null_b = true;
    expect(c, anvil_success);
}

// ---------------------------------------------------------------- matmul

anvil_matmul_desc_t good_desc() {
    anvil_matmul_desc_t d{};
    d.a_dt = anvil_dt_u8;
    d.b_dt = anvil_dt_s8;
    d.c_dt = anvil_dt_f32;
    d.transa = 'N';
    d.transb = 'N';
    d.M = 4;
    d.N = 5;
    d.K = 3;
    d.lda = 3;
    d.ldb = 5;
    d.ldc = 5;
    return d;
}

anvil_status_t create_status(const anvil_matmul_desc_t &d) {
    anvil_matmul_t h = reinterpret_cast<anvil_matmul_t>(uintptr_t(0x1234));
    const anvil_status_t st = anvil_matmul_create(&h, &d);
    if (st == anvil_success) {
        anvil_matmul_destroy(h);
    } else {
        CHECK(h == reinterpret_cast<anvil_matmul_t>(uintptr_t(0x1234)));  // handle untouched
    }
    return st;
}

TEST_CASE("lowp bad input: matmul descriptors") {
    CHECK(anvil_matmul_create(nullptr, nullptr) == anvil_null_pointer);
    anvil_matmul_desc_t d = good_desc();
    CHECK(create_status(d) == anvil_success);
    d.a_dt = anvil_data_type_t(17);
    CHECK(create_status(d) == anvil_invalid_argument);
    d = good_desc();
    d.a_dt = anvil_dt_f32;  // f32 A with s8 B: no such matmul
    CHECK(create_status(d) == anvil_unsupported);
    d = good_desc();
    d.b_dt = anvil_dt_u8;
    CHECK(create_status(d) == anvil_unsupported);
    d = good_desc();
    d.a_dt = anvil_dt_bf16;
    d.b_dt = anvil_dt_bf16;
    d.c_dt = anvil_dt_u8;
    CHECK(create_status(d) == anvil_unsupported);
    d.c_dt = anvil_dt_f32;
    d.a_zero_point = 1;  // zero points are for int8 only
    CHECK(create_status(d) == anvil_invalid_argument);
    d = good_desc();
    d.a_zero_point = 256;
    CHECK(create_status(d) == anvil_invalid_argument);
    d = good_desc();
    d.b_zero_point = -129;
    CHECK(create_status(d) == anvil_invalid_argument);
    d = good_desc();
    d.transa = 'x';
    CHECK(create_status(d) == anvil_invalid_argument);
    d = good_desc();
    d.K = -2;
    CHECK(create_status(d) == anvil_bad_size);
    d = good_desc();
    d.ldc = 4;
    CHECK(create_status(d) == anvil_bad_leading_dim);
    d = good_desc();
    d.M = kBig;
    d.lda = kBig;
    CHECK(create_status(d) == anvil_size_overflow);
    d = good_desc();
    d.num_post_ops = ANVIL_MAX_POST_OPS + 1;
    CHECK(create_status(d) == anvil_invalid_argument);
    d.num_post_ops = 1;
    d.post_ops = nullptr;
    CHECK(create_status(d) == anvil_null_pointer);
    anvil_post_op_t op{};
    op.kind = anvil_post_op_eltwise;
    op.alg = 99;
    d.post_ops = &op;
    CHECK(create_status(d) == anvil_invalid_argument);
    op.alg = anvil_eltwise_clip;
    op.alpha = 2.0f;
    op.beta = 1.0f;  // lo > hi
    CHECK(create_status(d) == anvil_invalid_argument);
    op = {};
    op.kind = anvil_post_op_binary;
    op.alg = anvil_binary_add;
    op.src_dt = anvil_dt_f32;
    op.ld = 4;  // < N
    CHECK(create_status(d) == anvil_bad_leading_dim);
    op.ld = 5;
    op.src_dt = anvil_dt_s8;
    CHECK(create_status(d) == anvil_unsupported);
    op.kind = anvil_post_op_kind_t(5);
    CHECK(create_status(d) == anvil_invalid_argument);
    d = good_desc();
    d.scales_per_n = 1;  // without scales
    CHECK(create_status(d) == anvil_null_pointer);
}

TEST_CASE("lowp bad input: matmul packing and execute") {
    anvil_matmul_desc_t d = good_desc();
    anvil_post_op_t op{};
    op.kind = anvil_post_op_binary;
    op.alg = anvil_binary_add;
    op.per_n = 1;
    op.src_dt = anvil_dt_f32;
    d.num_post_ops = 1;
    d.post_ops = &op;
    anvil_matmul_t h = nullptr;
    REQUIRE(anvil_matmul_create(&h, &d) == anvil_success);
    size_t bytes = 0;
    CHECK(anvil_matmul_packed_weights_size(nullptr, &bytes) == anvil_invalid_handle);
    CHECK(anvil_matmul_packed_weights_size(h, nullptr) == anvil_null_pointer);
    REQUIRE(anvil_matmul_packed_weights_size(h, &bytes) == anvil_success);
    std::vector<uint8_t> B(64, 1), A(64, 2);
    std::vector<uint32_t> packed_store(bytes / 4 + 2, 0);
    auto *packed = reinterpret_cast<uint8_t *>(packed_store.data());
    CHECK(anvil_matmul_pack_weights(nullptr, B.data(), packed) == anvil_invalid_handle);
    CHECK(anvil_matmul_pack_weights(h, nullptr, packed) == anvil_null_pointer);
    CHECK(anvil_matmul_pack_weights(h, B.data(), nullptr) == anvil_null_pointer);
    CHECK(anvil_matmul_pack_weights(h, B.data(), packed + 1) == anvil_invalid_argument);
    for (size_t t = 0; t < bytes; ++t) CHECK(packed[t] == 0);  // nothing written so far
    REQUIRE(anvil_matmul_pack_weights(h, B.data(), packed) == anvil_success);

    std::vector<float> C(20, 7.0f);
    const float bin[5] = {1, 2, 3, 4, 5};
    const void *srcs[1] = {bin};
    auto untouched = [&]() {
        bool ok = true;
        for (float v : C) ok &= v == 7.0f;
        return ok;
    };
    CHECK(anvil_matmul_execute(nullptr, A.data(), packed, C.data(), srcs) == anvil_invalid_handle);
    CHECK(anvil_matmul_execute(h, nullptr, packed, C.data(), srcs) == anvil_null_pointer);
    CHECK(anvil_matmul_execute(h, A.data(), packed, nullptr, srcs) == anvil_null_pointer);
    CHECK(anvil_matmul_execute(h, A.data(), nullptr, C.data(), srcs) == anvil_bad_packed_buffer);
    CHECK(anvil_matmul_execute(h, A.data(), packed, C.data(), nullptr) == anvil_null_pointer);
    const void *null_src[1] = {nullptr};
    CHECK(anvil_matmul_execute(h, A.data(), packed, C.data(), null_src) == anvil_null_pointer);
    CHECK(anvil_matmul_execute(h, A.data(), packed + 2, C.data(), srcs) == anvil_invalid_argument);
    // A buffer packed for another shape or type is refused.
    std::vector<uint8_t> wrong(bytes, 0);
    std::memcpy(wrong.data(), packed, bytes);
    wrong[16] ^= 1;  // the header's K
    CHECK(anvil_matmul_execute(h, A.data(), wrong.data(), C.data(), srcs) == anvil_bad_packed_buffer);
    std::memcpy(wrong.data(), packed, bytes);
    wrong[0] = 'X';
    CHECK(anvil_matmul_execute(h, A.data(), wrong.data(), C.data(), srcs) == anvil_bad_packed_buffer);
    anvil_matmul_desc_t d2 = good_desc();
    d2.a_dt = anvil_dt_bf16;
    d2.b_dt = anvil_dt_bf16;
    anvil_matmul_t h2 = nullptr;
    REQUIRE(anvil_matmul_create(&h2, &d2) == anvil_success);
    CHECK(anvil_matmul_execute(h2, A.data(), packed, C.data(), nullptr) == anvil_bad_packed_buffer);
    CHECK(untouched());
    CHECK(anvil_matmul_execute(h, A.data(), packed, C.data(), srcs) == anvil_success);
    CHECK_FALSE(untouched());
    CHECK(anvil_matmul_destroy(h) == anvil_success);
    CHECK(anvil_matmul_destroy(h2) == anvil_success);
    CHECK(anvil_matmul_destroy(nullptr) == anvil_invalid_handle);
}

}  // namespace
