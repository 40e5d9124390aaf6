/*
 * cmd_attn.h — one attention case as `flashc attn` and `flashc demo` run it: the
 * configuration (every forward parameter the CLI exposes), and attn_run, which builds
 * the inputs, runs the forward (and the backward) through run_operation, checks the
 * outputs against the fp64 reference and benchmarks when asked.
 */
#ifndef FLASHC_TOOL_CMD_ATTN_H
#define FLASHC_TOOL_CMD_ATTN_H

#include <stdio.h>

#include "json.h"
#include "runner.h"

typedef struct attn_config {
  int batch, seqlen_q, seqlen_k;
  int heads_q, heads_kv;   /* heads_kv 0 = heads_q */
  int head_dim, head_dim_v; /* head_dim_v 0 = head_dim */
  int dtype;               /* flashc_dtype of q, k, v */
  int out_dtype;           /* flashc_dtype of o; FLASHC_DTYPE_AUTO = derived */
  int causal;
  int window[2];           /* left, right; -1 = unbounded */
  double softcap;          /* 0 = off */
  double softmax_scale;    /* 0 = 1/sqrt(head_dim) */
  int varlen;              /* random lengths (some empty) through cu_seqlens */
  int page_size;           /* paged KV cache with this page size; 0 = contiguous KV */
  int num_splits;          /* 1 = no split, 0 = automatic */
  int pack_gqa;            /* -1 automatic, 0, 1 */
  int backward, deterministic;
  int pad;                 /* extra elements at the end of every row of q/k/v/o/dout/dq/dk/dv */
} attn_config;

typedef struct attn_result {
  op_result forward, backward;
  int has_backward;
  int total_q, total_k;          /* rows of the packed q / k tensors with --varlen */
  long long visible_pairs;       /* (query, key) pairs the mask lets through, per head */
  long long all_pairs;
} attn_result;

void attn_config_default(attn_config* config);
/* Combinations the tool cannot build (a paged or fp8 backward): prints a usage error, returns -1. */
int attn_config_check(const attn_config* config, const char* prog);
/* "b2 sq512 sk512 h8/8 d128 bf16 causal" for one-line reports. */
const char* attn_config_summary(const attn_config* config, char* text, size_t capacity);

/* Runs the case on the context's backend; the failure message is recorded (tool_error_message). */
flashc_status attn_run(run_context* context, const attn_config* config, attn_result* result);
int attn_result_passed(const attn_result* result);

#endif
