/*
 * cpu_api.c — the API surface that is not a computation: version agreement between header
 * and library, the status table (names, strings, unknown status), dtype names and sizes,
 * the thread-local last-error message, CPU handle create/destroy and device info, kernel
 * availability, and the handle-owned workspace mode against a caller workspace.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flashc.h"
#include "oracle.h"

#define CHECK(cond, ...)                          \
  do {                                            \
    int check_ok_ = (cond) ? 1 : 0;               \
    test_case_result(check_ok_, __VA_ARGS__);     \
    if (!check_ok_) printf("  failed: %s\n", #cond); \
  } while (0)

static void test_version(void) {
  CHECK(flashc_version() == FLASHC_VERSION, "flashc_version() %d == FLASHC_VERSION %d", flashc_version(),
        FLASHC_VERSION);
  CHECK(FLASHC_VERSION == FLASHC_VERSION_MAJOR * 10000 + FLASHC_VERSION_MINOR * 100 + FLASHC_VERSION_PATCH,
        "FLASHC_VERSION combines major/minor/patch");
  const char* info = flashc_build_info();
  char expected[64];
  snprintf(expected, sizeof expected, "flashc %d.%d.%d", FLASHC_VERSION_MAJOR, FLASHC_VERSION_MINOR,
           FLASHC_VERSION_PATCH);
  CHECK(info && strstr(info, expected) != NULL, "flashc_build_info() \"%s\" names \"%s\"", info ? info : "(null)",
        expected);
}

static void test_status_table(void) {
  struct entry {
    flashc_status status;
    int value;
    const char* name;
    const char* text;
  } entries[] = {
#define ENTRY(name, value, text) {name, value, #name, text},
      FLASHC_STATUS_TABLE(ENTRY)
#undef ENTRY
  };
  int count = (int)(sizeof entries / sizeof entries[0]);
  int ok = 1;
  for (int i = 0; i < count; ++i) {
    const char* name = flashc_status_name(entries[i].status);
    const char* text = flashc_status_string(entries[i].status);
    if (!name || strcmp(name, entries[i].name) != 0) {
      printf("  status %d: name \"%s\", expected \"%s\"\n", entries[i].value, name ? name : "(null)", entries[i].name);
      ok = 0;
    }
    if (!text || !*text || strcmp(text, entries[i].text) != 0) {
      printf("  status %d: string \"%s\", expected \"%s\"\n", entries[i].value, text ? text : "(null)", entries[i].text);
      ok = 0;
    }
    if ((int)entries[i].status != entries[i].value) ok = 0;
    for (int j = 0; j < i; ++j) {
      if (entries[j].value == entries[i].value || strcmp(flashc_status_name(entries[j].status), name ? name : "") == 0) {
        printf("  statuses %s and %s share a value or name\n", entries[i].name, entries[j].name);
        ok = 0;
      }
    }
  }
  CHECK(ok, "status table: %d entries, names and strings match the table, distinct", count);
  CHECK(FLASHC_STATUS_SUCCESS == 0, "FLASHC_STATUS_SUCCESS is 0");
  const char* unknown = flashc_status_name((flashc_status)12345);
  CHECK(unknown && strcmp(unknown, "FLASHC_STATUS_UNKNOWN") == 0, "unknown status name \"%s\"",
        unknown ? unknown : "(null)");
  const char* unknown_text = flashc_status_string((flashc_status)-7);
  CHECK(unknown_text && *unknown_text, "unknown status string \"%s\" non-empty", unknown_text ? unknown_text : "(null)");
}

static void test_dtypes(void) {
  struct {
    flashc_dtype dtype;
    const char* name;
    size_t size;
  } table[] = {{FLASHC_DTYPE_FP32, "fp32", 4}, {FLASHC_DTYPE_FP16, "fp16", 2}, {FLASHC_DTYPE_BF16, "bf16", 2},
               {FLASHC_DTYPE_E4M3, "e4m3", 1}};
  for (int i = 0; i < 4; ++i) {
    const char* name = flashc_dtype_name(table[i].dtype);
    CHECK(name && strcmp(name, table[i].name) == 0 && flashc_dtype_size(table[i].dtype) == table[i].size,
          "dtype %d: name \"%s\" size %zu", (int)table[i].dtype, name ? name : "(null)",
          flashc_dtype_size(table[i].dtype));
  }
  CHECK(flashc_dtype_name((flashc_dtype)99) == NULL && flashc_dtype_size((flashc_dtype)99) == 0,
        "dtype 99: name NULL, size 0");
  CHECK(flashc_dtype_name((flashc_dtype)-1) == NULL && flashc_dtype_size((flashc_dtype)-1) == 0,
        "dtype -1: name NULL, size 0");
}

/* ---- thread-local last error ---- */

