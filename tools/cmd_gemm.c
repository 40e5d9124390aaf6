/*
 * cmd_gemm.c — `flashc gemm`: D = act(alpha · A·B + beta · C + bias), strided batches.
 *
 * A (m×k) and B (k×n) are random in the input dtype (e4m3 with random scale_a/scale_b),
 * C and the bias in the output dtype, each matrix in the layout its flag asks for. D is
 * poisoned, computed on the selected backend through run_operation and, with --check,
 * compared with fc_ref_gemm under the DESIGN.md §6 rule; --bench times it
 * (FLOPs = 2·m·n·k·batch).
 *
 *   flashc gemm --check
 *   flashc gemm --m 1000 --n 333 --k 77 --layout-a col --beta 0.5 --bias --act gelu --check
 *   flashc gemm --m 8192 --n 8192 --k 8192 --bench
 */
#include "cmd_gemm.h"

#include <stdlib.h>
#include <string.h>

#include "buffers.h"
#include "commands.h"
#include "common.h"
#include "cpu/reference.h"
#include "host/problem.h"
#include "host/validate.h"

/* References above this many FLOPs announce themselves on stderr. */
#define REFERENCE_NOTE_FLOPS 4e9
/* e4m3 scale factors are drawn from this range. */
#define SCALE_LOW 0.5
#define SCALE_HIGH 2.0

static const arg_choice dtype_choices[] = {
    {"fp16", FLASHC_DTYPE_FP16}, {"bf16", FLASHC_DTYPE_BF16}, {"fp32", FLASHC_DTYPE_FP32},
    {"e4m3", FLASHC_DTYPE_E4M3}, {NULL, 0}};
static const arg_choice out_dtype_choices[] = {
    {"auto", FLASHC_DTYPE_AUTO}, {"fp16", FLASHC_DTYPE_FP16}, {"bf16", FLASHC_DTYPE_BF16},
    {"fp32", FLASHC_DTYPE_FP32}, {NULL, 0}};
static const arg_choice layout_choices[] = {{"row", FLASHC_ROW_MAJOR}, {"col", FLASHC_COL_MAJOR}, {NULL, 0}};
static const arg_choice activation_choices[] = {
    {"none", FLASHC_ACTIVATION_NONE}, {"relu", FLASHC_ACTIVATION_RELU}, {"gelu", FLASHC_ACTIVATION_GELU}, {NULL, 0}};
static const arg_choice algo_choices[] = {
    {"auto", FLASHC_GEMM_ALGO_AUTO}, {"hopper", FLASHC_GEMM_ALGO_HOPPER}, {"portable", FLASHC_GEMM_ALGO_PORTABLE},
    {NULL, 0}};

void gemm_config_default(gemm_config* c) {
  memset(c, 0, sizeof *c);
  c->m = c->n = c->k = 512;
  c->batch = 1;
  c->dtype = FLASHC_DTYPE_BF16;
  c->out_dtype = FLASHC_DTYPE_AUTO;
  c->layout_a = c->layout_b = c->layout_d = FLASHC_ROW_MAJOR;
  c->alpha = 1.0;
  c->activation = FLASHC_ACTIVATION_NONE;
  c->algo = FLASHC_GEMM_ALGO_AUTO;
}

static flashc_dtype resolved_out_dtype(const gemm_config* c) {
  if (c->out_dtype != FLASHC_DTYPE_AUTO) return (flashc_dtype)c->out_dtype;
  return c->dtype == FLASHC_DTYPE_E4M3 ? FLASHC_DTYPE_BF16 : (flashc_dtype)c->dtype;
}

const char* gemm_config_summary(const gemm_config* c, char* text, size_t capacity) {
  char batch[24] = "";
  if (c->batch > 1) snprintf(batch, sizeof batch, "x%d", c->batch);
  snprintf(text, capacity, "%dx%dx%d%s %s->%s %s/%s/%s", c->m, c->n, c->k, batch,
           flashc_dtype_name((flashc_dtype)c->dtype), flashc_dtype_name(resolved_out_dtype(c)),
           args_choice_name(layout_choices, c->layout_a), args_choice_name(layout_choices, c->layout_b),
           args_choice_name(layout_choices, c->layout_d));
  return text;
}

/* ------------------------------------------------------------------------------------ */
/* The case                                                                              */
/* ------------------------------------------------------------------------------------ */

typedef struct gemm_case {
  const gemm_config* config;
  flashc_dtype out_dtype;
  tensor a, b, c, d, bias, scale_a, scale_b, workspace;
  run_backend* backend;
  flashc_gemm_params params;
} gemm_case;

