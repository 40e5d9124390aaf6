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
 * sequence; d64, d128 and d256 are built with both a narrow and a wide width and the launcher
 * picks per problem (attn_fwd_launch.cu, block_n_for). Measured on the H200 (bf16, 2026-11-29):
 * d128 16k 556 → 570 TFLOP/s with 160 over 128, d64 16k 388 → 418 with 192; at 1k the narrow
 * blocks win by ~8 %. Under a causal mask or a window, d128's 128-key blocks (a divisor of the
 * 128-row tile) win up to 8192 keys (24th session); d256's 64-key ones are the same idea.
 *
 * Consumer warpgroups (the fourth entry; BLOCK_M = 64 × that): 2; for d64 also 3 (192-row
 * tiles, 112-key blocks: 160 registers per consumer thread) and 4 (256-row tiles, 64-key
 * blocks), which the launcher uses for long and short problems without a mask, and 1 (64-row
 * tiles, three CTAs per SM: attn_fwd_ctas_per_sm) for masked problems whose rows see few keys
 * (consumers_for_problem; d128's one-consumer instance was removed in the 24th session).
 * (d, d_v, BLOCK_N, consumers) names an instance: d64 has 64-key blocks with 1 and with 4.
 */
#ifndef FLASHC_KERNELS_ATTN_FWD_INSTANCES_CUH
#define FLASHC_KERNELS_ATTN_FWD_INSTANCES_CUH

#include <cuda_runtime.h>

#include "kernels/attn/attn_fwd_config.cuh"
#include "kernels/attn/attn_fwd_params.cuh"
#include "kernels/launch.h"

/* X(head_dim, head_dim_v, block_n, consumers), the widths of one pair in increasing order —
 * keep in sync with gen_attn_fwd_inst.py's INSTANCES (and the list below with its
 * STREAM_K_INSTANCES). */
#define ATTN_FWD_INSTANCES(X) \
  X(64, 64, 128, 2)           \
  X(64, 64, 192, 2)           \
  X(64, 64, 112, 3)           \
  X(64, 64, 64, 4)            \
  X(64, 64, 64, 1)            \
  X(64, 64, 80, 1)            \
  X(96, 96, 128, 2)           \
  X(128, 128, 128, 2)         \
  X(128, 128, 160, 2)         \
  X(192, 128, 112, 2)         \
  X(192, 192, 112, 2)         \
  X(256, 256, 64, 2)          \
  X(256, 256, 80, 2)

/* The instances also built with the stream-K tail (attn_fwd_stream_k.cuh), a second kernel
 * each: the launcher takes it only for a problem whose plan splits the last round. The tail's
 * code compiled into a kernel costs where it stays unused (H200, 16th session, same process:
 * causal d256 1k −2.2 %, d128 1k −1.1 %, d64 causal 1k −1.1 %, d64 16k −0.8 %), so masked,
 * varlen and split problems, and uniform ones the model leaves whole, run the plain kernel.
 * Those whose uniform problems gain: d128 from 2k keys (160-key blocks), d256, and d64's 3- and
 * 4-consumer instances (its uniform problems from 256 queries). */
#define ATTN_FWD_STREAM_K_INSTANCES(X) \
  X(64, 64, 112, 3)                    \
  X(64, 64, 64, 4)                     \
  X(128, 128, 160, 2)                  \
  X(256, 256, 80, 2)

/* ... and a third kernel, the stream-K one whose key loop ends sequences in narrow blocks
 * (ATTN_FWD_KIND_STREAM_K_NARROW, attn_fwd_config.cuh): the launcher takes it for stream-K
 * plans whose sequences have narrow blocks (kind_for in attn_fwd_launch.cu). */
#define ATTN_FWD_STREAM_K_NARROW_INSTANCES(X) \
  X(128, 128, 160, 2)

/* Position of an instance's kernel (plain, with the stream-K tail, narrow stream-K) in the lists:
 * with the dtype it names the kernel in the handle's kernel-attribute cache
 * (kernels/common/kernel_attributes.cuh). */
static __host__ __device__ constexpr int attn_fwd_instance_index(int head_dim, int head_dim_v, int block_n,
                                                                 int consumers, int kind) {
  int index = 0;
#define ATTN_FWD_INDEX_OF(d, dv, n, c, k)                                                            \
  if (head_dim == d && head_dim_v == dv && block_n == n && consumers == c && kind == k) return index; \
  ++index;
#define ATTN_FWD_INDEX(d, dv, n, c) ATTN_FWD_INDEX_OF(d, dv, n, c, ATTN_FWD_KIND_PLAIN)
#define ATTN_FWD_INDEX_SK(d, dv, n, c) ATTN_FWD_INDEX_OF(d, dv, n, c, ATTN_FWD_KIND_STREAM_K)
#define ATTN_FWD_INDEX_SKN(d, dv, n, c) ATTN_FWD_INDEX_OF(d, dv, n, c, ATTN_FWD_KIND_STREAM_K_NARROW)
  ATTN_FWD_INSTANCES(ATTN_FWD_INDEX)
  ATTN_FWD_STREAM_K_INSTANCES(ATTN_FWD_INDEX_SK)
  ATTN_FWD_STREAM_K_NARROW_INSTANCES(ATTN_FWD_INDEX_SKN)
#undef ATTN_FWD_INDEX
#undef ATTN_FWD_INDEX_SK
#undef ATTN_FWD_INDEX_SKN
#undef ATTN_FWD_INDEX_OF
  return -1;
}

template <int Input, int HeadDim, int HeadDimV, int BlockN, int Consumers, int Kind>
cudaError_t attn_fwd_launch_kernel(const attn_fwd_params& params, int grid, cudaStream_t stream,
                                   const fc_cuda_context* context);

#define ATTN_FWD_EXTERN_KIND(d, dv, n, c, kind)                                                                       \
  extern template cudaError_t attn_fwd_launch_kernel<0, d, dv, n, c, kind>(const attn_fwd_params&, int, cudaStream_t, \
                                                                         const fc_cuda_context*);                   \
  extern template cudaError_t attn_fwd_launch_kernel<1, d, dv, n, c, kind>(const attn_fwd_params&, int, cudaStream_t, \
                                                                         const fc_cuda_context*);
#define ATTN_FWD_EXTERN(d, dv, n, c) ATTN_FWD_EXTERN_KIND(d, dv, n, c, ATTN_FWD_KIND_PLAIN)
#define ATTN_FWD_EXTERN_SK(d, dv, n, c) ATTN_FWD_EXTERN_KIND(d, dv, n, c, ATTN_FWD_KIND_STREAM_K)
#define ATTN_FWD_EXTERN_SKN(d, dv, n, c) ATTN_FWD_EXTERN_KIND(d, dv, n, c, ATTN_FWD_KIND_STREAM_K_NARROW)
ATTN_FWD_INSTANCES(ATTN_FWD_EXTERN)
ATTN_FWD_STREAM_K_INSTANCES(ATTN_FWD_EXTERN_SK)
ATTN_FWD_STREAM_K_NARROW_INSTANCES(ATTN_FWD_EXTERN_SKN)
#undef ATTN_FWD_EXTERN
#undef ATTN_FWD_EXTERN_SK
#undef ATTN_FWD_EXTERN_SKN
#undef ATTN_FWD_EXTERN_KIND

#endif
