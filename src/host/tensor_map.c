/* tensor_map.c — see tensor_map.h. Host C11; the driver is reached only through the runtime's
 * entry-point query, so nothing here links libcuda. */
#include "host/tensor_map.h"

#include <stddef.h>
#include <string.h>

#include "host/error.h"

int64_t fc_tensor_map_unit_extent_stride(int64_t stride, int64_t element_bytes) {
  const int64_t bytes = stride * element_bytes;
  const int64_t rounded = bytes <= 16 ? 16 : (bytes + 15) / 16 * 16;
  return rounded / element_bytes;
}

void fc_tensor_map_desc_init(fc_tensor_map_desc* desc) {
  memset(desc, 0, sizeof *desc);
  desc->dtype = FLASHC_DTYPE_BF16;
  desc->global_strides[0] = 1;
  desc->swizzle = FC_TENSOR_MAP_SWIZZLE_128B;
  desc->l2_promotion = FC_TENSOR_MAP_L2_256B;
  desc->oob_fill = FC_TENSOR_MAP_OOB_ZERO;
}

/* TMA limits (CUDA driver API, cuTensorMapEncodeTiled). */
enum {
  FC_TMA_MAX_BOX_DIM = 256,
  FC_TMA_ADDRESS_ALIGNMENT = 16,
  FC_TMA_STRIDE_ALIGNMENT = 16,
  FC_TMA_INNER_BOX_ALIGNMENT = 16
};
#define FC_TMA_MAX_GLOBAL_DIM (1ull << 32)
#define FC_TMA_MAX_STRIDE_BYTES (1ull << 40)

static size_t fc_tma_element_size(flashc_dtype dtype) {
  switch (dtype) {
    case FLASHC_DTYPE_FP32:
      return 4;
    case FLASHC_DTYPE_FP16:
    case FLASHC_DTYPE_BF16:
      return 2;
    case FLASHC_DTYPE_E4M3:
      return 1;
    default:
      return 0;
  }
}

/* Everything that does not need the driver: shared by both builds so the messages are the
 * same with and without CUDA. */
