/*
 * gemm_portable_absent.cu — stands in for the portable GEMM (gemm_portable_*_sm80.cu) in a
 * development build configured with -DFLASHC_PORTABLE_GEMM=OFF, which skips its 48
 * instantiations × 3 targets to build the rest in a fraction of the time. The dispatcher then
 * sees a family that refuses every problem with this reason: AUTO falls back to the other
 * families, and algo = PORTABLE fails with the message. Never part of a default build.
 */
#include <stdio.h>

#include "host/error.h"
#include "kernels/launch.h"

extern "C" flashc_status fc_gemm_portable_check(const fc_gemm_problem* problem, const fc_cuda_context* context,
                                                fc_reason* why_not) {
  (void)problem;
  (void)context;
  snprintf(why_not->text, sizeof why_not->text,
           "this build of flashc has no portable GEMM (configured with -DFLASHC_PORTABLE_GEMM=OFF)");
  return FLASHC_STATUS_NOT_SUPPORTED;
}

extern "C" size_t fc_gemm_portable_workspace_size(const fc_gemm_problem* problem, const fc_cuda_context* context) {
  (void)problem;
  (void)context;
  return 0;
}

extern "C" flashc_status fc_gemm_portable_run(const fc_gemm_problem* problem, const fc_cuda_context* context,
                                              void* workspace, void* stream) {
  (void)problem;
  (void)context;
  (void)workspace;
  (void)stream;
  return fc_fail(FLASHC_STATUS_NOT_SUPPORTED,
                 "this build of flashc has no portable GEMM (configured with -DFLASHC_PORTABLE_GEMM=OFF)");
}
