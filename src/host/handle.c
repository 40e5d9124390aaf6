/* handle.c — handle creation for a CUDA device or the CPU backend, device information,
 * and the handle-owned workspace. */
#include "host/handle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/cpu_backend.h"
#include "host/cuda_runtime.h"
#include "host/error.h"

flashc_status fc_handle_check(const struct flashc_handle* handle) {
  if (!handle) return fc_fail(FLASHC_STATUS_NULL_POINTER, "handle is NULL (create one with flashc_create)");
  return FLASHC_STATUS_SUCCESS;
}

void flashc_device_info_init(flashc_device_info* info) {
  if (!info) return;
  memset(info, 0, sizeof *info);
  info->struct_size = sizeof *info;
}

flashc_status flashc_get_device_count(int* count) {
  if (!count) return fc_fail(FLASHC_STATUS_NULL_POINTER, "count is NULL");
  return fc_cuda_device_count(count);
}

static void fc_describe_kernels(struct flashc_handle* handle) {
  if (handle->backend == FLASHC_BACKEND_CPU) {
    snprintf(handle->kernels, sizeof handle->kernels,
             "attn_fwd: fp32/fp16/bf16/e4m3, head_dim 1-512, masks, softcap, GQA, varlen, paged, split-KV; "
             "attn_bwd: fp32/fp16/bf16; attn_combine; gemm: fp32/fp16/bf16/e4m3 inputs, all layouts (cpu backend)");
    return;
  }
  /* The Hopper kernels are built for sm_90a only; the portable ones for sm_80 and newer. */
  const int is_hopper = handle->info.cc_major == 9 && handle->info.cc_minor == 0;
  const int has_tma = handle->cuda.tensor_map_encoder.encode_tiled != NULL;
  const int is_ampere_or_newer = handle->info.cc_major >= 8;
  char attn_fwd[256] = "no CUDA kernel for this device (FLASHC_STATUS_NOT_SUPPORTED_ARCH)";
#ifdef FLASHC_WITH_CUDA
  if (is_hopper && has_tma) fc_attn_fwd_hopper_describe(attn_fwd, sizeof attn_fwd);
#endif
  snprintf(handle->kernels, sizeof handle->kernels,
           "gemm: %s%sfallback (CUDA cores, any problem); attn_fwd: %s; attn_combine: sm_80 and newer; "
           "attn_bwd: tensor cores (mma.sync), sm_80 and newer (portable, deterministic; fp16/bf16, head dims <= 256)",
           is_hopper && has_tma ? "hopper TMA+WGMMA (fp16/bf16/e4m3), " : "",
           is_ampere_or_newer ? "portable cp.async+mma.sync (fp16/bf16), " : "", attn_fwd);
}

/* The salt of a handle's launch tags (fc_launch_tag): its address and the creation time, so
 * two handles (also of two processes sharing nothing but a reused workspace) tag differently. */
static unsigned long long launch_salt(const struct flashc_handle* handle) {
  struct timespec now = {0, 0};
  timespec_get(&now, TIME_UTC);
  return (unsigned long long)(uintptr_t)handle * 0x9e3779b97f4a7c15ull ^
         ((unsigned long long)now.tv_sec * 1000000000ull + (unsigned long long)now.tv_nsec);
}

flashc_status flashc_create(flashc_handle_t* handle_out, int device) {
  if (!handle_out) return fc_fail(FLASHC_STATUS_NULL_POINTER, "handle is NULL");
  *handle_out = NULL;
  if (device < FLASHC_DEVICE_CPU)
    return fc_fail(FLASHC_STATUS_INVALID_VALUE,
                   "device (%d) must be a CUDA ordinal (>= 0) or FLASHC_DEVICE_CPU (-1)", device);
  if (device >= 0) {
    int count = 0;
    FC_TRY(fc_cuda_device_count(&count));
    if (device >= count)
      return fc_fail(FLASHC_STATUS_NO_DEVICE, "device (%d) does not exist: %d CUDA device%s visible%s", device,
                     count, count == 1 ? "" : "s",
#ifdef FLASHC_WITH_CUDA
                     ""
#else
                     " (flashc was built without CUDA)"
#endif
      );
  }

  struct flashc_handle* handle = (struct flashc_handle*)calloc(1, sizeof *handle);
  if (!handle) return fc_fail(FLASHC_STATUS_OUT_OF_MEMORY, "allocating the handle failed");
  handle->device = device;
  flashc_device_info_init(&handle->info);
  handle->info.device = device;
  if (device == FLASHC_DEVICE_CPU) {
    handle->backend = FLASHC_BACKEND_CPU;
    handle->info.backend = FLASHC_BACKEND_CPU;
    handle->info.sm_count = fc_cpu_thread_count();
    snprintf(handle->info.name, sizeof handle->info.name, "CPU (%d thread%s)", handle->info.sm_count,
             handle->info.sm_count == 1 ? "" : "s");
  } else {
    handle->backend = FLASHC_BACKEND_CUDA;
    handle->info.backend = FLASHC_BACKEND_CUDA;
    flashc_status status = fc_cuda_device_info(device, &handle->info);
    if (status != FLASHC_STATUS_SUCCESS) {
      free(handle);
      return status;
    }
    handle->cuda.device = device;
    handle->cuda.cc_major = handle->info.cc_major;
    handle->cuda.cc_minor = handle->info.cc_minor;
    handle->cuda.sm_count = handle->info.sm_count;
    handle->cuda.shared_memory_per_block_optin = handle->info.shared_memory_per_block_optin;
    handle->cuda.l2_cache_bytes = handle->info.l2_cache_bytes;
    handle->cuda.attributes = &handle->kernel_attributes; /* zeroed by calloc: nothing set yet */
    handle->cuda.launch_counter = &handle->launch_counter;
    handle->cuda.launch_salt = launch_salt(handle);
    /* Without the driver's encoder (an old driver) TMA kernels report themselves unavailable. */
    if (fc_tensor_map_encoder_init(&handle->cuda.tensor_map_encoder) != FLASHC_STATUS_SUCCESS)
      handle->cuda.tensor_map_encoder.encode_tiled = NULL;
  }
  fc_describe_kernels(handle);
  *handle_out = handle;
  return FLASHC_STATUS_SUCCESS;
}

