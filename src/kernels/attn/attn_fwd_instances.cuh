/*
 * attn_fwd_instances.cuh — the head-dimension pairs the Hopper attention forward is built
 * for, as one X-macro list, and the declaration of the per-instance launch function. Each
 * pair × dtype is compiled in its own translation unit, src/kernels/inst/attn_fwd_*.cu
 * (written by src/kernels/inst/gen_attn_fwd_inst.py from the same list), so the build
 * compiles them in parallel and attn_fwd_launch.cu sees only these declarations.
 */
#ifndef FLASHC_KERNELS_ATTN_FWD_INSTANCES_CUH
#define FLASHC_KERNELS_ATTN_FWD_INSTANCES_CUH

#include <cuda_runtime.h>

#include "kernels/attn/attn_fwd_params.cuh"
#include "kernels/launch.h"

/* X(head_dim, head_dim_v) — keep in sync with gen_attn_fwd_inst.py's HEAD_DIMS. */
#define ATTN_FWD_HEAD_DIMS(X) \
  X(64, 64)                   \
  X(96, 96)                   \
  X(128, 128)                 \
  X(192, 128)                 \
  X(192, 192)                 \
  X(256, 256)

/* Position of (d, d_v) in the list: with the dtype it names the instance in the handle's
 * kernel-attribute cache (kernels/common/kernel_attributes.cuh). */
static __host__ __device__ constexpr int attn_fwd_instance_index(int head_dim, int head_dim_v) {
  int index = 0;
#define ATTN_FWD_INDEX(d, dv)                    \
  if (head_dim == d && head_dim_v == dv) return index; \
  ++index;
  ATTN_FWD_HEAD_DIMS(ATTN_FWD_INDEX)
#undef ATTN_FWD_INDEX
  return -1;
}

template <int Input, int HeadDim, int HeadDimV>
cudaError_t attn_fwd_launch_kernel(const attn_fwd_params& params, int grid, cudaStream_t stream,
                                   const fc_cuda_context* context);

#define ATTN_FWD_EXTERN(d, dv)                                                                              \
  extern template cudaError_t attn_fwd_launch_kernel<0, d, dv>(const attn_fwd_params&, int, cudaStream_t, \
                                                               const fc_cuda_context*);                   \
  extern template cudaError_t attn_fwd_launch_kernel<1, d, dv>(const attn_fwd_params&, int, cudaStream_t, \
                                                               const fc_cuda_context*);
ATTN_FWD_HEAD_DIMS(ATTN_FWD_EXTERN)
#undef ATTN_FWD_EXTERN

#endif