typedef struct thread_report {
  char before[512];
  char after[512];
  flashc_status status;
  int fail; /* cause a failure in this thread */
} thread_report;

static void* thread_body(void* arg) {
  thread_report* report = (thread_report*)arg;
  snprintf(report->before, sizeof report->before, "%s", flashc_last_error());
  report->status = FLASHC_STATUS_SUCCESS;
  if (report->fail) {
    flashc_handle_t handle = NULL;
    report->status = flashc_create(&handle, 1000); /* no such device */
  }
  snprintf(report->after, sizeof report->after, "%s", flashc_last_error());
  return NULL;
}

static void test_last_error_threads(void) {
  /* the main thread has not failed yet */
  CHECK(flashc_last_error() != NULL && flashc_last_error()[0] == '\0', "last_error empty before any failure: \"%s\"",
        flashc_last_error() ? flashc_last_error() : "(null)");

  /* a failure in the main thread */
  flashc_attn_fwd_params params;
  flashc_attn_fwd_params_init(&params);
  params.heads_q = 12;
  params.heads_kv = 5;
  flashc_handle_t cpu = NULL;
  flashc_status created = flashc_create(&cpu, FLASHC_DEVICE_CPU);
  CHECK(created == FLASHC_STATUS_SUCCESS && cpu != NULL, "flashc_create(CPU) %s", flashc_status_name(created));
  if (!cpu) return;
  flashc_status status = flashc_attn_fwd(cpu, NULL, NULL, 0, NULL);
  char main_message[512];
  snprintf(main_message, sizeof main_message, "%s", flashc_last_error());
  CHECK(status == FLASHC_STATUS_NULL_POINTER && main_message[0] != '\0',
        "main thread failure: %s \"%s\"", flashc_status_name(status), main_message);

  /* a fresh thread sees "" and its own failure does not leak into the main thread */
  thread_report report;
  memset(&report, 0, sizeof report);
  report.fail = 1;
  pthread_t thread;
  if (pthread_create(&thread, NULL, thread_body, &report) != 0) test_fatal("pthread_create failed");
  pthread_join(thread, NULL);
  CHECK(report.before[0] == '\0', "fresh thread: last_error empty before its first failure (\"%s\")", report.before);
  CHECK(report.status == FLASHC_STATUS_NO_DEVICE && report.after[0] != '\0' && strcmp(report.after, main_message) != 0,
        "fresh thread: its own failure %s \"%s\"", flashc_status_name(report.status), report.after);
  CHECK(strcmp(flashc_last_error(), main_message) == 0,
        "main thread's message unchanged by the other thread's failure (\"%s\")", flashc_last_error());

  /* a second thread that does not fail still sees "" although two threads failed */
  thread_report quiet;
  memset(&quiet, 0, sizeof quiet);
  if (pthread_create(&thread, NULL, thread_body, &quiet) != 0) test_fatal("pthread_create failed");
  pthread_join(thread, NULL);
  CHECK(quiet.before[0] == '\0' && quiet.after[0] == '\0', "another fresh thread: last_error \"%s\" / \"%s\"",
        quiet.before, quiet.after);

  /* the message names the argument and the value */
  flashc_attn_fwd_params_init(&params);
  params.batch = 1, params.seqlen_q = 4, params.seqlen_k = 4, params.heads_q = 12, params.heads_kv = 5,
  params.head_dim = 16;
  static uint16_t dummy[4096];
  params.q = dummy, params.k = dummy, params.v = dummy, params.o = dummy;
  status = flashc_attn_fwd(cpu, &params, NULL, 0, NULL);
  const char* message = flashc_last_error();
  CHECK(status == FLASHC_STATUS_SHAPE_MISMATCH && strstr(message, "heads_q") && strstr(message, "heads_kv") &&
            strstr(message, "12") && strstr(message, "5"),
        "heads_q 12 / heads_kv 5: %s \"%s\"", flashc_status_name(status), message);
  flashc_destroy(cpu);
}

