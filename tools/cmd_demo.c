/*
 * cmd_demo.c — `flashc demo`: the README's first command. An attention forward + backward
 * and a GEMM, on GPU 0 if there is one (operations the GPU does not support yet run on the
 * CPU backend, with a line saying why), else on the CPU backend; each checked against the
 * fp64 reference with the DESIGN.md §6 rule. A short report; exit status 0 only if every
 * output passes. It runs the same attn_run / gemm_run as `flashc attn` and `flashc gemm`.
 */
#include <string.h>

#include "cmd_attn.h"
#include "cmd_gemm.h"
#include "commands.h"
#include "common.h"

/* Sizes that finish in a few seconds on the CPU backend with two cores, references included. */
static void demo_attn_config(attn_config* c) {
  attn_config_default(c);
  c->batch = 2;
  c->seqlen_q = c->seqlen_k = 512;
  c->heads_q = 8;
  c->head_dim = 128;
  c->causal = 1;
  c->dtype = FLASHC_DTYPE_BF16;
  c->backward = 1;
}

static void demo_gemm_config(gemm_config* c) {
  gemm_config_default(c);
  c->m = c->n = c->k = 512;
  c->dtype = FLASHC_DTYPE_BF16;
}

/* Outputs checked and outputs passed, over the operations that ran. */
static void count_outputs(const op_result* r, int* checked, int* passed) {
  for (int i = 0; i < r->output_count; ++i) {
    ++*checked;
    *passed += r->outputs[i].passed;
  }
}

static void print_op(const op_result* r, const char* shape) {
  if (!r->ran) return;
  if (r->fallback_reason[0]) printf("%s: %s; ran on the CPU backend instead\n", r->name, r->fallback_reason);
  for (int i = 0; i < r->output_count; ++i) {
    const check_report* c = &r->outputs[i];
    if (i == 0)
      printf("%-9s %-38s %-7s %10.3f ms  ", r->name, shape, r->backend, r->first_ms);
    else
      printf("%-9s %-38s %-7s %13s  ", "", "", "", "");
    printf("%-4s %10.3e %10.3e  %s\n", c->name, c->max_abs_err, c->bound, c->passed ? "PASS" : "FAIL");
  }
}

static void print_error_line(const char* what, flashc_status status, const char* message) {
  printf("%-9s error: %s (%s)\n", what, message, flashc_status_name(status));
}

