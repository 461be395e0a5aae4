/* C consumer of an installed anvil: one sgemm on small integers, whose
 * result is exact in fp32, compared element by element. */
#include <stdio.h>
#include <string.h>

#include <anvil/anvil.h>

enum { M = 7, N = 9, K = 5 };

int main(void) {
    /* op(A) = A^T: the caller passes A^T, K x M, lda = M. */
    float At[K * M], B[K * N], C[M * N];
    int i, j, k, bad = 0;
    anvil_status_t st;
    char version[32];

    for (k = 0; k < K; ++k)
        for (i = 0; i < M; ++i) At[k * M + i] = (float)((i * 3 + k) % 7 - 3);
    for (k = 0; k < K; ++k)
        for (j = 0; j < N; ++j) B[k * N + j] = (float)((k * 5 + j) % 9 - 4);
    for (i = 0; i < M * N; ++i) C[i] = 1.0f;

    /* C = 2 * A * B + 3 * C */
    st = anvil_sgemm('T', 'N', M, N, K, 2.0f, At, M, B, N, 3.0f, C, N);
    if (st != anvil_success) {
        fprintf(stderr, "anvil_sgemm: %s\n", anvil_status_str(st));
        return 1;
    }
    for (i = 0; i < M; ++i)
        for (j = 0; j < N; ++j) {
            long want = 3;
            for (k = 0; k < K; ++k)
                want += 2L * ((i * 3 + k) % 7 - 3) * ((k * 5 + j) % 9 - 4);
            if (C[i * N + j] != (float)want) {
                if (bad++ < 5)
                    fprintf(stderr, "C[%d][%d] = %g, want %ld\n", i, j, (double)C[i * N + j], want);
            }
        }
    if (bad) {
        fprintf(stderr, "%d wrong elements\n", bad);
        return 1;
    }

    /* Errors come back as statuses, and C is left alone. */
    st = anvil_sgemm('X', 'N', M, N, K, 1.0f, At, M, B, N, 0.0f, C, N);
    if (st != anvil_invalid_argument) {
        fprintf(stderr, "bad transa gave status %d\n", (int)st);
        return 1;
    }

    snprintf(version, sizeof version, "%d.%d.%d", ANVIL_VERSION_MAJOR, ANVIL_VERSION_MINOR,
             ANVIL_VERSION_PATCH);
    if (strcmp(version, anvil_version()) != 0) {
        fprintf(stderr, "header version %s, library version %s\n", version, anvil_version());
        return 1;
    }
    printf("consumer_c ok: anvil %s, isa %s\n", anvil_version(),
           anvil_isa_name(anvil_get_effective_isa()));
    return 0;
}
