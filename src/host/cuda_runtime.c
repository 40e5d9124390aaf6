/* cuda_runtime.c — see cuda_runtime.h. Without FLASHC_WITH_CUDA every call reports no device. */
#include "host/cuda_runtime.h"

#include <string.h>

#include "host/error.h"

#ifdef FLASHC_WITH_CUDA
#include <cuda_runtime_api.h>

static flashc_status fc_cuda_fail(cudaError_t error, const char* what) {
  if (error == cudaErrorMemoryAllocation)
    return fc_fail(FLASHC_STATUS_OUT_OF_MEMORY, "%s: %s", what, cudaGetErrorString(error));
  return fc_fail(FLASHC_STATUS_CUDA_ERROR, "%s: %s (%s)", what, cudaGetErrorString(error),
                 cudaGetErrorName(error));
}

flashc_status fc_cuda_device_count(int* count) {
  int n = 0;
  cudaError_t error = cudaGetDeviceCount(&n);
  if (error != cudaSuccess) {
    cudaGetLastError(); /* a machine without a driver answers here; that is "0 devices" */
    n = 0;
  }
  *count = n;
  return FLASHC_STATUS_SUCCESS;
}

flashc_status fc_cuda_device_info(int device, flashc_device_info* info) {
  struct cudaDeviceProp prop;
  cudaError_t error = cudaGetDeviceProperties(&prop, device);
  if (error != cudaSuccess) return fc_cuda_fail(error, "cudaGetDeviceProperties");
  strncpy(info->name, prop.name, sizeof info->name - 1);
  info->name[sizeof info->name - 1] = '\0';
  info->cc_major = prop.major;
  info->cc_minor = prop.minor;
  info->sm_count = prop.multiProcessorCount;
  info->global_memory_bytes = prop.totalGlobalMem;
  info->shared_memory_per_block_optin = prop.sharedMemPerBlockOptin;
  info->l2_cache_bytes = (size_t)prop.l2CacheSize;
  return FLASHC_STATUS_SUCCESS;
}

flashc_status fc_cuda_malloc(int device, size_t bytes, void** pointer) {
  cudaError_t error = cudaSetDevice(device);
  if (error == cudaSuccess) error = cudaMalloc(pointer, bytes);
  if (error != cudaSuccess) return fc_cuda_fail(error, "cudaMalloc of the workspace");
  return FLASHC_STATUS_SUCCESS;
}

flashc_status fc_cuda_free(int device, void* pointer, void* stream) {
  (void)device;
  /* Work already queued on the stream may still read the buffer: wait for it. */
  cudaError_t error = cudaStreamSynchronize((cudaStream_t)stream);
  if (error == cudaSuccess) error = cudaFree(pointer);
  if (error != cudaSuccess) return fc_cuda_fail(error, "cudaFree of the workspace");
  return FLASHC_STATUS_SUCCESS;
}

flashc_status fc_cuda_synchronize(int device) {
  cudaError_t error = cudaSetDevice(device);
  if (error == cudaSuccess) error = cudaDeviceSynchronize();
  if (error != cudaSuccess) return fc_cuda_fail(error, "cudaDeviceSynchronize");
  return FLASHC_STATUS_SUCCESS;
}

#else /* !FLASHC_WITH_CUDA */

static flashc_status fc_no_cuda(void) {
  return fc_fail(FLASHC_STATUS_NO_DEVICE, "flashc was built without CUDA support");
}

flashc_status fc_cuda_device_count(int* count) {
  *count = 0;
  return FLASHC_STATUS_SUCCESS;
}
flashc_status fc_cuda_device_info(int device, flashc_device_info* info) { return fc_no_cuda(); }
flashc_status fc_cuda_malloc(int device, size_t bytes, void** pointer) { return fc_no_cuda(); }
flashc_status fc_cuda_free(int device, void* pointer, void* stream) { return fc_no_cuda(); }
flashc_status fc_cuda_synchronize(int device) { return fc_no_cuda(); }

#endif
