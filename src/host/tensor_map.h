/*
 * tensor_map.h — TMA tensor maps (CUtensorMap) encoded on the host, with every argument
 * checked and named in the error message.
 *
 * The driver's cuTensorMapEncodeTiled is reached through the runtime
 * (cudaGetDriverEntryPointByVersion, ABI 12.0), so flashc does not link libcuda. Resolve it
 * once into an fc_tensor_map_encoder (e.g. kept in the handle) and pass that to every encode
 * call, or pass NULL to resolve it on each call. There is no global state.
 *
 * Typical use (a row-major bf16 M×K matrix A loaded as 64×64 tiles with 128B swizzle):
 *   fc_tensor_map_desc d;
 *   fc_tensor_map_desc_init(&d);
 *   d.dtype = FLASHC_DTYPE_BF16; d.rank = 2; d.global_address = a;
 *   d.global_dims[0] = K; d.global_dims[1] = M;         innermost (contiguous) first
 *   d.global_strides[0] = 1; d.global_strides[1] = lda;  in elements
 *   d.box_dims[0] = 64; d.box_dims[1] = 64;
 *   d.swizzle = FC_TENSOR_MAP_SWIZZLE_128B;
 *   FC_TRY(fc_tensor_map_encode_tiled(&encoder, &d, &map));
 * then pass `map` by value to the kernel as `const __grid_constant__ CUtensorMap`.
 *
 * Without CUDA (FLASHC_WITH_CUDA undefined) the same declarations exist; fc_tensor_map is an
 * opaque 128-byte block and every function returns FLASHC_STATUS_NO_DEVICE.
 */
#ifndef FLASHC_HOST_TENSOR_MAP_H
#define FLASHC_HOST_TENSOR_MAP_H

#include <stdint.h>

#include "flashc.h"

#ifdef FLASHC_WITH_CUDA
#include <cuda.h> /* CUtensorMap (types only: no libcuda is linked) */
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define FC_TENSOR_MAP_MAX_RANK 5

#ifdef FLASHC_WITH_CUDA
typedef CUtensorMap fc_tensor_map;
#else
/* Stand-in with CUtensorMap's size and alignment. */
typedef struct fc_tensor_map {
#ifdef __cplusplus
  alignas(64) uint64_t opaque[16];
#else
  _Alignas(64) uint64_t opaque[16];
#endif
} fc_tensor_map;
#endif

/* Swizzle of the shared-memory box, named by its span in bytes (the values of smem_swizzle in
 * src/kernels/common/ptx_desc.cuh). The box's inner extent in bytes must not exceed it. */
typedef enum fc_tensor_map_swizzle {
  FC_TENSOR_MAP_SWIZZLE_NONE = 0,
  FC_TENSOR_MAP_SWIZZLE_32B = 32,
  FC_TENSOR_MAP_SWIZZLE_64B = 64,
  FC_TENSOR_MAP_SWIZZLE_128B = 128
} fc_tensor_map_swizzle;

/* How far L2 promotes each TMA access. */
typedef enum fc_tensor_map_l2_promotion {
  FC_TENSOR_MAP_L2_NONE = 0,
  FC_TENSOR_MAP_L2_64B = 64,
  FC_TENSOR_MAP_L2_128B = 128,
  FC_TENSOR_MAP_L2_256B = 256
} fc_tensor_map_l2_promotion;

/* What out-of-bounds box elements read as. Stores always drop them. */
typedef enum fc_tensor_map_oob_fill {
  FC_TENSOR_MAP_OOB_ZERO = 0, /* zeros: tails of M, N, K, seqlen need no branches */
  FC_TENSOR_MAP_OOB_NAN = 1   /* NaN (floating-point dtypes only); for debugging */
} fc_tensor_map_oob_fill;

/* A tiled tensor map. Dimensions are listed innermost first; index 0 is the contiguous one. */
typedef struct fc_tensor_map_desc {
  flashc_dtype dtype;                               /* fp32, fp16, bf16 or e4m3 */
  int rank;                                         /* 1..5 */
  const void* global_address;                       /* 16-byte aligned */
  uint64_t global_dims[FC_TENSOR_MAP_MAX_RANK];     /* elements, 1 .. 2^32 */
  int64_t global_strides[FC_TENSOR_MAP_MAX_RANK];   /* elements; [0] must be 1; [i] for i ≥ 1:
                                                       positive, a multiple of 16 bytes, < 2^40 bytes */
  uint32_t box_dims[FC_TENSOR_MAP_MAX_RANK];        /* elements, 1..256; box_dims[0] × element size
                                                       a multiple of 16 bytes */
  fc_tensor_map_swizzle swizzle;                    /* default 128B */
  fc_tensor_map_l2_promotion l2_promotion;          /* default 256B */
  fc_tensor_map_oob_fill oob_fill;                  /* default zeros */
} fc_tensor_map_desc;

/* The driver entry point, resolved once. */
typedef struct fc_tensor_map_encoder {
  void* encode_tiled; /* PFN_cuTensorMapEncodeTiled_v12000 */
} fc_tensor_map_encoder;

/* Sets every field to its default (zeros, rank 0, strides[0] = 1, swizzle 128B, L2 256B,
 * OOB zero fill); the caller then sets dtype, rank, address, dims, strides and box. */
void fc_tensor_map_desc_init(fc_tensor_map_desc* desc);

/* The stride (in elements) to give a dimension of extent 1: never stepped, but the driver
 * still wants a positive multiple of 16 bytes, which the validation does not require of a
 * unit extent (e.g. the row stride of a seqlen-1 decode query). `stride` is the tensor's own
 * stride for that dimension, rounded up here. */
int64_t fc_tensor_map_unit_extent_stride(int64_t stride, int64_t element_bytes);

/* Resolves cuTensorMapEncodeTiled. NO_DEVICE when there is no usable driver (or no CUDA in
 * this build), NOT_SUPPORTED when the driver lacks the function. */
flashc_status fc_tensor_map_encoder_init(fc_tensor_map_encoder* encoder);

/* Checks `desc` and encodes it into `map` (untouched on failure). `encoder` may be NULL: the
 * entry point is then resolved for this call. Returns INVALID_VALUE / MISALIGNED /
 * NULL_POINTER / NOT_SUPPORTED_DTYPE with a message naming the field, CUDA_ERROR when the
 * driver rejects the map. */
flashc_status fc_tensor_map_encode_tiled(const fc_tensor_map_encoder* encoder, const fc_tensor_map_desc* desc,
                                         fc_tensor_map* map);

#ifdef __cplusplus
}
#endif

#endif
