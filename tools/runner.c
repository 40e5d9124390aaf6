/* runner.c — common run options, backend selection with the CPU fallback, one operation
 * run end to end (prepare, timed call, fetch, benchmark), and its report. */
#define _POSIX_C_SOURCE 200809L /* getpid */

#include "runner.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef FLASHC_TOOL_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

/* Benchmark defaults: GPU calls take micro- to milliseconds, CPU calls up to seconds. */
#define GPU_DEFAULT_WARMUP 5
#define GPU_DEFAULT_ITERS 30
#define CPU_DEFAULT_WARMUP 1
#define CPU_DEFAULT_ITERS 3
/* The buffer cleared between timed GPU calls is this many times the L2 size. */
#define L2_FLUSH_FACTOR 2

/* ---- options ---- */

void run_options_default(run_options* options) {
  memset(options, 0, sizeof *options);
  options->warmup = -1;
  options->iters = -1;
}

void run_options_table(run_options* o, int measurement, arg_option table[RUN_OPTIONS_TABLE_SIZE]) {
  const arg_option entries[RUN_OPTIONS_TABLE_SIZE] = {
      {.name = "cpu", .kind = ARG_FLAG, .value = &o->cpu, .help = "run on the CPU backend (default: GPU 0 if present)"},
      {.name = "device", .kind = ARG_INT, .value = &o->device, .metavar = "N", .range = ARG_NON_NEGATIVE,
       .seen = &o->device_given, .help = "run on CUDA device N", .default_text = "0 if a GPU is present"},
      {.name = "seed", .kind = ARG_INT, .value = &o->seed, .metavar = "N", .range = ARG_NON_NEGATIVE,
       .seen = &o->seed_given, .help = "seed of the random inputs", .default_text = "fresh, printed"},
      {.name = "check", .kind = ARG_FLAG, .value = &o->check,
       .help = "compare every output with the fp64 reference (DESIGN.md §6 rule)"},
      {.name = "bench", .kind = ARG_FLAG, .value = &o->bench,
       .help = "time --iters calls after --warmup calls: median, TFLOP/s"},
      {.name = "warmup", .kind = ARG_INT, .value = &o->warmup, .metavar = "N", .range = ARG_NON_NEGATIVE,
       .help = "untimed calls before timing",
       .default_text = "5 on a GPU, 1 on the CPU"},
      {.name = "iters", .kind = ARG_INT, .value = &o->iters, .metavar = "N", .range = ARG_POSITIVE,
       .help = "timed calls (the median is reported)", .default_text = "30 on a GPU, 3 on the CPU"},
      {.name = "json", .kind = ARG_FLAG, .value = &o->json,
       .help = "print one JSON object with the parameters and results"},
      {.name = "quiet", .kind = ARG_FLAG, .value = &o->quiet, .help = "no progress lines on stderr"},
      {.name = NULL},
  };
  int count = 0;
  for (int i = 0; i < RUN_OPTIONS_TABLE_SIZE; ++i) {
    const arg_option* entry = &entries[i];
    int is_measurement = entry->value == &o->check || entry->value == &o->bench || entry->value == &o->warmup ||
                         entry->value == &o->iters;
    if (entry->name && is_measurement && !measurement) continue;
    table[count++] = *entry;
  }
  while (count < RUN_OPTIONS_TABLE_SIZE) memset(&table[count++], 0, sizeof table[0]);
}

int run_options_finish(run_options* options, const char* prog) {
  if (options->cpu && options->device_given) {
    fprintf(stderr, "%s: --cpu and --device select different backends; give one (see %s --help)\n", prog, prog);
    return -1;
  }
  if (!options->seed_given) { /* DESIGN.md §6: fresh inputs each run; the seed is printed to repeat it */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    unsigned long long mix = (unsigned long long)now.tv_nsec * 2654435761ull ^ (unsigned long long)now.tv_sec ^
                             ((unsigned long long)getpid() << 16);
    options->seed = (int)(mix % 1000000000ull);
  }
  return 0;
}

/* ---- backends ---- */

const char* run_backend_label(const run_backend* backend, char* text, size_t capacity) {
  if (backend->on_device) snprintf(text, capacity, "cuda:%d", backend->device);
  else snprintf(text, capacity, "cpu");
  return text;
}

