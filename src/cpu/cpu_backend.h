/*
 * cpu_backend.h — the CPU backend: every operation in plain C over host memory, with fp32
 * accumulation and OpenMP threads. It is a working backend on machines without a GPU and
 * the semantic model the GPU kernels are tested against. Inputs arrive validated and
 * normalized (src/host/problem.h); these functions only compute. They never print.
 */
#ifndef FLASHC_CPU_BACKEND_H
#define FLASHC_CPU_BACKEND_H

#include <stddef.h>

#include "flashc.h"
#include "host/problem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Forward: o (and lse if non-NULL). With num_splits > 1 the keys are split into chunks whose
 * partial results are written to the workspace and merged by the combine routine. */
size_t fc_cpu_attn_fwd_workspace_size(const fc_attn_problem* problem);
flashc_status fc_cpu_attn_fwd(const fc_attn_problem* problem, void* workspace, size_t workspace_bytes);

/* Backward: dq, dk, dv from q, k, v, o, lse, dout. */
size_t fc_cpu_attn_bwd_workspace_size(const fc_attn_problem* problem);
flashc_status fc_cpu_attn_bwd(const fc_attn_problem* problem, void* workspace, size_t workspace_bytes);

flashc_status fc_cpu_attn_combine(const fc_combine_problem* problem);

flashc_status fc_cpu_gemm(const fc_gemm_problem* problem);

/* Threads the backend will use (OpenMP max threads, 1 without OpenMP). */
int fc_cpu_thread_count(void);

#ifdef __cplusplus
}
#endif

#endif
