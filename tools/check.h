/*
 * check.h — the tolerance rule of DESIGN.md §6 applied to one output tensor, and its report.
 *
 *   max|out − ref64| ≤ 2 · max|out_same − ref64| + atol
 *
 * ref64 is the fp64 reference (fc_ref_* with FC_REF_FP64), out_same the same-precision
 * reference (FC_REF_SAME_PRECISION), both as doubles at the output's element offsets.
 * atol is one unit in the last place of the output dtype at the largest |ref64|: the
 * references are not rounded to the output dtype, the output is, by up to half of that.
 *
 * The reference buffers start as NaN (check_reference_alloc); an element the reference
 * leaves NaN is not part of the output (padding between rows, say) and must still hold
 * the poison the tool wrote before the run. An element of the output that still holds
 * poison was not written; NaN never passes.
 */
#ifndef FLASHC_TOOL_CHECK_H
#define FLASHC_TOOL_CHECK_H

#include <stdint.h>
#include <stdio.h>

#include "buffers.h"
#include "json.h"

typedef struct check_report {
  char name[16];      /* "o", "lse", "dq", "d" */
  flashc_dtype dtype; /* of the output */
  int64_t elements;   /* elements compared (those the reference wrote) */
  int64_t unwritten;  /* output elements still holding poison */
  int64_t nonfinite;  /* NaN, or an infinity the reference does not have */
  int64_t stray;      /* elements outside the output that were overwritten */
  double max_abs_ref;
  double max_abs_err;  /* max |out − ref64| */
  double max_same_err; /* max |out_same − ref64| */
  double atol;
  double bound;        /* 2 · max_same_err + atol */
  double rel_l2;       /* ‖out − ref64‖₂ / ‖ref64‖₂ over finite elements */
  int64_t worst_index; /* element of max_abs_err, -1 if none */
  double worst_out, worst_ref;
  int passed;
} check_report;

/* A double buffer of `count` elements set to NaN ("not written by the reference"); NULL on failure. */
double* check_reference_alloc(int64_t count, const char* name);

/* Compares `out` (host copy current) with the two references. */
void check_output(const char* name, const tensor* out, const double* ref64, const double* ref_same,
                  check_report* report);

/* One ulp of `dtype` at magnitude `magnitude` (the atol of the rule). */
double check_atol(flashc_dtype dtype, double magnitude);

/* Table of reports: a header line, one row per report, a detail line per failure. */
void check_print_table(FILE* out, const check_report* reports, int count, const char* indent);
void check_write_json(json_writer* w, const check_report* report);

#endif