static flashc_status backend_open(run_backend* backend, int device) {
  memset(backend, 0, sizeof *backend);
  backend->device = device;
  backend->on_device = device != FLASHC_DEVICE_CPU;
  flashc_status status = flashc_create(&backend->handle, device);
  if (status != FLASHC_STATUS_SUCCESS) {
    backend->handle = NULL;
    return tool_library_fail(status, "flashc_create");
  }
#ifndef FLASHC_TOOL_WITH_CUDA
  if (backend->on_device) /* a CUDA library with a tool built without CUDA: a build mix-up */
    return tool_fail(FLASHC_STATUS_NO_DEVICE, "device %d: this flashc tool was built without CUDA", device);
#endif
  flashc_device_info_init(&backend->info);
  status = flashc_get_device_info(backend->handle, &backend->info);
  if (status != FLASHC_STATUS_SUCCESS) return tool_library_fail(status, "flashc_get_device_info");
#ifdef FLASHC_TOOL_WITH_CUDA
  if (backend->on_device) { /* the tool's cudaMalloc and events go to the handle's device */
    cudaError_t error = cudaSetDevice(device);
    if (error != cudaSuccess)
      return tool_fail(FLASHC_STATUS_CUDA_ERROR, "cudaSetDevice(%d): %s", device, cudaGetErrorString(error));
  }
#endif
  return FLASHC_STATUS_SUCCESS;
}

static void backend_close(run_backend* backend) {
  if (backend->handle) flashc_destroy(backend->handle);
  backend->handle = NULL;
}

flashc_status run_context_open(run_context* context, const run_options* options, const char* prog,
                               int allow_fallback) {
  memset(context, 0, sizeof *context);
  context->options = *options;
  context->prog = prog;
  context->allow_fallback = allow_fallback;
  if (flashc_get_device_count(&context->device_count) != FLASHC_STATUS_SUCCESS) context->device_count = 0;
  int device = FLASHC_DEVICE_CPU;
  if (options->device_given) device = options->device;
  else if (!options->cpu && context->device_count > 0) device = 0;
  return backend_open(&context->primary, device);
}

void run_context_close(run_context* context) {
  backend_close(&context->cpu);
  backend_close(&context->primary);
}

static flashc_status run_context_cpu(run_context* context, run_backend** cpu) {
  if (!context->primary.on_device) {
    *cpu = &context->primary;
    return FLASHC_STATUS_SUCCESS;
  }
  if (!context->cpu.handle) TOOL_TRY(backend_open(&context->cpu, FLASHC_DEVICE_CPU));
  *cpu = &context->cpu;
  return FLASHC_STATUS_SUCCESS;
}

/* ---- one operation ---- */

static flashc_status prepare_and_run_once(const run_op* op, run_backend* backend, double* milliseconds) {
  TOOL_TRY(op->prepare(op->self, backend));
  return timing_run_once(backend->on_device, op->launch, op->self, milliseconds);
}

flashc_status run_operation(run_context* context, const run_op* op, op_result* result) {
  const run_options* options = &context->options;
  run_backend* backend = &context->primary;
  snprintf(result->name, sizeof result->name, "%s", op->name);
  result->fallback_reason[0] = '\0';

  flashc_status status = prepare_and_run_once(op, backend, &result->first_ms);
  if (tool_status_is_not_supported(status) && backend->on_device && context->allow_fallback) {
    char label[32];
    snprintf(result->fallback_reason, sizeof result->fallback_reason, "not supported on %s: %s",
             run_backend_label(backend, label, sizeof label), tool_error_message());
    TOOL_TRY(run_context_cpu(context, &backend));
    status = prepare_and_run_once(op, backend, &result->first_ms);
  }
  if (status == FLASHC_STATUS_SUCCESS) status = op->finish(op->self);
  if (status != FLASHC_STATUS_SUCCESS) return status;

  result->ran = 1;
  result->on_device = backend->on_device;
  result->device = backend->device;
  run_backend_label(backend, result->backend, sizeof result->backend);
  snprintf(result->device_name, sizeof result->device_name, "%s", backend->info.name);

  if (options->bench) {
    int warmup = options->warmup >= 0 ? options->warmup : backend->on_device ? GPU_DEFAULT_WARMUP : CPU_DEFAULT_WARMUP;
    int iters = options->iters >= 1 ? options->iters : backend->on_device ? GPU_DEFAULT_ITERS : CPU_DEFAULT_ITERS;
    size_t flush_bytes = backend->on_device ? L2_FLUSH_FACTOR * backend->info.l2_cache_bytes : 0;
    char label[96];
    snprintf(label, sizeof label, "%s: bench %s on %s", context->prog, op->name, result->backend);
    TOOL_TRY(timing_bench(backend->on_device, op->launch, op->self, warmup, iters, flush_bytes, label,
                          options->quiet, &result->bench));
    result->benched = 1;
  }
  return FLASHC_STATUS_SUCCESS;
}

