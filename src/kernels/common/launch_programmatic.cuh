/*
 * launch_programmatic.cuh — launching a kernel as a programmatic dependent of the work before it
 * on the stream (PDL, sm_90 and newer: cudaLaunchAttributeProgrammaticStreamSerialization).
 *
 * Why: back to back on one stream, a kernel normally starts only after its predecessor has
 * finished and its memory has been flushed, and then still pays its own launch and CTA start
 * (~2–3 µs on the H200, measured on the split-KV combine, docs/PERF.md). Launched
 * programmatically, its CTAs may become resident as soon as every CTA of the predecessor has
 * executed griddepcontrol.launch_dependents (or exited), run their prologue (barrier set-up,
 * setmaxnreg), and wait at griddepcontrol.wait until the predecessor has completed and its
 * writes are visible. What the kernel must do (the contract this header's callers keep):
 *   - every thread executes grid_dependency_wait() (ptx_misc.cuh) before its first global
 *     memory access, reads and writes alike (TMA loads and stores, atomics, workspace flags):
 *     the predecessor may still be writing the inputs or reading the outputs;
 *   - it executes grid_dependency_launch_dependents() when its successor may become resident.
 *     Our kernels do it right after the wait: a successor's CTA then takes an SM only once all
 *     of this grid's CTAs have started, so it can never hold an SM a CTA of this grid waits for.
 * Without the attribute (or before sm_90) the two instructions are no-ops and the launch is an
 * ordinary one.
 */
#ifndef FLASHC_KERNELS_COMMON_LAUNCH_PROGRAMMATIC_CUH
#define FLASHC_KERNELS_COMMON_LAUNCH_PROGRAMMATIC_CUH

#include <string.h>

#include <cuda_runtime.h>

/* Launches kernel<<<grid, block, shared_bytes, stream>>>(args...), programmatic when
 * `programmatic` (the caller passes false on GPUs older than sm_90). Returns the launch's
 * status and clears it from the runtime's last error, as `<<<>>>; return cudaGetLastError();`
 * did. */
template <typename... Params, typename... Args>
static cudaError_t launch_programmatic(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes,
                                       cudaStream_t stream, bool programmatic, const Args&... args) {
  cudaLaunchConfig_t config;
  memset(&config, 0, sizeof config);
  cudaLaunchAttribute attribute;
  memset(&attribute, 0, sizeof attribute);
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = programmatic ? 1 : 0;
  const cudaError_t error = cudaLaunchKernelEx(&config, kernel, args...);
  const cudaError_t last = cudaGetLastError();
  return error != cudaSuccess ? error : last;
}

#endif
