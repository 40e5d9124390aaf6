/*
 * attn_timeline.c — reads the Hopper attention forward's event timeline (CTA 0's consumer
 * warps, src/kernels/attn/attn_fwd_timeline.h) after one call and prints how the warpgroups'
 * turns, wgmma waits and softmaxes interleave: the mean cycles of each transition between
 * events per warpgroup, the period of a key block, and how much the warpgroups' softmaxes
 * overlap in time (the ping-pong wants them to alternate). Needs a library built with the
 * timeline (a build directory of its own):
 *
 *   cmake -S . -B build-timeline -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_FLAGS=-DFLASHC_ATTN_TIMELINE=1
 *   cmake --build build-timeline --target attn_timeline
 *   build-timeline/bench/attn_timeline [--case d,seqlen,batch,heads[,causal]] [--fp16] [--csv FILE] [--show N]
 *                                      [--raw-out FILE | --raw-in FILE]
 *
 * Default case: d128, seqlen 16384, batch 1, 16 heads, bf16. --csv writes every entry as
 * warp,cycle,event; --show N prints the first N entries of warpgroup 0's and 1's first warps
 * merged in time. --raw-out saves the timeline as read (ATTN_FWD_TIMELINE_BYTES); --raw-in
 * analyses such a file instead of running anything (no GPU needed). With a library built
 * without the timeline it says so and exits 1. bench/attn_timeline_gaps.py reads the CSV and
 * prints who waited for whom (turn gaps, issue, S and softmax durations per warpgroup).
 * The stamps cost a clock read and a store each, and the 3-consumer d64 instance spills with
 * them (24 bytes): read its intervals as approximate. It also prints when every CTA started
 * and ended (%globaltimer, up to ATTN_FWD_TIMELINE_CTAS of them) against the recorded call's
 * time: how long the grid takes to start and how ragged its tail is. A spans-only build
 * (-DFLASHC_ATTN_TIMELINE=2: no events, so CTA 0 runs as fast as the others) prints just that,
 * CTA 0 included.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "flashc.h"
#include "kernels/attn/attn_fwd_timeline.h"

#define BENCH_PROGRAM "attn_timeline"
#include "bench_util.h"

static const char* const EVENT_NAMES[ATTN_EVENT_COUNT] = {
    "?",        "tile",     "turn",     "issued",  "s_ready", "softmax", "pv_ready",
    "epilogue", "o_staged", "finished", "buffer",  "written", "fenced",  "prologue"};

typedef struct entry {
  uint64_t cycle;
  int event;
} entry;

typedef struct transition {
  double sum;
  long count;
} transition;

/* Total length of the intersection of two sorted lists of [begin, end) intervals. */
static uint64_t overlap(const uint64_t* a, int a_count, const uint64_t* b, int b_count) {
  uint64_t total = 0;
  int i = 0, j = 0;
  while (i < a_count && j < b_count) {
    const uint64_t begin = a[2 * i] > b[2 * j] ? a[2 * i] : b[2 * j];
    const uint64_t end = a[2 * i + 1] < b[2 * j + 1] ? a[2 * i + 1] : b[2 * j + 1];
    if (end > begin) total += end - begin;
    if (a[2 * i + 1] < b[2 * j + 1]) ++i;
    else ++j;
  }
  return total;
}

/* The warp's [s_ready, softmax) intervals into `out` (pairs); returns their count. */
static int softmax_intervals(const entry* e, int count, uint64_t* out) {
  int n = 0;
  for (int i = 0; i + 1 < count; ++i)
    if (e[i].event == ATTN_EVENT_S_READY && e[i + 1].event == ATTN_EVENT_SOFTMAX) {
      out[2 * n] = e[i].cycle;
      out[2 * n + 1] = e[i + 1].cycle;
      ++n;
    }
  return n;
}

static float g_call_ms = 0.0f; /* the recorded call's time (CUDA events; 0 with --raw-in) */

static int compare_u64(const void* a, const void* b) {
  const uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
  return x < y ? -1 : x > y;
}

/* The CTA area (attn_fwd_timeline.h): when the CTAs started and ended against the first start,
 * and how much of the grid's span the SMs were busy — the grid's start-up and tail. With events
 * (cta0_stamped) CTA 0 is shown apart: its stamps slow it, and the CTAs merging its stream-K
 * partials with it; a spans-only build counts it like the others. */
