/* status.c — status names and strings from the one table in flashc.h, the thread-local
 * error message, version and build information. */
#include <stdarg.h>
#include <stdio.h>

#include "flashc.h"
#include "host/error.h"

/* 512 bytes holds any message flashc formats (an argument name, two values, a hint). */
#define FC_ERROR_MESSAGE_CAPACITY 512

static _Thread_local char fc_error_message[FC_ERROR_MESSAGE_CAPACITY];

flashc_status fc_fail(flashc_status status, const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(fc_error_message, sizeof fc_error_message, format, args);
  va_end(args);
  return status;
}

const char* flashc_last_error(void) { return fc_error_message; }

const char* flashc_status_name(flashc_status status) {
  switch (status) {
#define FC_STATUS_NAME_CASE(name, value, text) \
  case name:                                   \
    return #name;
    FLASHC_STATUS_TABLE(FC_STATUS_NAME_CASE)
#undef FC_STATUS_NAME_CASE
    default:
      return "FLASHC_STATUS_UNKNOWN";
  }
}

const char* flashc_status_string(flashc_status status) {
  switch (status) {
#define FC_STATUS_STRING_CASE(name, value, text) \
  case name:                                     \
    return text;
    FLASHC_STATUS_TABLE(FC_STATUS_STRING_CASE)
#undef FC_STATUS_STRING_CASE
    default:
      return "unknown status";
  }
}

int flashc_version(void) { return FLASHC_VERSION; }

#define FC_STRINGIFY_(x) #x
#define FC_STRINGIFY(x) FC_STRINGIFY_(x)

#ifdef FLASHC_WITH_CUDA
#define FC_BUILD_CUDA "cuda " FLASHC_CUDA_VERSION "; archs " FLASHC_CUDA_ARCHS
#else
#define FC_BUILD_CUDA "cuda no"
#endif
#ifdef FLASHC_WITH_OPENMP
#define FC_BUILD_OPENMP "openmp yes"
#else
#define FC_BUILD_OPENMP "openmp no"
#endif
#ifndef FLASHC_BUILD_TYPE
#define FLASHC_BUILD_TYPE "unknown"
#endif

const char* flashc_build_info(void) {
  return "flashc " FC_STRINGIFY(FLASHC_VERSION_MAJOR) "." FC_STRINGIFY(FLASHC_VERSION_MINOR) "." FC_STRINGIFY(
      FLASHC_VERSION_PATCH) "; " FC_BUILD_CUDA "; " FC_BUILD_OPENMP "; build " FLASHC_BUILD_TYPE;
}

const char* flashc_dtype_name(flashc_dtype dtype) {
  switch (dtype) {
    case FLASHC_DTYPE_FP32: return "fp32";
    case FLASHC_DTYPE_FP16: return "fp16";
    case FLASHC_DTYPE_BF16: return "bf16";
    case FLASHC_DTYPE_E4M3: return "e4m3";
    default: return NULL;
  }
}

size_t flashc_dtype_size(flashc_dtype dtype) {
  switch (dtype) {
    case FLASHC_DTYPE_FP32: return 4;
    case FLASHC_DTYPE_FP16:
    case FLASHC_DTYPE_BF16: return 2;
    case FLASHC_DTYPE_E4M3: return 1;
    default: return 0;
  }
}
