/* gemm.c — the public GEMM entry points: defaults, workspace query, dispatch. */
#include <stdio.h>
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

#ifdef FLASHC_WITH_CUDA
/* Which kernel family runs a problem on the device, and its workspace. */
typedef enum gemm_family { GEMM_FALLBACK, GEMM_HOPPER, GEMM_PORTABLE } gemm_family;

static flashc_status choose_gemm_family(const fc_cuda_context* context, const fc_gemm_problem* problem,
                                        gemm_family* family) {
  fc_reason why_not = {{0}};
  /* AUTO prefers Hopper (sm_90a TMA/WGMMA), then portable (sm_80+ cp.async/mma.sync), then the
     fallback, which takes anything the validation accepts. A forced algo must be able to run. */
  if (problem->algo != FLASHC_GEMM_ALGO_PORTABLE) {
    flashc_status hopper = fc_gemm_hopper_check(problem, context, &why_not);
    if (hopper == FLASHC_STATUS_SUCCESS) {
      *family = GEMM_HOPPER;
      return FLASHC_STATUS_SUCCESS;
    }
    if (problem->algo == FLASHC_GEMM_ALGO_HOPPER) return fc_fail(hopper, "algo hopper: %s", why_not.text);
    why_not.text[0] = '\0';
  }
  flashc_status portable = fc_gemm_portable_check(problem, context, &why_not);
  if (problem->algo == FLASHC_GEMM_ALGO_PORTABLE && portable != FLASHC_STATUS_SUCCESS)
    return fc_fail(portable, "algo portable: %s", why_not.text);
  *family = portable == FLASHC_STATUS_SUCCESS ? GEMM_PORTABLE : GEMM_FALLBACK;
  return FLASHC_STATUS_SUCCESS;
}

static size_t gemm_family_workspace(gemm_family family, const fc_cuda_context* context,
                                    const fc_gemm_problem* problem) {
  if (family == GEMM_HOPPER) return fc_gemm_hopper_workspace_size(problem, context);
  if (family == GEMM_PORTABLE) return fc_gemm_portable_workspace_size(problem, context);
  return 0;
}

static flashc_status run_gemm_family(gemm_family family, const fc_cuda_context* context,
                                     const fc_gemm_problem* problem, void* workspace, void* stream) {
  switch (family) {
    case GEMM_HOPPER:
      return fc_gemm_hopper_run(problem, context, workspace, stream);
    case GEMM_PORTABLE:
      return fc_gemm_portable_run(problem, context, workspace, stream);
    default:
      return fc_gemm_fallback_run(problem, context, stream);
  }
}
#endif

flashc_status flashc_gemm_workspace_size(flashc_handle_t handle, const flashc_gemm_params* params,
                                         size_t* workspace_bytes) {
  FC_TRY(fc_handle_check(handle));
  if (!workspace_bytes) return fc_fail(FLASHC_STATUS_NULL_POINTER, "workspace_bytes is NULL");
  fc_gemm_problem problem;
  FC_TRY(fc_gemm_problem_make(params, handle->backend, &problem));
  *workspace_bytes = 0;
#ifdef FLASHC_WITH_CUDA
  if (handle->backend == FLASHC_BACKEND_CUDA) {
    gemm_family family;
    FC_TRY(choose_gemm_family(&handle->cuda, &problem, &family));
    *workspace_bytes = gemm_family_workspace(family, &handle->cuda, &problem);
  }
#endif
  return FLASHC_STATUS_SUCCESS;
}

flashc_status flashc_gemm(flashc_handle_t handle, const flashc_gemm_params* params, void* workspace,
                          size_t workspace_bytes, void* stream) {
  FC_TRY(fc_handle_check(handle));
  fc_gemm_problem problem;
  FC_TRY(fc_gemm_problem_make(params, handle->backend, &problem));
#ifdef FLASHC_WITH_CUDA
  if (handle->backend == FLASHC_BACKEND_CUDA) {
    gemm_family family;
    FC_TRY(choose_gemm_family(&handle->cuda, &problem, &family));
    size_t required = gemm_family_workspace(family, &handle->cuda, &problem);
    void* resolved = NULL;
    FC_TRY(fc_handle_workspace(handle, required, workspace, workspace_bytes, stream, &resolved));
    return run_gemm_family(family, &handle->cuda, &problem, resolved, stream);
  }
#endif
  void* resolved = NULL;
  FC_TRY(fc_handle_workspace(handle, 0, workspace, workspace_bytes, stream, &resolved));
  return fc_cpu_gemm(&problem);
}