/* ---- handles and device info ---- */

static void test_handles(void) {
  flashc_handle_t handle = NULL;
  flashc_status status = flashc_create(&handle, FLASHC_DEVICE_CPU);
  CHECK(status == FLASHC_STATUS_SUCCESS && handle, "flashc_create(FLASHC_DEVICE_CPU) %s", flashc_status_name(status));
  if (!handle) return;
  flashc_device_info info;
  memset(&info, 0x5a, sizeof info);
  flashc_device_info_init(&info);
  CHECK(info.struct_size == sizeof info, "flashc_device_info_init sets struct_size %zu", info.struct_size);
  status = flashc_get_device_info(handle, &info);
  CHECK(status == FLASHC_STATUS_SUCCESS && info.backend == FLASHC_BACKEND_CPU && info.device == FLASHC_DEVICE_CPU &&
            info.name[0] != '\0' && memchr(info.name, '\0', sizeof info.name) != NULL && info.cc_major == 0 &&
            info.cc_minor == 0 && info.sm_count >= 1,
        "CPU device info: %s backend %d device %d name \"%.64s\" cc %d.%d threads %d", flashc_status_name(status),
        (int)info.backend, info.device, info.name, info.cc_major, info.cc_minor, info.sm_count);
  const char* kernels = flashc_handle_kernels(handle);
  CHECK(kernels && kernels[0] != '\0' && strstr(kernels, "cpu") != NULL, "kernels of the CPU handle: \"%s\"",
        kernels ? kernels : "(null)");
  CHECK(flashc_destroy(handle) == FLASHC_STATUS_SUCCESS, "flashc_destroy(CPU handle)");
  CHECK(flashc_destroy(NULL) == FLASHC_STATUS_SUCCESS, "flashc_destroy(NULL) is SUCCESS");

  int count = -1;
  status = flashc_get_device_count(&count);
  CHECK(status == FLASHC_STATUS_SUCCESS && count >= 0, "flashc_get_device_count: %s, %d devices",
        flashc_status_name(status), count);
  status = flashc_get_device_count(NULL);
  CHECK(status == FLASHC_STATUS_NULL_POINTER && flashc_last_error()[0] != '\0',
        "flashc_get_device_count(NULL): %s \"%s\"", flashc_status_name(status), flashc_last_error());
  handle = (flashc_handle_t)0x1;
  status = flashc_create(&handle, count + 7);
  CHECK(status == FLASHC_STATUS_NO_DEVICE && flashc_last_error()[0] != '\0',
        "flashc_create(device %d) with %d devices: %s \"%s\"", count + 7, count, flashc_status_name(status),
        flashc_last_error());

  /* independent handles */
  flashc_handle_t a = NULL, b = NULL;
  CHECK(flashc_create(&a, FLASHC_DEVICE_CPU) == FLASHC_STATUS_SUCCESS &&
            flashc_create(&b, FLASHC_DEVICE_CPU) == FLASHC_STATUS_SUCCESS && a && b && a != b,
        "two CPU handles are distinct");
  flashc_destroy(a);
  flashc_destroy(b);
}

/* ---- handle-owned workspace ---- */

