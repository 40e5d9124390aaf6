/*
 * gemm_epilogue.cuh — the per-element GEMM epilogue every GEMM kernel shares:
 *   x = alpha · scale_a · scale_b · acc + beta · C + bias,  D = act(x)
 * (flashc_gemm_params in include/flashc.h). Kernels read the scales once (they are device
 * scalars) and fold them into one `acc_scale`.
 */
#ifndef FLASHC_KERNELS_GEMM_EPILOGUE_CUH
#define FLASHC_KERNELS_GEMM_EPILOGUE_CUH

#include "flashc.h"

/* GELU, tanh approximation: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), as cuBLASLt's epilogue. */
#define FC_GELU_CUBIC_COEFFICIENT 0.044715f
#define FC_SQRT_2_OVER_PI 0.7978845608028654f /* sqrt(2 / pi) */

static __device__ __forceinline__ float fc_gemm_activation(float x, flashc_activation activation) {
  switch (activation) {
    case FLASHC_ACTIVATION_RELU: return fmaxf(x, 0.0f);
    case FLASHC_ACTIVATION_GELU: {
      float inner = FC_SQRT_2_OVER_PI * (x + FC_GELU_CUBIC_COEFFICIENT * x * x * x);
      return 0.5f * x * (1.0f + tanhf(inner));
    }
    default: return x;
  }
}

#endif
