/* timing.c — CUDA-event and wall-clock timing, benchmark loops with a median, progress lines. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, fileno */

#include "timing.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#ifdef FLASHC_TOOL_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

/* A progress line appears only for phases longer than this, and is refreshed at most this often. */
#define PROGRESS_DELAY_S 1.0
#define PROGRESS_TERMINAL_REFRESH_S 0.2
#define PROGRESS_FILE_REFRESH_S 5.0

double timing_now_seconds(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

static int compare_doubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double median_of(double* values, int count) {
  qsort(values, (size_t)count, sizeof *values, compare_doubles);
  return count % 2 ? values[count / 2] : 0.5 * (values[count / 2 - 1] + values[count / 2]);
}

#ifdef FLASHC_TOOL_WITH_CUDA
static flashc_status cuda_check(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return FLASHC_STATUS_SUCCESS;
  return tool_fail(FLASHC_STATUS_CUDA_ERROR, "%s: %s", what, cudaGetErrorString(error));
}

/* Events around the call on the legacy default stream (the stream the tool passes). */
static flashc_status time_on_device(timed_call call, void* context, cudaEvent_t start, cudaEvent_t stop,
                                    double* milliseconds) {
  TOOL_TRY(cuda_check(cudaEventRecord(start, 0), "cudaEventRecord"));
  TOOL_TRY(call(context));
  TOOL_TRY(cuda_check(cudaEventRecord(stop, 0), "cudaEventRecord"));
  TOOL_TRY(cuda_check(cudaEventSynchronize(stop), "waiting for the operation"));
  TOOL_TRY(cuda_check(cudaGetLastError(), "after the operation"));
  float elapsed = 0.0f;
  TOOL_TRY(cuda_check(cudaEventElapsedTime(&elapsed, start, stop), "cudaEventElapsedTime"));
  *milliseconds = elapsed;
  return FLASHC_STATUS_SUCCESS;
}
#endif

static flashc_status time_on_host(timed_call call, void* context, double* milliseconds) {
  double start = timing_now_seconds();
  TOOL_TRY(call(context));
  *milliseconds = 1e3 * (timing_now_seconds() - start);
  return FLASHC_STATUS_SUCCESS;
}

flashc_status timing_run_once(int on_device, timed_call call, void* context, double* milliseconds) {
  if (!on_device) return time_on_host(call, context, milliseconds);
#ifdef FLASHC_TOOL_WITH_CUDA
  cudaEvent_t start = NULL, stop = NULL;
  flashc_status status = cuda_check(cudaEventCreate(&start), "cudaEventCreate");
  if (status == FLASHC_STATUS_SUCCESS) status = cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
  if (status == FLASHC_STATUS_SUCCESS) status = time_on_device(call, context, start, stop, milliseconds);
  if (start) cudaEventDestroy(start);
  if (stop) cudaEventDestroy(stop);
  return status;
#else
  return tool_fail(FLASHC_STATUS_NO_DEVICE, "this flashc tool was built without CUDA");
#endif
}

flashc_status timing_bench(int on_device, timed_call call, void* context, int warmup, int iters, size_t flush_bytes,
                           const char* label, int quiet, bench_stats* stats) {
  stats->warmup = warmup;
  stats->iters = iters;
  stats->l2_flushed = 0;
  stats->median_ms = stats->min_ms = stats->max_ms = 0.0;
  if (iters < 1) return tool_fail(FLASHC_STATUS_INVALID_VALUE, "--iters (%d) must be at least 1", iters);
  double* samples = (double*)malloc((size_t)iters * sizeof *samples);
  if (!samples) return tool_fail(FLASHC_STATUS_OUT_OF_MEMORY, "allocating %d timing samples failed", iters);

  flashc_status status = FLASHC_STATUS_SUCCESS;
  progress_line line;
  progress_begin(&line, label, quiet);
#ifdef FLASHC_TOOL_WITH_CUDA
  cudaEvent_t start = NULL, stop = NULL;
  void* flush_buffer = NULL;
  if (on_device) {
    status = cuda_check(cudaEventCreate(&start), "cudaEventCreate");
    if (status == FLASHC_STATUS_SUCCESS) status = cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
    if (status == FLASHC_STATUS_SUCCESS && flush_bytes > 0) {
      if (cudaMalloc(&flush_buffer, flush_bytes) == cudaSuccess) {
        stats->l2_flushed = 1;
      } else { /* no room for it: time without flushing, and say so in the result */
        flush_buffer = NULL;
        cudaGetLastError();
      }
    }
  }
#else
  (void)flush_bytes;
  if (on_device) status = tool_fail(FLASHC_STATUS_NO_DEVICE, "this flashc tool was built without CUDA");
#endif
  for (int i = 0; i < warmup + iters && status == FLASHC_STATUS_SUCCESS; ++i) {
    double milliseconds = 0.0;
    if (!on_device) {
      status = time_on_host(call, context, &milliseconds);
    } else {
#ifdef FLASHC_TOOL_WITH_CUDA
      if (flush_buffer) status = cuda_check(cudaMemsetAsync(flush_buffer, i & 0xff, flush_bytes, 0), "flushing L2");
      if (status == FLASHC_STATUS_SUCCESS) status = time_on_device(call, context, start, stop, &milliseconds);
#endif
    }
    if (i >= warmup) samples[i - warmup] = milliseconds;
    progress_update(&line, i + 1, warmup + iters);
  }
  progress_end(&line);
#ifdef FLASHC_TOOL_WITH_CUDA
  if (start) cudaEventDestroy(start);
  if (stop) cudaEventDestroy(stop);
  if (flush_buffer) cudaFree(flush_buffer);
#endif
  if (status == FLASHC_STATUS_SUCCESS) {
    stats->median_ms = median_of(samples, iters); /* sorts samples */
    stats->min_ms = samples[0];
    stats->max_ms = samples[iters - 1];
  }
  free(samples);
  return status;
}

/* ---- progress ---- */

void progress_begin(progress_line* line, const char* label, int quiet) {
  line->label = label;
  line->start_s = timing_now_seconds();
  line->last_print_s = line->start_s;
  line->is_terminal = isatty(fileno(stderr));
  line->printed = 0;
  line->quiet = quiet;
}

void progress_update(progress_line* line, long long done, long long total) {
  if (line->quiet) return;
  double now = timing_now_seconds();
  if (now - line->start_s < PROGRESS_DELAY_S) return;
  double refresh = line->is_terminal ? PROGRESS_TERMINAL_REFRESH_S : PROGRESS_FILE_REFRESH_S;
  if (line->printed && now - line->last_print_s < refresh && done < total) return;
  fprintf(stderr, "%s%s: %lld/%lld (%.1f s)%s", line->is_terminal ? "\r" : "", line->label, done, total,
          now - line->start_s, line->is_terminal ? "\033[K" : "\n");
  fflush(stderr);
  line->printed = 1;
  line->last_print_s = now;
}

void progress_end(progress_line* line) {
  if (line->printed && line->is_terminal) {
    fputs("\r\033[K", stderr); /* erase the line: the result is reported elsewhere */
    fflush(stderr);
  }
}

void progress_note(int quiet, const char* format, ...) {
  if (quiet) return;
  va_list args;
  va_start(args, format);
  vfprintf(stderr, format, args);
  va_end(args);
  fputc('\n', stderr);
  fflush(stderr);
}