static void test_owned_workspace(uint64_t seed) {
  test_rng rng = test_rng_make(seed, 77);
  flashc_handle_t handle = NULL;
  if (flashc_create(&handle, FLASHC_DEVICE_CPU) != FLASHC_STATUS_SUCCESS) {
    test_case_fail("owned workspace: flashc_create failed");
    return;
  }
  const int batch = 2, sq = 37, sk = 301, hq = 4, hkv = 2, d = 64;
  const flashc_dtype dtypes[2] = {FLASHC_DTYPE_FP32, FLASHC_DTYPE_BF16};
  for (int t = 0; t < 2; ++t) {
    flashc_dtype dtype = dtypes[t];
    size_t es = test_dtype_size(dtype);
    int64_t nq = (int64_t)batch * sq * hq * d, nk = (int64_t)batch * sk * hkv * d;
    void* q = test_alloc((size_t)nq * es);
    void* k = test_alloc((size_t)nk * es);
    void* v = test_alloc((size_t)nk * es);
    void* o1 = test_alloc((size_t)nq * es);
    void* o2 = test_alloc((size_t)nq * es);
    void* o3 = test_alloc((size_t)nq * es);
    float* l1 = test_alloc((size_t)batch * hq * sq * 4);
    float* l2 = test_alloc((size_t)batch * hq * sq * 4);
    test_fill_random(&rng, q, nq, dtype, 1.0);
    test_fill_random(&rng, k, nk, dtype, 1.0);
    test_fill_random(&rng, v, nk, dtype, 1.0);
    flashc_attn_fwd_params p;
    flashc_attn_fwd_params_init(&p);
    p.dtype = dtype, p.out_dtype = dtype;
    p.batch = batch, p.seqlen_q = sq, p.seqlen_k = sk, p.heads_q = hq, p.heads_kv = hkv, p.head_dim = d;
    p.q = q, p.k = k, p.v = v, p.causal = 1;
    p.num_splits = 5;
    p.o = o1, p.lse = l1;
    size_t bytes = 0;
    flashc_status s0 = flashc_attn_fwd_workspace_size(handle, &p, &bytes);
    void* workspace = test_alloc(bytes);
    p.o = o1, p.lse = l1;
    flashc_status s1 = flashc_attn_fwd(handle, &p, workspace, bytes, NULL);
    p.o = o2, p.lse = l2;
    flashc_status s2 = flashc_attn_fwd(handle, &p, NULL, 0, NULL); /* handle-owned */
    p.o = o3, p.lse = NULL;
    p.num_splits = 9; /* a larger split: the handle's workspace grows */
    flashc_status s3 = flashc_attn_fwd(handle, &p, NULL, 0, NULL);
    int same_bits = memcmp(o1, o2, (size_t)nq * es) == 0 && memcmp(l1, l2, (size_t)batch * hq * sq * 4) == 0;
    double max_diff = 0.0, max_diff3 = 0.0, max_ref = 0.0;
    int nan_seen = 0;
    for (int64_t i = 0; i < nq; ++i) {
      double a = test_load(o1, i, dtype), b = test_load(o2, i, dtype), c = test_load(o3, i, dtype);
      if (isnan(a) || isnan(b) || isnan(c)) nan_seen = 1;
      if (fabs(a - b) > max_diff) max_diff = fabs(a - b);
      if (fabs(a - c) > max_diff3) max_diff3 = fabs(a - c);
      if (fabs(a) > max_ref) max_ref = fabs(a);
    }
    /* equal up to rounding: the output's rounding plus fp32 accumulation-order differences of
     * another split (2^-18 of the magnitude, as in cpu_attn_paged_split) */
    double tol = 4.0 * test_unit_roundoff(dtype) * max_ref + ldexp(1.0, -18) * max_ref;
    CHECK(s0 == FLASHC_STATUS_SUCCESS && bytes > 0 && s1 == FLASHC_STATUS_SUCCESS && s2 == FLASHC_STATUS_SUCCESS &&
              !nan_seen && max_diff <= tol,
          "%s num_splits 5: workspace %zu bytes; handle-owned == caller workspace (%s, max diff %.3e)",
          test_dtype_name(dtype), bytes, same_bits ? "bit-identical" : "not bit-identical", max_diff);
    CHECK(s3 == FLASHC_STATUS_SUCCESS && !nan_seen && max_diff3 <= tol,
          "%s num_splits 9 handle-owned (grown workspace) matches num_splits 5 (max diff %.3e)",
          test_dtype_name(dtype), max_diff3);
    if (s0 || s1 || s2 || s3) printf("  statuses %d %d %d %d: %s\n", s0, s1, s2, s3, flashc_last_error());
    test_free(workspace);
    test_free(q), test_free(k), test_free(v), test_free(o1), test_free(o2), test_free(o3), test_free(l1),
        test_free(l2);
  }
  flashc_destroy(handle);
}

int main(void) {
  uint64_t seed = test_seed();
  test_last_error_threads(); /* first: the main thread must not have failed before */
  test_version();
  test_status_table();
  test_dtypes();
  test_handles();
  test_owned_workspace(seed);
  return test_summary();
}