static flashc_status fc_tensor_map_check(const fc_tensor_map_desc* desc) {
  if (desc->rank < 1 || desc->rank > FC_TENSOR_MAP_MAX_RANK)
    return fc_fail(FLASHC_STATUS_INVALID_VALUE, "tensor map rank (%d) must be in 1..%d", desc->rank,
                   FC_TENSOR_MAP_MAX_RANK);
  size_t element_size = fc_tma_element_size(desc->dtype);
  if (element_size == 0)
    return fc_fail(FLASHC_STATUS_NOT_SUPPORTED_DTYPE, "tensor map dtype (%d) must be fp32, fp16, bf16 or e4m3",
                   (int)desc->dtype);
  if (desc->global_address == NULL)
    return fc_fail(FLASHC_STATUS_NULL_POINTER, "tensor map global_address is NULL");
  if ((uintptr_t)desc->global_address % FC_TMA_ADDRESS_ALIGNMENT != 0)
    return fc_fail(FLASHC_STATUS_MISALIGNED, "tensor map global_address (%p) is not %d-byte aligned",
                   desc->global_address, FC_TMA_ADDRESS_ALIGNMENT);

  for (int i = 0; i < desc->rank; ++i) {
    if (desc->global_dims[i] < 1 || desc->global_dims[i] > FC_TMA_MAX_GLOBAL_DIM)
      return fc_fail(FLASHC_STATUS_INVALID_VALUE, "tensor map global_dims[%d] (%llu) must be in 1..2^32", i,
                     (unsigned long long)desc->global_dims[i]);
    if (desc->box_dims[i] < 1 || desc->box_dims[i] > FC_TMA_MAX_BOX_DIM)
      return fc_fail(FLASHC_STATUS_INVALID_VALUE, "tensor map box_dims[%d] (%u) must be in 1..%d", i,
                     (unsigned)desc->box_dims[i], FC_TMA_MAX_BOX_DIM);
  }
  if (desc->global_strides[0] != 1)
    return fc_fail(FLASHC_STATUS_BAD_LAYOUT,
                   "tensor map global_strides[0] (%lld) must be 1: TMA needs the innermost dimension contiguous",
                   (long long)desc->global_strides[0]);
  for (int i = 1; i < desc->rank; ++i) {
    long long stride = (long long)desc->global_strides[i];
    if (stride <= 0)
      return fc_fail(FLASHC_STATUS_BAD_LAYOUT, "tensor map global_strides[%d] (%lld) must be positive", i, stride);
    unsigned long long stride_bytes = (unsigned long long)stride * element_size;
    if (stride_bytes % FC_TMA_STRIDE_ALIGNMENT != 0)
      return fc_fail(FLASHC_STATUS_MISALIGNED,
                     "tensor map global_strides[%d] (%lld elements = %llu bytes) is not a multiple of %d bytes", i,
                     stride, stride_bytes, FC_TMA_STRIDE_ALIGNMENT);
    if (stride_bytes >= FC_TMA_MAX_STRIDE_BYTES)
      return fc_fail(FLASHC_STATUS_INVALID_VALUE, "tensor map global_strides[%d] (%llu bytes) must be below 2^40 bytes",
                     i, stride_bytes);
  }

  unsigned inner_box_bytes = (unsigned)(desc->box_dims[0] * element_size);
  if (inner_box_bytes % FC_TMA_INNER_BOX_ALIGNMENT != 0)
    return fc_fail(FLASHC_STATUS_INVALID_VALUE,
                   "tensor map box_dims[0] (%u elements = %u bytes) is not a multiple of %d bytes",
                   (unsigned)desc->box_dims[0], inner_box_bytes, FC_TMA_INNER_BOX_ALIGNMENT);
  switch (desc->swizzle) {
    case FC_TENSOR_MAP_SWIZZLE_NONE:
      break;
    case FC_TENSOR_MAP_SWIZZLE_32B:
    case FC_TENSOR_MAP_SWIZZLE_64B:
    case FC_TENSOR_MAP_SWIZZLE_128B:
      if (inner_box_bytes > (unsigned)desc->swizzle)
        return fc_fail(FLASHC_STATUS_INVALID_VALUE,
                       "tensor map box_dims[0] (%u elements = %u bytes) exceeds the %dB swizzle span: at most %u "
                       "elements per box row (load wider tiles as several boxes)",
                       (unsigned)desc->box_dims[0], inner_box_bytes, (int)desc->swizzle,
                       (unsigned)(desc->swizzle / element_size));
      break;
    default:
      return fc_fail(FLASHC_STATUS_INVALID_VALUE, "tensor map swizzle (%d) must be 0, 32, 64 or 128 (bytes)",
                     (int)desc->swizzle);
  }
  switch (desc->l2_promotion) {
    case FC_TENSOR_MAP_L2_NONE:
    case FC_TENSOR_MAP_L2_64B:
    case FC_TENSOR_MAP_L2_128B:
    case FC_TENSOR_MAP_L2_256B:
      break;
    default:
      return fc_fail(FLASHC_STATUS_INVALID_VALUE, "tensor map l2_promotion (%d) must be 0, 64, 128 or 256 (bytes)",
                     (int)desc->l2_promotion);
  }
  if (desc->oob_fill != FC_TENSOR_MAP_OOB_ZERO && desc->oob_fill != FC_TENSOR_MAP_OOB_NAN)
    return fc_fail(FLASHC_STATUS_INVALID_VALUE, "tensor map oob_fill (%d) must be FC_TENSOR_MAP_OOB_ZERO or _NAN",
                   (int)desc->oob_fill);
  if (desc->oob_fill == FC_TENSOR_MAP_OOB_NAN && desc->dtype == FLASHC_DTYPE_E4M3)
    return fc_fail(FLASHC_STATUS_INVALID_VALUE,
                   "tensor map oob_fill NaN needs a floating-point TMA type; e4m3 is moved as bytes");
  return FLASHC_STATUS_SUCCESS;
}

