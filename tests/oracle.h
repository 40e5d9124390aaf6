/*
 * oracle.h — the test suite's independent fp64 oracle and shared test utilities.
 *
 * The oracle is written from the doc comments of include/flashc.h (and DESIGN.md §5), not
 * from src/: it resolves every default of the public parameter structs itself (packed
 * strides, heads_kv = 0, head_dim_v = 0, softmax_scale = 0, causal, varlen, seqused, paged
 * KV, fp8 descales) and evaluates the operation naively — the full score matrix of each
 * (batch, head), an explicit mask predicate — in one of two modes:
 *   ORACLE_FP64 every step in double on the stored (already rounded) inputs: "ref64";
 *   ORACLE_SAME what a straightforward kernel in the input precision computes: fp32
 *               arithmetic, P (and dS in the backward) rounded to the input dtype before
 *               the second matrix product: "out_same" of the DESIGN §6 tolerance rule.
 * Results are doubles addressed with the same element offsets as the output tensor, plus a
 * mask per element saying what the library must do with it (ORACLE_UNTOUCHED, ...).
 *
 * Utilities: a seeded RNG (fresh seed per run unless FLASHC_TEST_SEED is set; the seed is
 * printed), format conversions written independently of src/host/numeric.h, random fills
 * with outliers, poison fills (0xFF bytes are NaN in fp32/fp16/bf16/e4m3), the tolerance
 * check of DESIGN §6 with the written/untouched check, and per-case reporting with the final
 * "N cases, M failed" line.
 */
#ifndef FLASHC_TEST_ORACLE_H
#define FLASHC_TEST_ORACLE_H

#include <stddef.h>
#include <stdint.h>

#include "flashc.h"

#define TEST_EXIT_PASS 0
#define TEST_EXIT_FAIL 1
#define TEST_EXIT_SKIP 77

/* ---------------------------------------------------------------------------------------- */
/* Seed and random numbers                                                                   */
/* ---------------------------------------------------------------------------------------- */

/* The run's seed: FLASHC_TEST_SEED if set, else fresh (time, pid, clock). Printed once. */
uint64_t test_seed(void);

typedef struct test_rng {
  uint64_t state;
} test_rng;

/* An independent stream per (seed, stream): case c of a run uses test_rng_make(seed, c). */
test_rng test_rng_make(uint64_t seed, uint64_t stream);
uint64_t test_rng_next(test_rng* rng);
double test_rng_uniform(test_rng* rng);               /* [0, 1) */
int test_rng_int(test_rng* rng, int lo, int hi);      /* uniform in [lo, hi] */
double test_rng_normal(test_rng* rng);                /* N(0, 1) */
int test_rng_pick(test_rng* rng, const int* values, int count);

/* ---------------------------------------------------------------------------------------- */
/* Number formats (independent of src/host/numeric.h)                                         */
/* ---------------------------------------------------------------------------------------- */

size_t test_dtype_size(flashc_dtype dtype);
const char* test_dtype_name(flashc_dtype dtype);
/* Precision p (significand bits incl. the implicit one): unit roundoff = 2^-p. */
double test_unit_roundoff(flashc_dtype dtype);
/* x rounded to nearest-even in dtype (fp16 overflows to inf; e4m3 saturates to ±448). */
double test_round(double x, flashc_dtype dtype);
double test_load(const void* base, int64_t index, flashc_dtype dtype);
/* Stores test_round(value). */
void test_store(void* base, int64_t index, flashc_dtype dtype, double value);
/* Every byte of the element is 0xFF (the poison pattern). */
int test_is_poison(const void* base, int64_t index, flashc_dtype dtype);

/* ---------------------------------------------------------------------------------------- */
/* Buffers                                                                                   */
/* ---------------------------------------------------------------------------------------- */

/* 64-byte aligned, filled with poison; aborts the test (exit 1) when out of memory. */
void* test_alloc(size_t bytes);
void test_free(void* pointer);
void test_fill_poison(void* base, size_t bytes);
/* count elements of scale·N(0,1) rounded to dtype, a few of them outliers (×4..×12);
 * never all zeros. e4m3 values saturate at ±448. */
void test_fill_random(test_rng* rng, void* base, int64_t count, flashc_dtype dtype, double scale);

/* ---------------------------------------------------------------------------------------- */
/* Oracle                                                                                    */
/* ---------------------------------------------------------------------------------------- */

typedef enum oracle_mode { ORACLE_FP64 = 0, ORACLE_SAME = 1 } oracle_mode;

/* What the library must do with each element of an output buffer. */
enum {
  ORACLE_UNTOUCHED = 0, /* must keep its poison bytes */
  ORACLE_COMPARE = 1,   /* written; compared with the tolerance rule */
  ORACLE_EXACT = 2,     /* written; must equal the reference exactly (O = 0, LSE = -inf) */
  ORACLE_DONT_CARE = 3  /* unspecified by the API (e.g. dk beyond seqused_k) */
};

