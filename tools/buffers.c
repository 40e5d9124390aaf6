/* buffers.c — host/device tensors, random inputs, poison, uploads and downloads. */
#include "buffers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "host/numeric.h"

#ifdef FLASHC_TOOL_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

/* The poison byte: 0xFF.. is a NaN in fp32, fp16, bf16 and e4m3 alike. */
#define POISON_BYTE 0xFF

/* Outliers (DESIGN.md §6: inputs with large outliers): about one element in 512 is
 * multiplied by 8, which stresses the softmax's running maximum and the accumulators. */
#define OUTLIER_PROBABILITY (1.0 / 512.0)
#define OUTLIER_FACTOR 8.0
/* No zeros: magnitudes below this fraction of the scale are pushed up to it (every dtype,
 * e4m3 included, represents it). */
#define MIN_MAGNITUDE 0.0625

static size_t device_bytes_in_use;

/* ---- random numbers ---- */

void rng_seed(tool_rng* rng, uint64_t seed) { rng->state = seed; }

uint64_t rng_next(tool_rng* rng) { /* splitmix64 (Steele, Lea, Flood 2014) */
  uint64_t z = (rng->state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double rng_uniform(tool_rng* rng) { return (double)(rng_next(rng) >> 11) * (1.0 / 9007199254740992.0); }

double rng_normal(tool_rng* rng) { /* Box-Muller; 1 - u keeps the logarithm finite */
  const double two_pi = 2.0 * acos(-1.0);
  double u = 1.0 - rng_uniform(rng), v = rng_uniform(rng);
  return sqrt(-2.0 * log(u)) * cos(two_pi * v);
}

int rng_int(tool_rng* rng, int low, int high) {
  uint64_t span = (uint64_t)((int64_t)high - low + 1);
  return low + (int)(rng_next(rng) % span);
}

/* ---- allocation ---- */

flashc_status tensor_alloc_raw(tensor* t, const char* name, size_t element_bytes, int64_t count) {
  memset(t, 0, sizeof *t);
  t->name = name;
  t->dtype = FLASHC_DTYPE_AUTO;
  t->element_bytes = element_bytes;
  if (count < 0) return tool_fail(FLASHC_STATUS_INVALID_VALUE, "%s has a negative size (%lld)", name, (long long)count);
  t->count = count;
  int64_t allocated = count > 0 ? count : 1;
  if ((uint64_t)allocated > SIZE_MAX / element_bytes)
    return tool_fail(FLASHC_STATUS_OUT_OF_MEMORY, "%s (%lld elements) does not fit in memory", name, (long long)count);
  t->host = malloc((size_t)allocated * element_bytes);
  if (!t->host)
    return tool_fail(FLASHC_STATUS_OUT_OF_MEMORY, "allocating %s (%.3g MB of host memory) failed", name,
                     (double)allocated * (double)element_bytes / 1e6);
  t->host_current = 1;
  return FLASHC_STATUS_SUCCESS;
}

flashc_status tensor_alloc(tensor* t, const char* name, flashc_dtype dtype, int64_t count) {
  size_t element_bytes = flashc_dtype_size(dtype);
  if (element_bytes == 0)
    return tool_fail(FLASHC_STATUS_INVALID_VALUE, "%s: dtype %d is not a dtype", name, (int)dtype);
  TOOL_TRY(tensor_alloc_raw(t, name, element_bytes, count));
  t->dtype = dtype;
  return FLASHC_STATUS_SUCCESS;
}

size_t tensor_bytes(const tensor* t) { return (size_t)(t->count > 0 ? t->count : 1) * t->element_bytes; }

int tensor_is_allocated(const tensor* t) { return t->host != NULL; }

void* tensor_pointer(const tensor* t, int on_device) { return on_device ? t->device : t->host; }

size_t tensor_device_bytes_in_use(void) { return device_bytes_in_use; }

void tensor_free(tensor* t) {
  free(t->host);
#ifdef FLASHC_TOOL_WITH_CUDA
  if (t->device) {
    cudaFree(t->device);
    device_bytes_in_use -= tensor_bytes(t);
  }
#endif
  memset(t, 0, sizeof *t);
}

/* ---- host/device transfers ---- */

#ifdef FLASHC_TOOL_WITH_CUDA
static flashc_status cuda_fail(cudaError_t error, const char* what, const tensor* t) {
  return tool_fail(FLASHC_STATUS_CUDA_ERROR, "%s %s (%.3g MB): %s", what, t->name, (double)tensor_bytes(t) / 1e6,
                   cudaGetErrorString(error));
}

static flashc_status ensure_device_buffer(tensor* t) {
  if (t->device) return FLASHC_STATUS_SUCCESS;
  cudaError_t error = cudaMalloc(&t->device, tensor_bytes(t));
  if (error != cudaSuccess) {
    t->device = NULL;
    cudaGetLastError(); /* reset the last-error slot so a later check does not report it again */
    return tool_fail(error == cudaErrorMemoryAllocation ? FLASHC_STATUS_OUT_OF_MEMORY : FLASHC_STATUS_CUDA_ERROR,
                     "cudaMalloc of %s (%.3g MB; %.3g MB already allocated by the tool) failed: %s", t->name,
                     (double)tensor_bytes(t) / 1e6, (double)device_bytes_in_use / 1e6, cudaGetErrorString(error));
  }
  device_bytes_in_use += tensor_bytes(t);
  return FLASHC_STATUS_SUCCESS;
}
#endif

#ifndef FLASHC_TOOL_WITH_CUDA
static flashc_status no_device(const tensor* t) {
  return tool_fail(FLASHC_STATUS_NO_DEVICE, "%s: this flashc tool was built without CUDA (no device memory)", t->name);
}
#endif

flashc_status tensor_prepare_input(tensor* t, int on_device) {
  if (!tensor_is_allocated(t)) return FLASHC_STATUS_SUCCESS; /* an absent optional input */
  if (!on_device) {
    TOOL_TRY(tensor_fetch(t));
    return FLASHC_STATUS_SUCCESS;
  }
#ifdef FLASHC_TOOL_WITH_CUDA
  if (t->device_current) return FLASHC_STATUS_SUCCESS;
  TOOL_TRY(ensure_device_buffer(t));
  cudaError_t error = cudaMemcpy(t->device, t->host, tensor_bytes(t), cudaMemcpyHostToDevice);
  if (error != cudaSuccess) return cuda_fail(error, "uploading", t);
  t->device_current = 1;
  return FLASHC_STATUS_SUCCESS;
#else
  return no_device(t);
#endif
}

flashc_status tensor_prepare_output(tensor* t, int on_device) {
  if (!tensor_is_allocated(t)) return FLASHC_STATUS_SUCCESS;
  if (!on_device) {
    memset(t->host, POISON_BYTE, tensor_bytes(t));
    t->host_current = 1;
    t->device_current = 0;
    return FLASHC_STATUS_SUCCESS;
  }
#ifdef FLASHC_TOOL_WITH_CUDA
  TOOL_TRY(ensure_device_buffer(t));
  cudaError_t error = cudaMemset(t->device, POISON_BYTE, tensor_bytes(t));
  if (error != cudaSuccess) return cuda_fail(error, "poisoning", t);
  t->device_current = 1;
  t->host_current = 0;
  return FLASHC_STATUS_SUCCESS;
#else
  return no_device(t);
#endif
}

flashc_status tensor_fetch(tensor* t) {
  if (!tensor_is_allocated(t) || t->host_current) return FLASHC_STATUS_SUCCESS;
#ifdef FLASHC_TOOL_WITH_CUDA
  cudaError_t error = cudaMemcpy(t->host, t->device, tensor_bytes(t), cudaMemcpyDeviceToHost);
  if (error != cudaSuccess) return cuda_fail(error, "downloading", t);
  t->host_current = 1;
  return FLASHC_STATUS_SUCCESS;
#else
  return no_device(t);
#endif
}

flashc_status tensor_reserve_workspace(tensor* t, size_t bytes, int on_device) {
  if (bytes == 0 || !tensor_is_allocated(t) || tensor_bytes(t) < bytes) {
    tensor_free(t);
    if (bytes == 0) return FLASHC_STATUS_SUCCESS;
    TOOL_TRY(tensor_alloc_raw(t, "workspace", 1, (int64_t)bytes));
  }
  return tensor_prepare_output(t, on_device);
}

/* ---- contents ---- */

void tensor_fill_random(tensor* t, tool_rng* rng, double scale) {
  const double min_magnitude = MIN_MAGNITUDE * scale;
  for (int64_t i = 0; i < t->count; ++i) {
    double x = rng_normal(rng) * scale;
    if (rng_uniform(rng) < OUTLIER_PROBABILITY) x *= OUTLIER_FACTOR;
    if (fabs(x) < min_magnitude) x = x < 0.0 ? -min_magnitude : min_magnitude;
    fc_store_f32(t->host, i, t->dtype, (float)x);
  }
  t->host_current = 1;
  t->device_current = 0;
}

void tensor_fill_uniform(tensor* t, tool_rng* rng, double low, double high) {
  for (int64_t i = 0; i < t->count; ++i)
    fc_store_f32(t->host, i, t->dtype, (float)(low + (high - low) * rng_uniform(rng)));
  t->host_current = 1;
  t->device_current = 0;
}

int tensor_element_is_poison(const tensor* t, int64_t i) {
  const unsigned char* bytes = (const unsigned char*)t->host + (size_t)i * t->element_bytes;
  for (size_t b = 0; b < t->element_bytes; ++b)
    if (bytes[b] != POISON_BYTE) return 0;
  return 1;
}
