/*
 * reference.h — the oracle of DESIGN.md §6: the CPU backend's math evaluated in fp64 on the
 * same (already rounded) inputs, and the "same precision" variant that a straightforward
 * kernel in the input precision would compute (fp32 accumulation, P rounded to the input
 * dtype before P·V). Used by `flashc ... --check` and the GPU tests; not part of the public
 * API (linked from the static library).
 *
 * Outputs are double arrays addressed with the SAME element offsets as the corresponding
 * output tensor of the problem (o, lse, dq, dk, dv, d), so a caller allocates a double
 * buffer as large as the output's element span and compares element by element. Elements
 * the operation does not write are left untouched.
 */
#ifndef FLASHC_CPU_REFERENCE_H
#define FLASHC_CPU_REFERENCE_H

#include "flashc.h"
#include "host/problem.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fc_ref_mode {
  FC_REF_FP64 = 0,           /* every step in double */
  FC_REF_SAME_PRECISION = 1, /* fp32 accumulation, P rounded to the input dtype before P·V */
} fc_ref_mode;

/* o_ref: element span of problem->o; lse_ref: span of problem->lse (may be NULL). */
flashc_status fc_ref_attn_fwd(const fc_attn_problem* problem, fc_ref_mode mode, double* o_ref,
                              double* lse_ref);
/* Backward from the problem's q, k, v, dout; recomputes the softmax itself (ignores o, lse). */
flashc_status fc_ref_attn_bwd(const fc_attn_problem* problem, fc_ref_mode mode, double* dq_ref,
                              double* dk_ref, double* dv_ref);
/* d_ref: element span of problem->d (row-major after normalization). */
flashc_status fc_ref_gemm(const fc_gemm_problem* problem, fc_ref_mode mode, double* d_ref);

#ifdef __cplusplus
}
#endif

#endif