/* One rows×cols matrix per batch in `layout`, its leading dimension padded by `pad`. */
typedef struct matrix_layout {
  int64_t ld;        /* leading dimension */
  int64_t span;      /* elements of one matrix (the batch stride) */
} matrix_layout;

static matrix_layout make_matrix(int layout, int64_t rows, int64_t cols, int pad) {
  matrix_layout l;
  l.ld = (layout == FLASHC_ROW_MAJOR ? cols : rows) + pad;
  l.span = (layout == FLASHC_ROW_MAJOR ? rows : cols) * l.ld;
  return l;
}

static void gemm_case_free(gemm_case* g) {
  tensor* all[] = {&g->a, &g->b, &g->c, &g->d, &g->bias, &g->scale_a, &g->scale_b, &g->workspace};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) tensor_free(all[i]);
}

static flashc_status gemm_case_setup(gemm_case* g, const gemm_config* cfg, int seed) {
  memset(g, 0, sizeof *g);
  g->config = cfg;
  g->out_dtype = resolved_out_dtype(cfg);
  tool_rng rng;
  rng_seed(&rng, (uint64_t)seed);
  const int64_t batch = cfg->batch;
  matrix_layout a = make_matrix(cfg->layout_a, cfg->m, cfg->k, cfg->pad);
  matrix_layout b = make_matrix(cfg->layout_b, cfg->k, cfg->n, cfg->pad);
  matrix_layout d = make_matrix(cfg->layout_d, cfg->m, cfg->n, cfg->pad);
  TOOL_TRY(tensor_alloc(&g->a, "a", (flashc_dtype)cfg->dtype, batch * a.span));
  TOOL_TRY(tensor_alloc(&g->b, "b", (flashc_dtype)cfg->dtype, batch * b.span));
  TOOL_TRY(tensor_alloc(&g->d, "d", g->out_dtype, batch * d.span));
  tensor_fill_random(&g->a, &rng, 1.0);
  tensor_fill_random(&g->b, &rng, 1.0);
  if (cfg->beta != 0.0) {
    TOOL_TRY(tensor_alloc(&g->c, "c", g->out_dtype, batch * d.span));
    tensor_fill_random(&g->c, &rng, 1.0);
  }
  if (cfg->bias) {
    TOOL_TRY(tensor_alloc(&g->bias, "bias", g->out_dtype, cfg->n));
    tensor_fill_random(&g->bias, &rng, 1.0);
  }
  if (cfg->dtype == FLASHC_DTYPE_E4M3) {
    TOOL_TRY(tensor_alloc(&g->scale_a, "scale_a", FLASHC_DTYPE_FP32, 1));
    TOOL_TRY(tensor_alloc(&g->scale_b, "scale_b", FLASHC_DTYPE_FP32, 1));
    tensor_fill_uniform(&g->scale_a, &rng, SCALE_LOW, SCALE_HIGH);
    tensor_fill_uniform(&g->scale_b, &rng, SCALE_LOW, SCALE_HIGH);
  }
  return FLASHC_STATUS_SUCCESS;
}

static void fill_params(gemm_case* g, int on_device, flashc_gemm_params* p) {
  const gemm_config* cfg = g->config;
  flashc_gemm_params_init(p);
  p->m = cfg->m;
  p->n = cfg->n;
  p->k = cfg->k;
  p->batch_count = cfg->batch;
  p->a_dtype = p->b_dtype = (flashc_dtype)cfg->dtype;
  p->d_dtype = (flashc_dtype)cfg->out_dtype;
  p->a_layout = (flashc_layout)cfg->layout_a;
  p->b_layout = (flashc_layout)cfg->layout_b;
  p->cd_layout = (flashc_layout)cfg->layout_d;
  p->a = tensor_pointer(&g->a, on_device);
  p->b = tensor_pointer(&g->b, on_device);
  p->c = tensor_is_allocated(&g->c) ? tensor_pointer(&g->c, on_device) : NULL;
  p->d = tensor_pointer(&g->d, on_device);
  p->bias = tensor_is_allocated(&g->bias) ? tensor_pointer(&g->bias, on_device) : NULL;
  p->activation = (flashc_activation)cfg->activation;
  matrix_layout a = make_matrix(cfg->layout_a, cfg->m, cfg->k, cfg->pad);
  matrix_layout b = make_matrix(cfg->layout_b, cfg->k, cfg->n, cfg->pad);
  matrix_layout d = make_matrix(cfg->layout_d, cfg->m, cfg->n, cfg->pad);
  if (cfg->pad) { /* 0 = packed otherwise, exercising the library's defaults */
    p->lda = a.ld;
    p->ldb = b.ld;
    p->ldc = d.ld;
    p->ldd = d.ld;
  }
  if (cfg->batch > 1) { /* 0 would broadcast one matrix to every batch */
    p->stride_a = a.span;
    p->stride_b = b.span;
    p->stride_c = d.span;
    p->stride_d = d.span;
  }
  p->alpha = (float)cfg->alpha;
  p->beta = (float)cfg->beta;
  if (cfg->dtype == FLASHC_DTYPE_E4M3) {
    p->scale_a = (const float*)tensor_pointer(&g->scale_a, on_device);
    p->scale_b = (const float*)tensor_pointer(&g->scale_b, on_device);
  }
  p->algo = cfg->algo;
}

