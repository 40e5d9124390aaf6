/*
 * timing.h — timing by DESIGN.md §7: on a GPU, CUDA events around each call after warm-up,
 * the L2 cache flushed before each timed call, the median of the timed calls; on the CPU
 * backend the same loop on the monotonic wall clock. Also the progress line printed to
 * stderr while something long runs (a benchmark loop, an fp64 reference).
 */
#ifndef FLASHC_TOOL_TIMING_H
#define FLASHC_TOOL_TIMING_H

#include <stddef.h>

#include "common.h"

/* Seconds on CLOCK_MONOTONIC. */
double timing_now_seconds(void);

/* The call being timed: one launch of an operation with everything prepared. */
typedef flashc_status (*timed_call)(void* context);

typedef struct bench_stats {
  int warmup, iters;
  double median_ms, min_ms, max_ms;
  int l2_flushed; /* the L2 cache was flushed before each timed call */
} bench_stats;

/* One call, waited for: CUDA events around it on the device, the wall clock on the CPU. */
flashc_status timing_run_once(int on_device, timed_call call, void* context, double* milliseconds);

/*
 * `warmup` untimed calls, then `iters` timed ones; the median is the result. On the device
 * a buffer of flush_bytes (twice the L2 size, say; 0 = no flush) is cleared before each
 * timed call, outside the timed interval. `label` names the loop on the progress line.
 */
flashc_status timing_bench(int on_device, timed_call call, void* context, int warmup, int iters, size_t flush_bytes,
                           const char* label, int quiet, bench_stats* stats);

/* ---- progress ---- */

/* A line on stderr that appears once a phase has run for a second: rewritten in place on
 * a terminal, a new line every few seconds when stderr is a file or a pipe. */
typedef struct progress_line {
  const char* label;
  double start_s, last_print_s;
  int is_terminal, printed, quiet;
} progress_line;

void progress_begin(progress_line* line, const char* label, int quiet);
void progress_update(progress_line* line, long long done, long long total);
void progress_end(progress_line* line);

/* A one-off note on stderr ("computing the fp64 reference (12.3 GFLOP)...") unless quiet. */
void progress_note(int quiet, const char* format, ...) TOOL_PRINTF_FORMAT(2, 3);

#endif