int cmd_demo(int argc, char** argv, int first) {
  static const char prog[] = "flashc demo";
  run_options options;
  run_options_default(&options);
  arg_option run_table[RUN_OPTIONS_TABLE_SIZE];
  run_options_table(&options, 0, run_table);
  const arg_section sections[] = {{"Options", run_table}};
  const arg_command command = {
      prog, "flashc demo [--cpu | --device N] [--seed N] [--json]",
      "Runs an attention forward + backward (batch 2, seqlen 512, 8 heads, head dim 128, causal,\n"
      "bf16) and a 512x512x512 bf16 GEMM on GPU 0 if present (operations the GPU does not support\n"
      "yet run on the CPU backend, with a line saying why), else on the CPU backend. Every output\n"
      "is checked against the fp64 reference: max|out - ref64| <= 2*max|out_same - ref64| + atol\n"
      "(DESIGN.md §6). Exit status 0 only if every output passes (1 error, 2 usage, 3 check failed).",
      sections, 1, NULL};
  switch (args_parse(&command, argc, argv, first)) {
    case ARGS_HELP: args_print_help(&command, stdout); return TOOL_EXIT_OK;
    case ARGS_ERROR: return TOOL_EXIT_USAGE;
    case ARGS_OK: break;
  }
  if (run_options_finish(&options, prog) != 0) return TOOL_EXIT_USAGE;
  options.check = 1;

  attn_config attn;
  gemm_config gemm;
  demo_attn_config(&attn);
  demo_gemm_config(&gemm);
  attn_result attn_out;
  gemm_result gemm_out;
  memset(&attn_out, 0, sizeof attn_out);
  memset(&gemm_out, 0, sizeof gemm_out);
  char attn_error[1024] = "", gemm_error[1024] = "";
  flashc_status attn_status = FLASHC_STATUS_SUCCESS, gemm_status = FLASHC_STATUS_SUCCESS;

  run_context context;
  flashc_status status = run_context_open(&context, &options, prog, 1);
  if (status != FLASHC_STATUS_SUCCESS) {
    if (options.json) {
      json_writer w;
      json_init(&w, stdout);
      json_object_begin(&w, NULL);
      json_string(&w, "command", "demo");
      run_write_json_error(&w, status);
      json_bool(&w, "passed", 0);
      json_object_end(&w);
    }
    tool_print_error(prog);
    run_context_close(&context);
    return TOOL_EXIT_ERROR;
  }
  char backend[32];
  run_backend_label(&context.primary, backend, sizeof backend);
  if (!options.json) {
    printf("flashc demo on %s (%s)%s, seed %d\n", backend, context.primary.info.name,
           context.primary.on_device ? "" : context.device_count ? " [--cpu]" : " [no CUDA device]", options.seed);
    printf("checks: max|out - ref64| <= 2*max|out_same - ref64| + atol (DESIGN.md §6)\n\n");
    fflush(stdout);
  }
  attn_status = attn_run(&context, &attn, &attn_out);
  if (attn_status != FLASHC_STATUS_SUCCESS) snprintf(attn_error, sizeof attn_error, "%s", tool_error_message());
  gemm_status = gemm_run(&context, &gemm, &gemm_out);
  if (gemm_status != FLASHC_STATUS_SUCCESS) snprintf(gemm_error, sizeof gemm_error, "%s", tool_error_message());
  run_context_close(&context);

  int checked = 0, passed = 0;
  count_outputs(&attn_out.forward, &checked, &passed);
  count_outputs(&attn_out.backward, &checked, &passed);
  count_outputs(&gemm_out.gemm, &checked, &passed);
  int errors = (attn_status != FLASHC_STATUS_SUCCESS) + (gemm_status != FLASHC_STATUS_SUCCESS);
  int all_passed = errors == 0 && passed == checked;

  char attn_shape[96], gemm_shape[96];
  attn_config_summary(&attn, attn_shape, sizeof attn_shape);
  gemm_config_summary(&gemm, gemm_shape, sizeof gemm_shape);
  if (options.json) {
    json_writer w;
    char version[32];
    json_init(&w, stdout);
    json_object_begin(&w, NULL);
    json_string(&w, "command", "demo");
    json_string(&w, "flashc_version", tool_version_string(flashc_version(), version, sizeof version));
    json_string(&w, "backend", backend);
    json_int(&w, "seed", options.seed);
    json_object_begin(&w, "attention");
    json_string(&w, "shape", attn_shape);
    if (attn_out.forward.ran) op_result_write_json(&w, "forward", &attn_out.forward);
    if (attn_out.backward.ran) op_result_write_json(&w, "backward", &attn_out.backward);
    if (attn_status != FLASHC_STATUS_SUCCESS) {
      json_object_begin(&w, "error");
      json_string(&w, "status", flashc_status_name(attn_status));
      json_string(&w, "message", attn_error);
      json_object_end(&w);
    }
    json_object_end(&w);
    json_object_begin(&w, "gemm");
    json_string(&w, "shape", gemm_shape);
    if (gemm_out.gemm.ran) op_result_write_json(&w, "gemm", &gemm_out.gemm);
    if (gemm_status != FLASHC_STATUS_SUCCESS) {
      json_object_begin(&w, "error");
      json_string(&w, "status", flashc_status_name(gemm_status));
      json_string(&w, "message", gemm_error);
      json_object_end(&w);
    }
    json_object_end(&w);
    json_int(&w, "outputs_checked", checked);
    json_int(&w, "outputs_passed", passed);
    json_bool(&w, "passed", all_passed);
    json_object_end(&w);
  } else {
    printf("%-9s %-38s %-7s %13s  %-4s %10s %10s  %s\n", "operation", "shape", "backend", "time", "out", "max|err|",
           "bound", "result");
    print_op(&attn_out.forward, attn_shape);
    print_op(&attn_out.backward, attn_shape);
    if (attn_status != FLASHC_STATUS_SUCCESS) print_error_line("attention", attn_status, attn_error);
    print_op(&gemm_out.gemm, gemm_shape);
    if (gemm_status != FLASHC_STATUS_SUCCESS) print_error_line("gemm", gemm_status, gemm_error);
    if (all_passed) printf("\nPASS: all %d outputs within tolerance\n", checked);
    else printf("\nFAIL: %d of %d outputs within tolerance%s\n", passed, checked, errors ? ", and errors above" : "");
  }
  if (errors) return TOOL_EXIT_ERROR;
  return all_passed ? TOOL_EXIT_OK : TOOL_EXIT_CHECK_FAILED;
}
