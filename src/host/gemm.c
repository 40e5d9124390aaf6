/* gemm.c — the public GEMM entry points: defaults, workspace query, dispatch. */
#include <string.h>

#include "cpu/cpu_backend.h"
#include "host/error.h"
#include "host/handle.h"
#include "host/validate.h"

void flashc_gemm_params_init(flashc_gemm_params* params) {
  if (!params) return;
  memset(params, 0, sizeof *params);
  params->struct_size = sizeof *params;
  params->batch_count = 1;
  params->a_dtype = FLASHC_DTYPE_BF16;
  params->b_dtype = FLASHC_DTYPE_BF16;
  params->d_dtype = FLASHC_DTYPE_AUTO;
  params->a_layout = FLASHC_ROW_MAJOR;
  params->b_layout = FLASHC_ROW_MAJOR;
  params->cd_layout = FLASHC_ROW_MAJOR;
  params->activation = FLASHC_ACTIVATION_NONE;
  params->alpha = 1.0f;
  params->beta = 0.0f;
  params->algo = FLASHC_GEMM_ALGO_AUTO;
}

static flashc_status gemm_on_device(void) {
  return fc_fail(FLASHC_STATUS_NOT_SUPPORTED,
                 "GEMM has no CUDA kernel in this build of flashc yet; use a CPU handle (FLASHC_DEVICE_CPU)");
}

flashc_status flashc_gemm_workspace_size(flashc_handle_t handle, const flashc_gemm_params* params,
                                         size_t* workspace_bytes) {
  FC_TRY(fc_handle_check(handle));
  if (!workspace_bytes) return fc_fail(FLASHC_STATUS_NULL_POINTER, "workspace_bytes is NULL");
  fc_gemm_problem problem;
  FC_TRY(fc_gemm_problem_make(params, handle->backend, &problem));
  if (handle->backend == FLASHC_BACKEND_CUDA) return gemm_on_device();
  *workspace_bytes = 0;
  return FLASHC_STATUS_SUCCESS;
}

flashc_status flashc_gemm(flashc_handle_t handle, const flashc_gemm_params* params, void* workspace,
                          size_t workspace_bytes, void* stream) {
  FC_TRY(fc_handle_check(handle));
  fc_gemm_problem problem;
  FC_TRY(fc_gemm_problem_make(params, handle->backend, &problem));
  if (handle->backend == FLASHC_BACKEND_CUDA) return gemm_on_device();
  void* resolved = NULL;
  FC_TRY(fc_handle_workspace(handle, 0, workspace, workspace_bytes, stream, &resolved));
  return fc_cpu_gemm(&problem);
}
