/*
 * runner.h — what `flashc attn`, `flashc gemm` and `flashc demo` share around one
 * operation: the common options (--cpu --device --seed --check --bench --warmup --iters
 * --json --quiet), the backends (a handle for the GPU or the CPU, plus a CPU handle
 * opened on demand for the fallback), and run_operation, which prepares an operation
 * on a backend, runs it once (timed), falls back to the CPU backend when the GPU answers
 * "not supported" and the fallback is allowed, brings the outputs to the host, and runs
 * the benchmark loop. The per-operation details (buffers, parameter structs, the
 * reference) stay in cmd_attn.c and cmd_gemm.c behind the run_op callbacks.
 */
#ifndef FLASHC_TOOL_RUNNER_H
#define FLASHC_TOOL_RUNNER_H

#include <stdio.h>

#include "args.h"
#include "check.h"
#include "json.h"
#include "timing.h"

/* ---- options ---- */

typedef struct run_options {
  int cpu;          /* --cpu */
  int device;       /* --device N */
  int device_given;
  int seed;         /* --seed N */
  int seed_given;
  int check, bench; /* --check, --bench */
  int warmup, iters; /* -1 = the backend's default */
  int json, quiet;
} run_options;

/* Entries run_options_table writes, the terminating one included. */
#define RUN_OPTIONS_TABLE_SIZE 10

void run_options_default(run_options* options);
/* The option table of the common flags, pointing into *options. Without `measurement`
 * the table leaves out --check, --bench, --warmup and --iters (`flashc demo` always checks). */
void run_options_table(run_options* options, int measurement, arg_option table[RUN_OPTIONS_TABLE_SIZE]);
/* After parsing: --cpu and --device are exclusive (prints the usage error; returns -1), a
 * fresh seed when none was given. */
int run_options_finish(run_options* options, const char* prog);

/* ---- backends ---- */

typedef struct run_backend {
  flashc_handle_t handle;
  int on_device; /* 1: a CUDA device (pointers are device memory); 0: the CPU backend */
  int device;    /* CUDA ordinal or FLASHC_DEVICE_CPU */
  flashc_device_info info;
} run_backend;

typedef struct run_context {
  run_options options;
  const char* prog;     /* "flashc attn" */
  run_backend primary;  /* the backend the options select */
  run_backend cpu;      /* the CPU backend for fallbacks (opened on first use) */
  int allow_fallback;   /* GPU "not supported" → run on the CPU backend instead */
  int device_count;
} run_context;

/* Opens the selected backend: --cpu, --device N, or GPU 0 when there is one. */
flashc_status run_context_open(run_context* context, const run_options* options, const char* prog,
                               int allow_fallback);
void run_context_close(run_context* context);

/* "cpu" or "cuda:0". */
const char* run_backend_label(const run_backend* backend, char* text, size_t capacity);

/* ---- one operation ---- */

/* The callbacks an operation provides; `self` is its own state. */
typedef struct run_op {
  const char* name; /* "attn fwd" */
  void* self;
  /* Uploads inputs and poisons outputs on `backend`, fills the parameter struct with that
   * side's pointers, queries and allocates the workspace. May return NOT_SUPPORTED_*. */
  flashc_status (*prepare)(void* self, run_backend* backend);
  /* One call of the operation: what is timed. */
  flashc_status (*launch)(void* self);
  /* Brings the outputs to the host. */
  flashc_status (*finish)(void* self);
} run_op;

#define RUN_MAX_OUTPUTS 3

typedef struct op_result {
  char name[32];
  int ran;
  int on_device, device;
  char backend[32];              /* "cpu", "cuda:0" */
  char device_name[256];
  char fallback_reason[600];     /* why it ran on the CPU instead of the GPU; "" if it did not */
  double first_ms;               /* the first (checked) call */
  int benched;
  bench_stats bench;
  double flops;                  /* exact count (visible pairs for masked attention) */
  double flops_convention;       /* DESIGN.md §7 convention (causal halves); = flops when unmasked */
  int checked;
  int output_count;
  check_report outputs[RUN_MAX_OUTPUTS];
} op_result;

flashc_status run_operation(run_context* context, const run_op* op, op_result* result);

/* Every output checked and passed (true when nothing was checked). */
int op_result_passed(const op_result* result);

/* Human-readable report of one operation: backend, fallback, time, bench, check table. */
void op_result_print(FILE* out, const op_result* result);
/* The same as a JSON object member named `key`. */
void op_result_write_json(json_writer* w, const char* key, const op_result* result);

/* The "error" member of a --json answer for a failure (status name and message). */
void run_write_json_error(json_writer* w, flashc_status status);

#endif
