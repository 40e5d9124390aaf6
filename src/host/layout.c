/* layout.c — see layout.h. */
#include "host/layout.h"

#include "host/error.h"

int fc_dtype_is_valid(flashc_dtype dtype) { return flashc_dtype_name(dtype) != NULL; }

flashc_status fc_check_layout(const char* tensor_name, const fc_dim* dims, int ndims, int64_t inner) {
  /* Order the dimensions by stride (insertion sort; ndims <= 4). */
  const fc_dim* order[4];
  int count = 0;
  for (int i = 0; i < ndims && i < 4; ++i) {
    if (dims[i].stride < 0)
      return fc_fail(FLASHC_STATUS_BAD_LAYOUT, "%s (%lld) of %s is negative", dims[i].stride_name,
                     (long long)dims[i].stride, tensor_name);
    if (dims[i].extent <= 1) continue;
    int position = count++;
    while (position > 0 && order[position - 1]->stride > dims[i].stride) {
      order[position] = order[position - 1];
      --position;
    }
    order[position] = &dims[i];
  }
  /* Each dimension must step past everything the dimensions inside it span. */
  int64_t span = inner;
  for (int i = 0; i < count; ++i) {
    if (order[i]->stride < span)
      return fc_fail(FLASHC_STATUS_BAD_LAYOUT,
                     "%s (%lld) of %s is smaller than the %lld elements spanned inside it: elements would overlap "
                     "(the last dimension must be contiguous and dimensions must not interleave)",
                     order[i]->stride_name, (long long)order[i]->stride, tensor_name, (long long)span);
    span += order[i]->stride * (order[i]->extent - 1);
  }
  return FLASHC_STATUS_SUCCESS;
}

flashc_status fc_check_gpu_alignment(const char* tensor_name, const void* pointer, const fc_dim* dims, int ndims,
                                     size_t element_bytes) {
  if ((uintptr_t)pointer % FC_GPU_ALIGNMENT_BYTES != 0)
    return fc_fail(FLASHC_STATUS_MISALIGNED, "%s (%p) is not %d-byte aligned", tensor_name, pointer,
                   FC_GPU_ALIGNMENT_BYTES);
  for (int i = 0; i < ndims; ++i) {
    if (dims[i].extent <= 1) continue;
    if ((dims[i].stride * (int64_t)element_bytes) % FC_GPU_ALIGNMENT_BYTES != 0)
      return fc_fail(FLASHC_STATUS_MISALIGNED, "%s (%lld elements) of %s is not a multiple of %d bytes",
                     dims[i].stride_name, (long long)dims[i].stride, tensor_name, FC_GPU_ALIGNMENT_BYTES);
  }
  return FLASHC_STATUS_SUCCESS;
}