static flashc_status gemm_prepare(void* self, run_backend* backend) {
  gemm_case* g = (gemm_case*)self;
  const int dev = backend->on_device;
  g->backend = backend;
  tensor* const inputs[] = {&g->a, &g->b, &g->c, &g->bias, &g->scale_a, &g->scale_b};
  for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; ++i) TOOL_TRY(tensor_prepare_input(inputs[i], dev));
  TOOL_TRY(tensor_prepare_output(&g->d, dev));
  fill_params(g, dev, &g->params);
  size_t bytes = 0;
  flashc_status status = flashc_gemm_workspace_size(backend->handle, &g->params, &bytes);
  if (status != FLASHC_STATUS_SUCCESS) return tool_library_fail(status, "flashc_gemm_workspace_size");
  return tensor_reserve_workspace(&g->workspace, bytes, dev);
}

static flashc_status gemm_launch(void* self) {
  gemm_case* g = (gemm_case*)self;
  int has_workspace = tensor_is_allocated(&g->workspace);
  void* workspace = has_workspace ? tensor_pointer(&g->workspace, g->backend->on_device) : NULL;
  size_t workspace_bytes = has_workspace ? tensor_bytes(&g->workspace) : 0;
  flashc_status status = flashc_gemm(g->backend->handle, &g->params, workspace, workspace_bytes, NULL);
  return status == FLASHC_STATUS_SUCCESS ? status : tool_library_fail(status, "flashc_gemm");
}

static flashc_status gemm_finish(void* self) { return tensor_fetch(&((gemm_case*)self)->d); }

static flashc_status gemm_check(gemm_case* g, op_result* result, int quiet) {
  flashc_gemm_params params;
  fc_gemm_problem problem;
  fill_params(g, 0, &params);
  flashc_status status = fc_gemm_problem_make(&params, FLASHC_BACKEND_CPU, &problem);
  if (status != FLASHC_STATUS_SUCCESS) return tool_library_fail(status, "validating the reference problem");
  double* ref64 = check_reference_alloc(g->d.count, "d");
  double* ref_same = check_reference_alloc(g->d.count, "d");
  if (!ref64 || !ref_same) status = FLASHC_STATUS_OUT_OF_MEMORY; /* message recorded */
  if (status == FLASHC_STATUS_SUCCESS) {
    if (result->flops > REFERENCE_NOTE_FLOPS)
      progress_note(quiet, "flashc gemm: computing the references on the host (fp64 and same precision)...");
    status = fc_ref_gemm(&problem, FC_REF_FP64, ref64);
    if (status == FLASHC_STATUS_SUCCESS) status = fc_ref_gemm(&problem, FC_REF_SAME_PRECISION, ref_same);
    if (status != FLASHC_STATUS_SUCCESS) status = tool_library_fail(status, "fc_ref_gemm");
  }
  if (status == FLASHC_STATUS_SUCCESS) {
    check_output("d", &g->d, ref64, ref_same, &result->outputs[0]);
    result->output_count = 1;
    result->checked = 1;
  }
  free(ref64);
  free(ref_same);
  return status;
}

static flashc_status gemm_run_case(run_context* context, gemm_case* g, gemm_result* result) {
  const gemm_config* cfg = g->config;
  run_op op = {"gemm", g, gemm_prepare, gemm_launch, gemm_finish};
  TOOL_TRY(run_operation(context, &op, &result->gemm));
  result->gemm.flops = 2.0 * cfg->m * (double)cfg->n * cfg->k * cfg->batch;
  result->gemm.flops_convention = result->gemm.flops;
  if (context->options.check) TOOL_TRY(gemm_check(g, &result->gemm, context->options.quiet));
  return FLASHC_STATUS_SUCCESS;
}