int op_result_passed(const op_result* result) {
  for (int i = 0; i < result->output_count; ++i)
    if (!result->outputs[i].passed) return 0;
  return 1;
}

/* ---- reports ---- */

static double tflops(double flops, double milliseconds) {
  return milliseconds > 0.0 ? flops / (milliseconds * 1e-3) / 1e12 : 0.0;
}

/* "650.3 TFLOP/s", or "4.76 GFLOP/s" below one TFLOP/s (the CPU backend). */
static const char* format_rate(double flops, double milliseconds, char* text, size_t capacity) {
  double rate = tflops(flops, milliseconds);
  if (rate >= 1.0) snprintf(text, capacity, "%.1f TFLOP/s", rate);
  else snprintf(text, capacity, "%.3g GFLOP/s", rate * 1e3);
  return text;
}

void op_result_print(FILE* out, const op_result* r) {
  char rate[48];
  fprintf(out, "%s on %s (%s)\n", r->name, r->backend, r->device_name);
  if (r->fallback_reason[0]) fprintf(out, "  note: %s; ran on the CPU backend instead\n", r->fallback_reason);
  int masked = r->flops_convention != r->flops;
  fprintf(out, "  FLOPs        %.4g GFLOP%s\n", r->flops / 1e9,
          masked ? " (counted over the visible query-key pairs)" : "");
  fprintf(out, "  first call   %.3f ms  (%s, includes start-up)\n", r->first_ms,
          format_rate(r->flops, r->first_ms, rate, sizeof rate));
  if (r->benched) {
    fprintf(out, "  bench        median %.4f ms (min %.4f, max %.4f) over %d calls after %d warm-up%s\n",
            r->bench.median_ms, r->bench.min_ms, r->bench.max_ms, r->bench.iters, r->bench.warmup,
            r->bench.l2_flushed ? ", L2 flushed" : "");
    fprintf(out, "               %s", format_rate(r->flops, r->bench.median_ms, rate, sizeof rate));
    if (masked)
      fprintf(out, " (%s by the DESIGN.md §7 convention, causal = half)",
              format_rate(r->flops_convention, r->bench.median_ms, rate, sizeof rate));
    fputc('\n', out);
  }
  if (r->checked) {
    fprintf(out, "  check        max|out - ref64| <= 2*max|out_same - ref64| + atol (DESIGN.md §6)\n");
    check_print_table(out, r->outputs, r->output_count, "    ");
  }
}

void op_result_write_json(json_writer* w, const char* key, const op_result* r) {
  json_object_begin(w, key);
  json_string(w, "backend", r->backend);
  json_int(w, "device", r->device);
  json_string(w, "device_name", r->device_name);
  json_string(w, "fallback_reason", r->fallback_reason[0] ? r->fallback_reason : NULL);
  json_number(w, "flops", r->flops);
  json_number(w, "flops_convention", r->flops_convention);
  json_number(w, "first_call_ms", r->first_ms);
  if (r->benched) {
    json_object_begin(w, "bench");
    json_int(w, "warmup", r->bench.warmup);
    json_int(w, "iters", r->bench.iters);
    json_number(w, "median_ms", r->bench.median_ms);
    json_number(w, "min_ms", r->bench.min_ms);
    json_number(w, "max_ms", r->bench.max_ms);
    json_bool(w, "l2_flushed", r->bench.l2_flushed);
    json_number(w, "tflops", tflops(r->flops, r->bench.median_ms));
    json_number(w, "tflops_convention", tflops(r->flops_convention, r->bench.median_ms));
    json_object_end(w);
  } else {
    json_null(w, "bench");
  }
  if (r->checked) {
    json_object_begin(w, "check");
    json_bool(w, "passed", op_result_passed(r));
    json_array_begin(w, "outputs");
    for (int i = 0; i < r->output_count; ++i) check_write_json(w, &r->outputs[i]);
    json_array_end(w);
    json_object_end(w);
  } else {
    json_null(w, "check");
  }
  json_object_end(w);
}

void run_write_json_error(json_writer* w, flashc_status status) {
  json_object_begin(w, "error");
  json_string(w, "status", flashc_status_name(status));
  json_string(w, "message", tool_error_message());
  json_object_end(w);
}
