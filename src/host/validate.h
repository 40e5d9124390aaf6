/*
 * validate.h — from public parameter structs to validated, normalized problems.
 *
 * Each function checks every argument before anything touches memory, resolves every
 * default, and fills *problem. `backend` selects the backend-specific rules: the CUDA
 * backend adds 16-byte alignment of pointers and strides and the dtype/head-dim limits of
 * the compiled kernels; the CPU backend also reads and checks the contents of the host
 * index arrays (cu_seqlens, seqused, page_table, cache_seqlens), which on a device handle
 * live in device memory and are not read by the host.
 * On failure they return the status with the thread-local message set.
 */
#ifndef FLASHC_HOST_VALIDATE_H
#define FLASHC_HOST_VALIDATE_H

#include "flashc.h"
#include "host/problem.h"

#ifdef __cplusplus
extern "C" {
#endif

flashc_status fc_attn_fwd_problem_make(const flashc_attn_fwd_params* params, flashc_backend backend,
                                       fc_attn_problem* problem);
flashc_status fc_attn_bwd_problem_make(const flashc_attn_bwd_params* params, flashc_backend backend,
                                       fc_attn_problem* problem);
flashc_status fc_combine_problem_make(const flashc_attn_combine_params* params, flashc_backend backend,
                                      fc_combine_problem* problem);
flashc_status fc_gemm_problem_make(const flashc_gemm_params* params, flashc_backend backend,
                                   fc_gemm_problem* problem);

#ifdef __cplusplus
}
#endif

#endif