static void print_cta_spans(const uint64_t* raw, int cta0_stamped) {
  const uint64_t* area = raw + ATTN_FWD_TIMELINE_CTA_AREA;
  uint64_t starts[ATTN_FWD_TIMELINE_CTAS], ends[ATTN_FWD_TIMELINE_CTAS];
  int n = 0;
  double busy = 0.0;
  const int first = cta0_stamped ? 1 : 0;
  for (int c = first; c < ATTN_FWD_TIMELINE_CTAS; ++c)
    if (area[2 * c] != 0 && area[2 * c + 1] != 0) {
      starts[n] = area[2 * c], ends[n] = area[2 * c + 1], ++n;
      busy += (double)(area[2 * c + 1] - area[2 * c]);
    }
  if (n == 0 || area[0] == 0) return;
  qsort(starts, (size_t)n, sizeof(uint64_t), compare_u64);
  qsort(ends, (size_t)n, sizeof(uint64_t), compare_u64);
  const uint64_t t0 = starts[0] < area[0] ? starts[0] : area[0];
  const uint64_t span = ends[n - 1] - t0;
#define US(x) ((double)((x) - t0) * 1e-3)
  printf("\nCTAs %d..%d (%%globaltimer, us from the first start): start median %.2f max %.2f; end min %.1f p10 %.1f "
         "median %.1f p90 %.1f max %.1f (max - median %.2f %% of the span); busy %.1f %% of their span %.1f us",
         first, first + n - 1, US(starts[n / 2]), US(starts[n - 1]), US(ends[0]), US(ends[n / 10]), US(ends[n / 2]),
         US(ends[n * 9 / 10]), US(ends[n - 1]), 100.0 * (double)(ends[n - 1] - ends[n / 2]) / (double)span,
         100.0 * busy / ((double)n * (double)span), span * 1e-3);
  if (cta0_stamped) printf("; CTA 0 (stamped) ends %.1f", US(area[1]));
#undef US
  if (g_call_ms > 0.0f) printf("; the call (CUDA events) %.1f us", g_call_ms * 1e3);
  printf("\n");
}

/* One forward call (after two warm-ups) with a workspace of the queried size; the timeline
 * (the workspace's tail, as the launcher placed it) into `raw`. */