#ifdef FLASHC_WITH_CUDA

#include <cudaTypedefs.h> /* PFN_cuTensorMapEncodeTiled_v12000 */
#include <cuda_runtime_api.h>

/* The ABI version of the driver functions we ask for (their _v12000 typedefs). */
#define FC_DRIVER_ABI_VERSION 12000

static flashc_status fc_resolve_driver_symbol(const char* symbol, void** function) {
  enum cudaDriverEntryPointQueryResult query = cudaDriverEntryPointSymbolNotFound;
  *function = NULL;
#if CUDART_VERSION >= 12050
  cudaError_t error = cudaGetDriverEntryPointByVersion(symbol, function, FC_DRIVER_ABI_VERSION, cudaEnableDefault,
                                                       &query);
#else
  cudaError_t error = cudaGetDriverEntryPoint(symbol, function, cudaEnableDefault, &query);
#endif
  if (error != cudaSuccess) {
    cudaGetLastError(); /* do not leave the error sticky for the caller's next runtime call */
    if (error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver)
      return fc_fail(FLASHC_STATUS_NO_DEVICE, "cannot reach the CUDA driver for %s: %s", symbol,
                     cudaGetErrorString(error));
    return fc_fail(FLASHC_STATUS_CUDA_ERROR, "cudaGetDriverEntryPoint(%s): %s (%s)", symbol,
                   cudaGetErrorString(error), cudaGetErrorName(error));
  }
  if (query != cudaDriverEntryPointSuccess || *function == NULL) {
    *function = NULL;
    return fc_fail(FLASHC_STATUS_NOT_SUPPORTED, "the CUDA driver does not provide %s (ABI %d): %s", symbol,
                   FC_DRIVER_ABI_VERSION,
                   query == cudaDriverEntryPointVersionNotSufficent ? "driver too old" : "symbol not found");
  }
  return FLASHC_STATUS_SUCCESS;
}

flashc_status fc_tensor_map_encoder_init(fc_tensor_map_encoder* encoder) {
  if (encoder == NULL) return fc_fail(FLASHC_STATUS_NULL_POINTER, "tensor map encoder is NULL");
  encoder->encode_tiled = NULL;
  return fc_resolve_driver_symbol("cuTensorMapEncodeTiled", &encoder->encode_tiled);
}

static CUtensorMapDataType fc_tma_data_type(flashc_dtype dtype) {
  switch (dtype) {
    case FLASHC_DTYPE_FP32:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    case FLASHC_DTYPE_FP16:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case FLASHC_DTYPE_BF16:
      return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    default: /* e4m3: TMA moves bytes */
      return CU_TENSOR_MAP_DATA_TYPE_UINT8;
  }
}

static CUtensorMapSwizzle fc_tma_swizzle(fc_tensor_map_swizzle swizzle) {
  switch (swizzle) {
    case FC_TENSOR_MAP_SWIZZLE_32B:
      return CU_TENSOR_MAP_SWIZZLE_32B;
    case FC_TENSOR_MAP_SWIZZLE_64B:
      return CU_TENSOR_MAP_SWIZZLE_64B;
    case FC_TENSOR_MAP_SWIZZLE_128B:
      return CU_TENSOR_MAP_SWIZZLE_128B;
    default:
      return CU_TENSOR_MAP_SWIZZLE_NONE;
  }
}

static CUtensorMapL2promotion fc_tma_l2_promotion(fc_tensor_map_l2_promotion promotion) {
  switch (promotion) {
    case FC_TENSOR_MAP_L2_64B:
      return CU_TENSOR_MAP_L2_PROMOTION_L2_64B;
    case FC_TENSOR_MAP_L2_128B:
      return CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
    case FC_TENSOR_MAP_L2_256B:
      return CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
    default:
      return CU_TENSOR_MAP_L2_PROMOTION_NONE;
  }
}