/*
 * Attention forward. o_ref/o_mask have o_count elements (the o buffer's element count);
 * lse_ref/lse_mask lse_count (ignored when p->lse is NULL). Masks are set for every element
 * (ORACLE_UNTOUCHED where nothing is written). Returns 0, or -1 (message printed) when an
 * offset falls outside a buffer: a bug in the test.
 */
int oracle_attn_fwd(const flashc_attn_fwd_params* p, oracle_mode mode, double* o_ref,
                    unsigned char* o_mask, int64_t o_count, double* lse_ref, unsigned char* lse_mask,
                    int64_t lse_count);

/*
 * Attention backward. ORACLE_FP64 recomputes the softmax exactly from q, k, v (ignores p->o,
 * p->lse); ORACLE_SAME uses p->o (for D = rowsum(dout ∘ o)) and p->lse in fp32 and rounds
 * P and dS to the dtype. Rows of dq beyond seqused_q and of dk/dv beyond seqused_k are
 * ORACLE_DONT_CARE.
 */
int oracle_attn_bwd(const flashc_attn_bwd_params* p, oracle_mode mode, double* dq_ref,
                    unsigned char* dq_mask, int64_t dq_count, double* dk_ref, unsigned char* dk_mask,
                    int64_t dk_count, double* dv_ref, unsigned char* dv_mask, int64_t dv_count);

/* Split-KV combine (ORACLE_SAME: in fp32). */
int oracle_attn_combine(const flashc_attn_combine_params* p, oracle_mode mode, double* o_ref,
                        unsigned char* o_mask, int64_t o_count, double* lse_ref,
                        unsigned char* lse_mask, int64_t lse_count);

/* GEMM. Reads C before anything is written: call it before the library when C aliases D. */
int oracle_gemm(const flashc_gemm_params* p, oracle_mode mode, double* d_ref, unsigned char* d_mask,
                int64_t d_count);

/* ---------------------------------------------------------------------------------------- */
/* Checks and reporting                                                                      */
/* ---------------------------------------------------------------------------------------- */

/* The same-precision oracle may differ from ref64 by at most this relative L2 error
 * (e4m3's rounded P alone reaches ~2e-2); beyond it the check fails as an oracle inconsistency. */
#define TEST_ORACLE_MODES_MAX_REL_L2 0.1

typedef struct test_check_result {
  double max_error;      /* max |out - ref64| over compared elements */
  double max_error_same; /* max |out_same - ref64| */
  double atol;
  double bound;          /* 2 * max_error_same + atol */
  double rel_l2;         /* ||out - ref64|| / ||ref64|| */
  double max_ref;
  int64_t compared, nan_count, unwritten, clobbered, exact_mismatch;
  int64_t worst_index;
  int pass;
} test_check_result;

/*
 * The DESIGN §6 rule on one output buffer of `count` elements of `dtype`:
 *   max|out − ref64| ≤ 2·max|out_same − ref64| + atol over ORACLE_COMPARE elements,
 * ORACLE_EXACT elements equal the reference exactly, ORACLE_UNTOUCHED elements still hold
 * poison, no compared element is NaN or poison. same may be NULL (bound = atol).
 * atol < 0 selects the default: k · u(dtype) · max|ref64| with k = 2 (one unit in the last
 * place of the output dtype at the output's magnitude) for fp16/bf16/e4m3 outputs and k = 32
 * (16 ulps) for fp32 outputs, whose error is the kernel's arithmetic rather than the output
 * rounding (online-softmax rescaling and split combines add roundings a naive loop lacks).
 * Prints a line "  name: ..." with the errors. Returns 1 on pass.
 */
int test_check_output(const char* name, const void* out, flashc_dtype dtype, int64_t count,
                      const double* ref64, const double* same, const unsigned char* mask, double atol,
                      test_check_result* result);

/* Only the written / untouched part: every element marked UNTOUCHED still holds poison, every
 * COMPARE/EXACT element is not NaN. Returns 1 on pass (prints on failure). */
int test_check_written(const char* name, const void* out, flashc_dtype dtype, int64_t count,
                       const unsigned char* mask);

/* Per-case reporting: one line per case, then "N cases, M failed". */
void test_case_pass(const char* format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
void test_case_fail(const char* format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
void test_case_result(int pass, const char* format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
int test_case_count(void);
int test_failed_count(void);
/* Prints "N cases, M failed" and returns the exit code (0 or 1). */
int test_summary(void);

/* Aborts the test (exit 1) with a message: a bug in the test itself, not in flashc. */
void test_fatal(const char* format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2), noreturn))
#endif
    ;

/* Status helpers */
const char* test_status_name(flashc_status status);
/* fprintf of the failing status and flashc_last_error() */
void test_print_status(const char* what, flashc_status status);

#endif