static void record_timeline(int d, int seqlen, int batch, int heads, int causal, int bf16, uint64_t* raw) {
  const size_t elements = (size_t)batch * seqlen * heads * d;
  uint16_t* host = (uint16_t*)malloc(elements * 2);
  void *q, *k, *v, *o, *workspace;
  float* lse;
  check_cuda(cudaMalloc(&q, elements * 2), "cudaMalloc q");
  check_cuda(cudaMalloc(&k, elements * 2), "cudaMalloc k");
  check_cuda(cudaMalloc(&v, elements * 2), "cudaMalloc v");
  check_cuda(cudaMalloc(&o, elements * 2), "cudaMalloc o");
  check_cuda(cudaMalloc((void**)&lse, (size_t)batch * heads * seqlen * 4), "cudaMalloc lse");
  void* inputs[3] = {q, k, v};
  for (int t = 0; t < 3; ++t) {
    fill_random(host, elements, bf16, 7u + (uint64_t)t);
    check_cuda(cudaMemcpy(inputs[t], host, elements * 2, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  free(host);

  flashc_handle_t handle;
  if (flashc_create(&handle, 0) != FLASHC_STATUS_SUCCESS) die("flashc_create", flashc_last_error());
  flashc_attn_fwd_params p;
  flashc_attn_fwd_params_init(&p);
  p.dtype = bf16 ? FLASHC_DTYPE_BF16 : FLASHC_DTYPE_FP16;
  p.batch = batch, p.seqlen_q = seqlen, p.seqlen_k = seqlen, p.heads_q = heads, p.heads_kv = heads, p.head_dim = d;
  p.q = q, p.k = k, p.v = v, p.o = o, p.lse = lse, p.causal = causal;
  size_t workspace_bytes = 0;
  if (flashc_attn_fwd_workspace_size(handle, &p, &workspace_bytes) != FLASHC_STATUS_SUCCESS)
    die("workspace size", flashc_last_error());
  if (workspace_bytes < ATTN_FWD_TIMELINE_BYTES)
    die("this libflashc records no timeline", "build it with -DCMAKE_CUDA_FLAGS=-DFLASHC_ATTN_TIMELINE=1");
  check_cuda(cudaMalloc(&workspace, workspace_bytes), "cudaMalloc workspace");
  cudaEvent_t start, stop;
  check_cuda(cudaEventCreate(&start), "cudaEventCreate");
  check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
  for (int call = 0; call < 3; ++call) { /* warm-up; the last call's timeline is read, its time taken */
    if (call == 2) check_cuda(cudaEventRecord(start, NULL), "cudaEventRecord");
    if (flashc_attn_fwd(handle, &p, workspace, workspace_bytes, NULL) != FLASHC_STATUS_SUCCESS)
      die("flashc_attn_fwd", flashc_last_error());
  }
  check_cuda(cudaEventRecord(stop, NULL), "cudaEventRecord");
  check_cuda(cudaDeviceSynchronize(), "the forward calls");
  check_cuda(cudaEventElapsedTime(&g_call_ms, start, stop), "cudaEventElapsedTime");

  /* Where the launcher put the entries: the last ATTN_FWD_TIMELINE_BYTES, rounded down to 8. */
  const uintptr_t end = (uintptr_t)workspace + workspace_bytes;
  const uint64_t* device_entries = (const uint64_t*)((end - ATTN_FWD_TIMELINE_BYTES) & ~(uintptr_t)7);
  check_cuda(cudaMemcpy(raw, device_entries, ATTN_FWD_TIMELINE_BYTES, cudaMemcpyDeviceToHost), "reading the timeline");
}

int main(int argc, char** argv) {
  int d = 128, seqlen = 16384, batch = 1, heads = 16, causal = 0, bf16 = 1, show = 0;
  const char *csv_path = NULL, *raw_out = NULL, *raw_in = NULL;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--case") && i + 1 < argc) {
      if (sscanf(argv[++i], "%d,%d,%d,%d,%d", &d, &seqlen, &batch, &heads, &causal) < 4) die("bad --case", argv[i]);
    } else if (!strcmp(argv[i], "--fp16")) bf16 = 0;
    else if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv_path = argv[++i];
    else if (!strcmp(argv[i], "--show") && i + 1 < argc) show = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--raw-out") && i + 1 < argc) raw_out = argv[++i];
    else if (!strcmp(argv[i], "--raw-in") && i + 1 < argc) raw_in = argv[++i];
    else {
      fprintf(stderr,
              "usage: %s [--case d,seqlen,batch,heads[,causal]] [--fp16] [--csv FILE] [--show N] [--raw-out FILE | "
              "--raw-in FILE]\n",
              argv[0]);
      return 2;
    }
  }

  uint64_t* raw = (uint64_t*)malloc(ATTN_FWD_TIMELINE_BYTES);
  if (raw_in) {
    FILE* file = fopen(raw_in, "rb");
    if (!file || fread(raw, 1, ATTN_FWD_TIMELINE_BYTES, file) != ATTN_FWD_TIMELINE_BYTES) die("cannot read", raw_in);
    fclose(file);
  } else {
    record_timeline(d, seqlen, batch, heads, causal, bf16, raw);
  }
  if (raw_out) {
    FILE* file = fopen(raw_out, "wb");
    if (!file || fwrite(raw, 1, ATTN_FWD_TIMELINE_BYTES, file) != ATTN_FWD_TIMELINE_BYTES) die("cannot write", raw_out);
    fclose(file);
  }

  entry* warps[ATTN_FWD_TIMELINE_WARPS];
  int counts[ATTN_FWD_TIMELINE_WARPS], warp_count = 0;
  uint64_t origin = UINT64_MAX;
  for (int w = 0; w < ATTN_FWD_TIMELINE_WARPS; ++w) {
    warps[w] = (entry*)malloc(sizeof(entry) * ATTN_FWD_TIMELINE_CAPACITY);
    counts[w] = 0;
    for (int i = 0; i < ATTN_FWD_TIMELINE_CAPACITY; ++i) {
      const uint64_t value = raw[(size_t)w * ATTN_FWD_TIMELINE_CAPACITY + i];
      if (value == 0) break;
      warps[w][i].cycle = value >> ATTN_FWD_TIMELINE_EVENT_BITS;
      warps[w][i].event = (int)(value & ((1u << ATTN_FWD_TIMELINE_EVENT_BITS) - 1));
      if (warps[w][i].event == 0 || warps[w][i].event >= ATTN_EVENT_COUNT)
        die("an entry with an unknown event", "was the timeline written by another build?");
      if (warps[w][i].cycle < origin) origin = warps[w][i].cycle;
      counts[w] = i + 1;
    }
    if (counts[w] > 0) warp_count = w + 1;
  }
  if (warp_count == 0) {
    /* No events: a spans-only build (FLASHC_ATTN_TIMELINE=2), or CTA 0 had no tile. */
    const uint64_t* area = raw + ATTN_FWD_TIMELINE_CTA_AREA;
    if (area[0] == 0) die("the timeline is empty", "was the library built with FLASHC_ATTN_TIMELINE?");
    print_cta_spans(raw, 0);
    printf("(no events: a spans-only build, -DFLASHC_ATTN_TIMELINE=2)\n");
    return 0;
  }
  print_cta_spans(raw, 1);
  const int consumers = warp_count / 4;
  printf("# attention forward timeline: d%d seqlen %d batch %d heads %d%s %s; CTA 0, %d consumer warpgroups, %d..%d "
         "entries per warp%s\n",
         d, seqlen, batch, heads, causal ? " causal" : "", bf16 ? "bf16" : "fp16", consumers, counts[0],
         counts[warp_count - 1], counts[0] == ATTN_FWD_TIMELINE_CAPACITY ? " (capacity reached: the first ones)" : "");

  if (csv_path) {
    FILE* csv = fopen(csv_path, "w");
    if (!csv) die("cannot write", csv_path);
    fprintf(csv, "warp,cycle,event\n");
    for (int w = 0; w < warp_count; ++w)
      for (int i = 0; i < counts[w]; ++i)
        fprintf(csv, "%d,%llu,%s\n", w, (unsigned long long)(warps[w][i].cycle - origin),
                EVENT_NAMES[warps[w][i].event]);
    fclose(csv);
  }

  /* Transitions between consecutive events, per warpgroup (its four warps pooled). */
  printf("\n%-22s", "cycles: from -> to");
  for (int c = 0; c < consumers; ++c) printf("   wg%d mean (count)", c);
  printf("\n");
  for (int from = 1; from < ATTN_EVENT_COUNT; ++from)
    for (int to = 1; to < ATTN_EVENT_COUNT; ++to) {
      transition t[4] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
      long total = 0;
      for (int w = 0; w < warp_count; ++w)
        for (int i = 0; i + 1 < counts[w]; ++i)
          if (warps[w][i].event == from && warps[w][i + 1].event == to) {
            t[w / 4].sum += (double)(warps[w][i + 1].cycle - warps[w][i].cycle);
            ++t[w / 4].count;
            ++total;
          }
      if (total == 0) continue;
      printf("%-10s -> %-9s", EVENT_NAMES[from], EVENT_NAMES[to]);
      for (int c = 0; c < consumers; ++c)
        printf("   %9.0f (%6ld)", t[c].count ? t[c].sum / (double)t[c].count : 0.0, t[c].count);
      printf("\n");
    }

  /* Period of a key block (turn to turn of one warp) and the softmaxes' overlap. */
  uint64_t* intervals[4];
  int interval_counts[4];
  for (int c = 0; c < consumers; ++c) {
    const entry* e = warps[4 * c];
    double period = 0;
    long periods = 0;
    int last_turn = -1;
    for (int i = 0; i < counts[4 * c]; ++i)
      if (e[i].event == ATTN_EVENT_TURN) {
        if (last_turn >= 0) period += (double)(e[i].cycle - e[last_turn].cycle), ++periods;
        last_turn = i;
      }
    intervals[c] = (uint64_t*)malloc(sizeof(uint64_t) * 2 * ATTN_FWD_TIMELINE_CAPACITY);
    interval_counts[c] = softmax_intervals(e, counts[4 * c], intervals[c]);
    uint64_t busy = 0;
    for (int i = 0; i < interval_counts[c]; ++i) busy += intervals[c][2 * i + 1] - intervals[c][2 * i];
    printf("\nwg%d warp 0: turn-to-turn %.0f cycles over %ld periods; softmax %.0f cycles per block", c,
           periods ? period / (double)periods : 0.0, periods,
           interval_counts[c] ? (double)busy / interval_counts[c] : 0.0);
  }
  printf("\n");
  for (int a = 0; a < consumers; ++a)
    for (int b = a + 1; b < consumers; ++b) {
      uint64_t busy = 0;
      for (int i = 0; i < interval_counts[a]; ++i) busy += intervals[a][2 * i + 1] - intervals[a][2 * i];
      const uint64_t shared = overlap(intervals[a], interval_counts[a], intervals[b], interval_counts[b]);
      printf("softmax overlap wg%d/wg%d: %.1f %% of wg%d's softmax time runs while wg%d's does too\n", a, b,
             busy ? 100.0 * (double)shared / (double)busy : 0.0, a, b);
    }

  if (show > 0 && consumers >= 2) { /* warp 0 of warpgroups 0 and 1, merged in time */
    printf("\n%12s  %-4s %s\n", "cycle", "wg", "event");
    int i = 0, j = 0;
    const entry *a = warps[0], *b = warps[4];
    for (int n = 0; n < show && (i < counts[0] || j < counts[4]); ++n) {
      const int take_a = j >= counts[4] || (i < counts[0] && a[i].cycle <= b[j].cycle);
      const entry* e = take_a ? &a[i++] : &b[j++];
      printf("%12llu  %-4s %s%s\n", (unsigned long long)(e->cycle - origin), take_a ? "wg0" : "wg1",
             take_a ? "" : "                    ", EVENT_NAMES[e->event]);
    }
  }
  return 0;
}
