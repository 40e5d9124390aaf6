/*
 * cmd_gemm.h — one GEMM case as `flashc gemm` and `flashc demo` run it: the configuration
 * (every GEMM parameter the CLI exposes) and gemm_run, which builds the operands, runs
 * D = act(alpha·A·B + beta·C + bias) through run_operation, checks D against the fp64
 * reference and benchmarks when asked.
 */
#ifndef FLASHC_TOOL_CMD_GEMM_H
#define FLASHC_TOOL_CMD_GEMM_H

#include "runner.h"

typedef struct gemm_config {
  int m, n, k, batch;
  int dtype;     /* flashc_dtype of A and B */
  int out_dtype; /* flashc_dtype of C and D; FLASHC_DTYPE_AUTO = derived */
  int layout_a, layout_b, layout_d; /* flashc_layout; layout_d is C's too */
  double alpha, beta;
  int bias;      /* add a random bias row (n elements) */
  int activation; /* flashc_activation */
  int algo;      /* FLASHC_GEMM_ALGO_* */
  int pad;       /* extra elements per leading dimension of every matrix */
} gemm_config;

typedef struct gemm_result {
  op_result gemm;
} gemm_result;

void gemm_config_default(gemm_config* config);
/* "512x512x512 bf16 row/row/row" for one-line reports. */
const char* gemm_config_summary(const gemm_config* config, char* text, size_t capacity);

flashc_status gemm_run(run_context* context, const gemm_config* config, gemm_result* result);

#endif
