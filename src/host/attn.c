/*
 * attn.c — the public attention entry points: parameter defaults, workspace queries and
 * dispatch of a validated problem to the CPU backend or the CUDA launchers.
 */
#include <string.h>

#include "cpu/cpu_backend.h"
#include "host/error.h"
#include "host/handle.h"
#include "host/validate.h"

void flashc_attn_fwd_params_init(flashc_attn_fwd_params* params) {
  if (!params) return;
  memset(params, 0, sizeof *params);
  params->struct_size = sizeof *params;
  params->dtype = FLASHC_DTYPE_BF16;
  params->out_dtype = FLASHC_DTYPE_AUTO;
  params->window_left = -1;
  params->window_right = -1;
  params->num_splits = 1;
  params->pack_gqa = -1;
}

void flashc_attn_bwd_params_init(flashc_attn_bwd_params* params) {
  if (!params) return;
  memset(params, 0, sizeof *params);
  params->struct_size = sizeof *params;
  params->dtype = FLASHC_DTYPE_BF16;
  params->window_left = -1;
  params->window_right = -1;
}

void flashc_attn_combine_params_init(flashc_attn_combine_params* params) {
  if (!params) return;
  memset(params, 0, sizeof *params);
  params->struct_size = sizeof *params;
  params->out_dtype = FLASHC_DTYPE_BF16;
}

#ifndef FLASHC_WITH_CUDA
/* A build without CUDA: a device handle says so. */
static flashc_status cuda_not_built(const char* operation) {
  return fc_fail(FLASHC_STATUS_NOT_SUPPORTED,
                 "%s: this build of flashc has no CUDA support; use a CPU handle (FLASHC_DEVICE_CPU)", operation);
}
#endif

/* Can the CUDA forward run this problem? The reason becomes the call's message otherwise. */
static flashc_status cuda_fwd_check(const struct flashc_handle* handle, const fc_attn_problem* problem) {
#ifdef FLASHC_WITH_CUDA
  fc_reason why_not = {{0}};
  flashc_status status = fc_attn_fwd_hopper_check(problem, &handle->cuda, &why_not);
  if (status != FLASHC_STATUS_SUCCESS) return fc_fail(status, "attention forward on cuda:%d: %s", handle->device, why_not.text);
  return FLASHC_STATUS_SUCCESS;
#else
  (void)handle;
  (void)problem;
  return cuda_not_built("attention forward");
#endif
}

static flashc_status fwd_workspace_bytes(const struct flashc_handle* handle, const fc_attn_problem* problem,
                                         size_t* bytes) {
  if (handle->backend == FLASHC_BACKEND_CPU) {
    *bytes = fc_cpu_attn_fwd_workspace_size(problem);
    return FLASHC_STATUS_SUCCESS;
  }
  FC_TRY(cuda_fwd_check(handle, problem));
#ifdef FLASHC_WITH_CUDA
  *bytes = fc_attn_fwd_hopper_workspace_size(problem, &handle->cuda);
#endif
  return FLASHC_STATUS_SUCCESS;
}

flashc_status flashc_attn_fwd_workspace_size(flashc_handle_t handle, const flashc_attn_fwd_params* params,
                                             size_t* workspace_bytes) {
  FC_TRY(fc_handle_check(handle));
  if (!workspace_bytes) return fc_fail(FLASHC_STATUS_NULL_POINTER, "workspace_bytes is NULL");
  fc_attn_problem problem;
  FC_TRY(fc_attn_fwd_problem_make(params, handle->backend, &problem));
  return fwd_workspace_bytes(handle, &problem, workspace_bytes);
}

flashc_status flashc_attn_fwd(flashc_handle_t handle, const flashc_attn_fwd_params* params, void* workspace,
                              size_t workspace_bytes, void* stream) {
  FC_TRY(fc_handle_check(handle));
  fc_attn_problem problem;
  FC_TRY(fc_attn_fwd_problem_make(params, handle->backend, &problem));
  size_t required = 0;
  FC_TRY(fwd_workspace_bytes(handle, &problem, &required));
  void* resolved = NULL;
  FC_TRY(fc_handle_workspace(handle, required, workspace, workspace_bytes, stream, &resolved));
#ifdef FLASHC_WITH_CUDA
  if (handle->backend == FLASHC_BACKEND_CUDA) return fc_attn_fwd_hopper_run(&problem, &handle->cuda, resolved, stream);
#endif
  return fc_cpu_attn_fwd(&problem, resolved, required);
}

static flashc_status bwd_workspace_bytes(const struct flashc_handle* handle, const fc_attn_problem* problem,
                                         size_t* bytes) {
  if (handle->backend == FLASHC_BACKEND_CPU) {
    *bytes = fc_cpu_attn_bwd_workspace_size(problem);
    return FLASHC_STATUS_SUCCESS;
  }
#ifdef FLASHC_WITH_CUDA
  fc_reason why_not = {{0}};
  flashc_status status = fc_attn_bwd_portable_check(problem, &handle->cuda, &why_not);
  if (status != FLASHC_STATUS_SUCCESS)
    return fc_fail(status, "attention backward on cuda:%d: %s", handle->device, why_not.text);
  *bytes = fc_attn_bwd_portable_workspace_size(problem, &handle->cuda);
  return FLASHC_STATUS_SUCCESS;
#else
  return cuda_not_built("attention backward");
#endif
}

flashc_status flashc_attn_bwd_workspace_size(flashc_handle_t handle, const flashc_attn_bwd_params* params,
                                             size_t* workspace_bytes) {
  FC_TRY(fc_handle_check(handle));
  if (!workspace_bytes) return fc_fail(FLASHC_STATUS_NULL_POINTER, "workspace_bytes is NULL");
  fc_attn_problem problem;
  FC_TRY(fc_attn_bwd_problem_make(params, handle->backend, &problem));
  return bwd_workspace_bytes(handle, &problem, workspace_bytes);
}

flashc_status flashc_attn_bwd(flashc_handle_t handle, const flashc_attn_bwd_params* params, void* workspace,
                              size_t workspace_bytes, void* stream) {
  FC_TRY(fc_handle_check(handle));
  fc_attn_problem problem;
  FC_TRY(fc_attn_bwd_problem_make(params, handle->backend, &problem));
  size_t required = 0;
  FC_TRY(bwd_workspace_bytes(handle, &problem, &required));
  void* resolved = NULL;
  FC_TRY(fc_handle_workspace(handle, required, workspace, workspace_bytes, stream, &resolved));
#ifdef FLASHC_WITH_CUDA
  if (handle->backend == FLASHC_BACKEND_CUDA) return fc_attn_bwd_portable_run(&problem, &handle->cuda, resolved, stream);
#endif
  return fc_cpu_attn_bwd(&problem, resolved, required);
}

flashc_status flashc_attn_combine(flashc_handle_t handle, const flashc_attn_combine_params* params, void* stream) {
  FC_TRY(fc_handle_check(handle));
  fc_combine_problem problem;
  FC_TRY(fc_combine_problem_make(params, handle->backend, &problem));
  if (handle->backend == FLASHC_BACKEND_CUDA) {
#ifdef FLASHC_WITH_CUDA
    return fc_attn_combine_cuda_run(&problem, &handle->cuda, stream);
#else
    return cuda_not_built("attention combine");
#endif
  }
  (void)stream;
  return fc_cpu_attn_combine(&problem);
}
