/*
 * attn_fwd_instances.cuh — the instances the Hopper attention forward is built for (head
 * dims and key-block width), as one X-macro list, and the declaration of the per-instance
 * launch function. Each instance × dtype is compiled in its own translation unit,
 * src/kernels/inst/attn_fwd_*.cu (written by src/kernels/inst/gen_attn_fwd_inst.py from the
 * same list), so the build compiles them in parallel and attn_fwd_launch.cu sees only these
 * declarations.
 *
 * Key-block width BLOCK_N (the third entry): registers bound it (per consumer thread O needs
 * d_v/2 fp32, S BLOCK_N/2 fp32 and P BLOCK_N/4 packed pairs, all live in the overlapped loop)
 * and so does shared memory (attn_fwd_config.cuh). Wider blocks amortize each block's fixed
 * cost (barrier waits, row reductions, O rescale) but pad the last block of a short key
 * sequence; d64 and d128 are built with both a narrow and a wide width and the launcher picks
 * per problem (attn_fwd_launch.cu, block_n_for). Measured on the H200 (bf16, 2026-11-29):
 * d128 16k 556 → 570 TFLOP/s with 160 over 128, d64 16k 388 → 418 with 192; at 1k the narrow
 * blocks win by ~8 %.
 *
 * Consumer warpgroups (the fourth entry; BLOCK_M = 64 × that): 2, or 3 for d64's extra
 * instance (192-row tiles, 112-key blocks: 160 registers per consumer thread), which the
 * launcher uses for long problems without a mask (consumers_for_problem). A width belongs to
 * one consumer count per (d, d_v), so (d, d_v, BLOCK_N) still names an instance.
 */
#ifndef FLASHC_KERNELS_ATTN_FWD_INSTANCES_CUH
#define FLASHC_KERNELS_ATTN_FWD_INSTANCES_CUH

#include <cuda_runtime.h>

#include "kernels/attn/attn_fwd_params.cuh"
#include "kernels/launch.h"

/* X(head_dim, head_dim_v, block_n, consumers), the widths of one pair in increasing order —
 * keep in sync with gen_attn_fwd_inst.py's INSTANCES. */
#define ATTN_FWD_INSTANCES(X) \
  X(64, 64, 128, 2)           \
  X(64, 64, 192, 2)           \
  X(64, 64, 112, 3)           \
  X(64, 64, 64, 4)            \
  X(96, 96, 128, 2)           \
  X(128, 128, 128, 2)         \
  X(128, 128, 160, 2)         \
  X(192, 128, 112, 2)         \
  X(192, 192, 112, 2)         \
  X(256, 256, 80, 2)

/* Position of an instance in the list: with the dtype it names the instance in the handle's
 * kernel-attribute cache (kernels/common/kernel_attributes.cuh). */
static __host__ __device__ constexpr int attn_fwd_instance_index(int head_dim, int head_dim_v, int block_n,
                                                                 int consumers) {
  int index = 0;
#define ATTN_FWD_INDEX(d, dv, n, c)                                                       \
  if (head_dim == d && head_dim_v == dv && block_n == n && consumers == c) return index; \
  ++index;
  ATTN_FWD_INSTANCES(ATTN_FWD_INDEX)
#undef ATTN_FWD_INDEX
  return -1;
}

template <int Input, int HeadDim, int HeadDimV, int BlockN, int Consumers>
cudaError_t attn_fwd_launch_kernel(const attn_fwd_params& params, int grid, cudaStream_t stream,
                                   const fc_cuda_context* context);

#define ATTN_FWD_EXTERN(d, dv, n, c)                                                                              \
  extern template cudaError_t attn_fwd_launch_kernel<0, d, dv, n, c>(const attn_fwd_params&, int, cudaStream_t, \
                                                                     const fc_cuda_context*);                   \
  extern template cudaError_t attn_fwd_launch_kernel<1, d, dv, n, c>(const attn_fwd_params&, int, cudaStream_t, \
                                                                     const fc_cuda_context*);
ATTN_FWD_INSTANCES(ATTN_FWD_EXTERN)
#undef ATTN_FWD_EXTERN

#endif