flashc_status fc_tensor_map_encode_tiled(const fc_tensor_map_encoder* encoder, const fc_tensor_map_desc* desc,
                                         fc_tensor_map* map) {
  if (desc == NULL) return fc_fail(FLASHC_STATUS_NULL_POINTER, "tensor map desc is NULL");
  if (map == NULL) return fc_fail(FLASHC_STATUS_NULL_POINTER, "tensor map output (map) is NULL");
  FC_TRY(fc_tensor_map_check(desc));

  fc_tensor_map_encoder resolved;
  if (encoder == NULL || encoder->encode_tiled == NULL) {
    FC_TRY(fc_tensor_map_encoder_init(&resolved));
    encoder = &resolved;
  }
  /* void* → function pointer through memcpy: ISO C has no cast between the two. */
  PFN_cuTensorMapEncodeTiled_v12000 encode;
  _Static_assert(sizeof encode == sizeof encoder->encode_tiled, "function and object pointers differ in size");
  memcpy(&encode, &encoder->encode_tiled, sizeof encode);

  size_t element_size = fc_tma_element_size(desc->dtype);
  cuuint64_t global_dims[FC_TENSOR_MAP_MAX_RANK];
  cuuint64_t global_strides_bytes[FC_TENSOR_MAP_MAX_RANK]; /* the driver takes rank-1 of them */
  cuuint32_t box_dims[FC_TENSOR_MAP_MAX_RANK];
  cuuint32_t element_strides[FC_TENSOR_MAP_MAX_RANK];
  for (int i = 0; i < desc->rank; ++i) {
    global_dims[i] = desc->global_dims[i];
    box_dims[i] = desc->box_dims[i];
    element_strides[i] = 1;
    if (i > 0) global_strides_bytes[i - 1] = (cuuint64_t)desc->global_strides[i] * element_size;
  }

  CUtensorMap encoded;
  CUresult result = encode(&encoded, fc_tma_data_type(desc->dtype), (cuuint32_t)desc->rank,
                           (void*)desc->global_address, global_dims, global_strides_bytes, box_dims, element_strides,
                           CU_TENSOR_MAP_INTERLEAVE_NONE, fc_tma_swizzle(desc->swizzle),
                           fc_tma_l2_promotion(desc->l2_promotion),
                           desc->oob_fill == FC_TENSOR_MAP_OOB_NAN ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
                                                                   : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS)
    return fc_fail(FLASHC_STATUS_CUDA_ERROR,
                   "cuTensorMapEncodeTiled rejected the map (CUresult %d): rank %d, dtype %d, box %ux%u, swizzle %dB",
                   (int)result, desc->rank, (int)desc->dtype, (unsigned)desc->box_dims[0],
                   desc->rank > 1 ? (unsigned)desc->box_dims[1] : 1u, (int)desc->swizzle);
  memcpy(map, &encoded, sizeof encoded);
  return FLASHC_STATUS_SUCCESS;
}

#else /* !FLASHC_WITH_CUDA */

flashc_status fc_tensor_map_encoder_init(fc_tensor_map_encoder* encoder) {
  if (encoder != NULL) encoder->encode_tiled = NULL;
  return fc_fail(FLASHC_STATUS_NO_DEVICE, "flashc was built without CUDA support: no tensor maps");
}

flashc_status fc_tensor_map_encode_tiled(const fc_tensor_map_encoder* encoder, const fc_tensor_map_desc* desc,
                                         fc_tensor_map* map) {
  (void)encoder;
  (void)map;
  if (desc != NULL) FC_TRY(fc_tensor_map_check(desc));
  return fc_fail(FLASHC_STATUS_NO_DEVICE, "flashc was built without CUDA support: no tensor maps");
}

#endif
