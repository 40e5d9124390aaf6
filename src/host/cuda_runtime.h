/*
 * cuda_runtime.h — the few CUDA runtime calls host C code makes (device properties,
 * device memory for the handle's workspace), behind functions that compile to "no device"
 * when flashc is built without CUDA. Host code includes this, never cuda_runtime_api.h.
 */
#ifndef FLASHC_HOST_CUDA_RUNTIME_H
#define FLASHC_HOST_CUDA_RUNTIME_H

#include <stddef.h>

#include "flashc.h"

flashc_status fc_cuda_device_count(int* count);
/* Fills the CUDA fields of info for device (name, cc, SMs, memory sizes). */
flashc_status fc_cuda_device_info(int device, flashc_device_info* info);
/* Device memory on `device`, released in stream order. */
flashc_status fc_cuda_malloc(int device, size_t bytes, void** pointer);
flashc_status fc_cuda_free(int device, void* pointer, void* stream);
flashc_status fc_cuda_synchronize(int device);

#endif