flashc_status gemm_run(run_context* context, const gemm_config* config, gemm_result* result) {
  memset(result, 0, sizeof *result);
  gemm_case g;
  flashc_status status = gemm_case_setup(&g, config, context->options.seed);
  if (status == FLASHC_STATUS_SUCCESS) status = gemm_run_case(context, &g, result);
  gemm_case_free(&g);
  return status;
}

/* ------------------------------------------------------------------------------------ */
/* The command                                                                           */
/* ------------------------------------------------------------------------------------ */

static void print_parameters(FILE* out, const gemm_config* cfg, const run_options* options) {
  fprintf(out, "flashc gemm: m %d, n %d, k %d, batch %d, %s -> %s, layouts A %s, B %s, C/D %s\n", cfg->m, cfg->n,
          cfg->k, cfg->batch, flashc_dtype_name((flashc_dtype)cfg->dtype), flashc_dtype_name(resolved_out_dtype(cfg)),
          args_choice_name(layout_choices, cfg->layout_a), args_choice_name(layout_choices, cfg->layout_b),
          args_choice_name(layout_choices, cfg->layout_d));
  fprintf(out, "  alpha %g, beta %g, bias %s, activation %s, algo %s, pad %d, seed %d\n", cfg->alpha, cfg->beta,
          cfg->bias ? "yes" : "no", args_choice_name(activation_choices, cfg->activation),
          args_choice_name(algo_choices, cfg->algo), cfg->pad, options->seed);
}

static void write_json(const gemm_config* cfg, const gemm_result* r, const run_options* options, flashc_status status) {
  json_writer w;
  char version[32];
  json_init(&w, stdout);
  json_object_begin(&w, NULL);
  json_string(&w, "command", "gemm");
  json_string(&w, "flashc_version", tool_version_string(flashc_version(), version, sizeof version));
  json_object_begin(&w, "params");
  json_int(&w, "m", cfg->m);
  json_int(&w, "n", cfg->n);
  json_int(&w, "k", cfg->k);
  json_int(&w, "batch", cfg->batch);
  json_string(&w, "dtype", flashc_dtype_name((flashc_dtype)cfg->dtype));
  json_string(&w, "out_dtype", flashc_dtype_name(resolved_out_dtype(cfg)));
  json_string(&w, "layout_a", args_choice_name(layout_choices, cfg->layout_a));
  json_string(&w, "layout_b", args_choice_name(layout_choices, cfg->layout_b));
  json_string(&w, "layout_d", args_choice_name(layout_choices, cfg->layout_d));
  json_number(&w, "alpha", cfg->alpha);
  json_number(&w, "beta", cfg->beta);
  json_bool(&w, "bias", cfg->bias);
  json_string(&w, "activation", args_choice_name(activation_choices, cfg->activation));
  json_string(&w, "algo", args_choice_name(algo_choices, cfg->algo));
  json_int(&w, "pad", cfg->pad);
  json_int(&w, "seed", options->seed);
  json_bool(&w, "check", options->check);
  json_bool(&w, "bench", options->bench);
  json_object_end(&w);
  if (r->gemm.ran) op_result_write_json(&w, "gemm", &r->gemm);
  if (status != FLASHC_STATUS_SUCCESS) run_write_json_error(&w, status);
  json_bool(&w, "passed", status == FLASHC_STATUS_SUCCESS && op_result_passed(&r->gemm));
  json_object_end(&w);
}

static const char gemm_description[] =
    "Runs D = act(alpha*A*B + beta*C + bias) (strided batches; A m x k, B k x n, C and D m x n)\n"
    "on GPU 0 if present, else on the CPU backend (without --device, on the CPU backend with a note\n"
    "when the GPU does not support it yet). Operands are random (normal values with a few\n"
    "outliers, never zero); e4m3 inputs get random scale_a/scale_b. --check compares D with the fp64\n"
    "reference: max|d - ref64| <= 2*max|d_same - ref64| + atol (DESIGN.md §6). --bench reports the\n"
    "median time and TFLOP/s with FLOPs = 2*m*n*k*batch.";

static const char gemm_epilog[] =
    "Exit status: 0 success, 1 library or runtime error, 2 usage error, 3 check failed.\n"
    "\n"
    "Examples:\n"
    "  flashc gemm --check\n"
    "  flashc gemm --m 1000 --n 333 --k 77 --layout-a col --layout-d col --beta 0.5 --bias --act gelu --check\n"
    "  flashc gemm --dtype e4m3 --out-dtype bf16 --check\n"
    "  flashc gemm --m 8192 --n 8192 --k 8192 --bench --json\n";

