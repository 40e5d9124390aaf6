/*
 * layout.h — checks shared by every operation's validation: tensor strides (non-negative,
 * no two elements at one address, the last dimension contiguous) and the 16-byte
 * alignment that TMA and vector loads need on the GPU.
 */
#ifndef FLASHC_HOST_LAYOUT_H
#define FLASHC_HOST_LAYOUT_H

#include <stdint.h>

#include "flashc.h"

/* Bytes the GPU kernels need pointers and (non-contiguous) strides aligned to. */
#define FC_GPU_ALIGNMENT_BYTES 16

/* One outer dimension of a tensor: its extent, its stride and the stride's name for messages. */
typedef struct fc_dim {
  int64_t extent;
  int64_t stride;
  const char* stride_name;
} fc_dim;

/*
 * Checks that a tensor of outer dimensions `dims` around a contiguous last dimension of
 * `inner` elements maps distinct elements to distinct addresses and that strides are not
 * negative (BAD_LAYOUT otherwise). Dimensions of extent 1 are ignored.
 */
flashc_status fc_check_layout(const char* tensor_name, const fc_dim* dims, int ndims, int64_t inner);

/* MISALIGNED unless pointer and every stride of an extent > 1 are 16-byte multiples. */
flashc_status fc_check_gpu_alignment(const char* tensor_name, const void* pointer, const fc_dim* dims, int ndims,
                                     size_t element_bytes);

/* Name of a dtype value for messages, "invalid (n)" style handled by the caller. */
int fc_dtype_is_valid(flashc_dtype dtype);

#endif
