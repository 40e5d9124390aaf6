/*
 * handle.h — what a flashc_handle holds: the backend, the device's cached properties, which
 * kernels already have their attributes set on that device, and the handle-owned workspace
 * used when a call passes workspace = NULL, workspace_bytes = 0.
 */
#ifndef FLASHC_HOST_HANDLE_H
#define FLASHC_HOST_HANDLE_H

#include <stddef.h>

#include "flashc.h"
#include "kernels/launch.h"

struct flashc_handle {
  flashc_backend backend;
  int device; /* CUDA ordinal, or FLASHC_DEVICE_CPU */
  flashc_device_info info;
  char kernels[512]; /* flashc_handle_kernels() text, built once at creation */
  fc_cuda_context cuda; /* device facts for the launchers (CUDA handles only) */
  fc_kernel_attribute_cache kernel_attributes; /* cuda.attributes points here */
  unsigned long long launch_counter;           /* cuda.launch_counter points here (fc_launch_tag) */

  /* Handle-owned workspace (host memory for the CPU, device memory for CUDA). */
  void* owned_workspace;
  size_t owned_workspace_bytes;
};

/* Checks the handle pointer (NULL_POINTER with a message). */
flashc_status fc_handle_check(const struct flashc_handle* handle);

/*
 * Resolves the workspace of a call: a caller buffer of at least `required` bytes, or
 * (workspace NULL, bytes 0) the handle's own, grown to `required` if needed. `stream`
 * orders the release of a smaller device buffer after the work already queued on it.
 */
flashc_status fc_handle_workspace(struct flashc_handle* handle, size_t required, void* workspace,
                                  size_t workspace_bytes, void* stream, void** resolved);

#endif
