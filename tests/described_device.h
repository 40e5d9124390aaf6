/*
 * described_device.h — a CUDA context that only describes a GPU, for tests of the launchers'
 * rules without one (cpu_attn_plan.c, cpu_gemm_plan.c): the H200's compute capability and SM
 * count, nothing else set (no device, no tensor-map encoder, no attribute cache).
 */
#ifndef FLASHC_TESTS_DESCRIBED_DEVICE_H
#define FLASHC_TESTS_DESCRIBED_DEVICE_H

#include <string.h>

#include "kernels/launch.h"

enum { H200_SMS = 132 };

static inline fc_cuda_context described_h200(void) {
  fc_cuda_context context;
  memset(&context, 0, sizeof context);
  context.cc_major = 9, context.cc_minor = 0;
  context.sm_count = H200_SMS;
  return context;
}

#endif