flashc_status flashc_destroy(flashc_handle_t handle) {
  if (!handle) return FLASHC_STATUS_SUCCESS;
  flashc_status status = FLASHC_STATUS_SUCCESS;
  if (handle->backend == FLASHC_BACKEND_CUDA) {
    status = fc_cuda_synchronize(handle->device);
    if (handle->owned_workspace) {
      flashc_status free_status = fc_cuda_free(handle->device, handle->owned_workspace, NULL);
      if (status == FLASHC_STATUS_SUCCESS) status = free_status;
    }
  } else {
    free(handle->owned_workspace);
  }
  free(handle);
  return status;
}

flashc_status flashc_get_device_info(flashc_handle_t handle, flashc_device_info* info) {
  FC_TRY(fc_handle_check(handle));
  if (!info) return fc_fail(FLASHC_STATUS_NULL_POINTER, "info is NULL");
  if (info->struct_size != sizeof *info)
    return fc_fail(FLASHC_STATUS_BAD_STRUCT_SIZE, "info->struct_size (%zu) is not sizeof(flashc_device_info) (%zu)",
                   info->struct_size, sizeof *info);
  *info = handle->info;
  return FLASHC_STATUS_SUCCESS;
}

const char* flashc_handle_kernels(flashc_handle_t handle) {
  if (!handle) return "";
  return handle->kernels;
}

flashc_status fc_handle_workspace(struct flashc_handle* handle, size_t required, void* workspace,
                                  size_t workspace_bytes, void* stream, void** resolved) {
  *resolved = NULL;
  if (workspace) {
    if (workspace_bytes < required)
      return fc_fail(FLASHC_STATUS_WORKSPACE_TOO_SMALL,
                     "workspace_bytes (%zu) is smaller than the %zu bytes the workspace size query returns",
                     workspace_bytes, required);
    *resolved = workspace;
    return FLASHC_STATUS_SUCCESS;
  }
  if (workspace_bytes > 0)
    return fc_fail(FLASHC_STATUS_NULL_POINTER,
                   "workspace is NULL but workspace_bytes is %zu (pass NULL and 0 for the handle-owned workspace)",
                   workspace_bytes);
  if (required == 0) return FLASHC_STATUS_SUCCESS;
  if (handle->owned_workspace_bytes < required) {
    /* Grow geometrically so a sweep of growing problems reallocates O(log n) times. */
    size_t grown = handle->owned_workspace_bytes * 2;
    size_t new_bytes = grown > required ? grown : required;
    void* buffer = NULL;
    if (handle->backend == FLASHC_BACKEND_CUDA) {
      FC_TRY(fc_cuda_malloc(handle->device, new_bytes, &buffer));
      if (handle->owned_workspace) {
        flashc_status status = fc_cuda_free(handle->device, handle->owned_workspace, stream);
        if (status != FLASHC_STATUS_SUCCESS) {
          fc_cuda_free(handle->device, buffer, NULL);
          return status;
        }
      }
    } else {
      buffer = malloc(new_bytes);
      if (!buffer)
        return fc_fail(FLASHC_STATUS_OUT_OF_MEMORY, "allocating a %zu-byte handle workspace failed", new_bytes);
      free(handle->owned_workspace);
    }
    handle->owned_workspace = buffer;
    handle->owned_workspace_bytes = new_bytes;
  }
  *resolved = handle->owned_workspace;
  return FLASHC_STATUS_SUCCESS;
}