int cmd_gemm(int argc, char** argv, int first) {
  static const char prog[] = "flashc gemm";
  gemm_config config;
  gemm_config_default(&config);
  run_options options;
  run_options_default(&options);

  const arg_option problem_options[] = {
      {.name = "m", .kind = ARG_INT, .value = &config.m, .metavar = "M", .range = ARG_POSITIVE,
       .help = "rows of A, C, D"},
      {.name = "n", .kind = ARG_INT, .value = &config.n, .metavar = "N", .range = ARG_POSITIVE,
       .help = "columns of B, C, D"},
      {.name = "k", .kind = ARG_INT, .value = &config.k, .metavar = "K", .range = ARG_POSITIVE,
       .help = "columns of A, rows of B"},
      {.name = "batch", .kind = ARG_INT, .value = &config.batch, .metavar = "N", .range = ARG_POSITIVE,
       .help = "strided batch count"},
      {.name = "dtype", .kind = ARG_CHOICE, .value = &config.dtype, .choices = dtype_choices,
       .help = "A and B dtype (fp32: CPU only)"},
      {.name = "out-dtype", .kind = ARG_CHOICE, .value = &config.out_dtype, .choices = out_dtype_choices,
       .help = "C and D dtype (auto: the input dtype, bf16 for e4m3)"},
      {.name = "layout-a", .kind = ARG_CHOICE, .value = &config.layout_a, .choices = layout_choices,
       .help = "A row- or column-major"},
      {.name = "layout-b", .kind = ARG_CHOICE, .value = &config.layout_b, .choices = layout_choices,
       .help = "B row- or column-major"},
      {.name = "layout-d", .kind = ARG_CHOICE, .value = &config.layout_d, .choices = layout_choices,
       .help = "C and D row- or column-major"},
      {.name = "alpha", .kind = ARG_DOUBLE, .value = &config.alpha, .metavar = "X", .help = "scale of A*B"},
      {.name = "beta", .kind = ARG_DOUBLE, .value = &config.beta, .metavar = "X",
       .help = "scale of C (a random C is allocated when not 0)"},
      {.name = "bias", .kind = ARG_FLAG, .value = &config.bias, .help = "add a random bias (n elements, per column)"},
      {.name = "act", .kind = ARG_CHOICE, .value = &config.activation, .choices = activation_choices,
       .help = "activation of the epilogue (gelu: tanh approximation)"},
      {.name = "algo", .kind = ARG_CHOICE, .value = &config.algo, .choices = algo_choices,
       .help = "GPU kernel family (ignored on the CPU)"},
      {.name = "pad", .kind = ARG_INT, .value = &config.pad, .metavar = "N", .range = ARG_NON_NEGATIVE,
       .help = "extra elements per leading dimension (non-packed)"},
      {.name = NULL},
  };
  arg_option run_table[RUN_OPTIONS_TABLE_SIZE];
  run_options_table(&options, 1, run_table);
  const arg_section sections[] = {{"Problem", problem_options}, {"Run", run_table}};
  const arg_command command = {prog, "flashc gemm [options]", gemm_description, sections, 2, gemm_epilog};

  switch (args_parse(&command, argc, argv, first)) {
    case ARGS_HELP: args_print_help(&command, stdout); return TOOL_EXIT_OK;
    case ARGS_ERROR: return TOOL_EXIT_USAGE;
    case ARGS_OK: break;
  }
  if (run_options_finish(&options, prog) != 0) return TOOL_EXIT_USAGE;

  run_context context;
  gemm_result result;
  memset(&result, 0, sizeof result);
  flashc_status status = run_context_open(&context, &options, prog, !options.device_given);
  if (status == FLASHC_STATUS_SUCCESS) status = gemm_run(&context, &config, &result);
  run_context_close(&context);

  if (options.json) {
    write_json(&config, &result, &options, status);
  } else {
    print_parameters(stdout, &config, &options);
    if (result.gemm.ran) op_result_print(stdout, &result.gemm);
  }
  if (status != FLASHC_STATUS_SUCCESS) {
    tool_print_error(prog);
    return TOOL_EXIT_ERROR;
  }
  int passed = op_result_passed(&result.gemm);
  if (!options.json && options.check) printf("result: %s\n", passed ? "PASS" : "FAIL");
  return passed ? TOOL_EXIT_OK : TOOL_EXIT_CHECK_FAILED;
}
