/*
 * common.h — what every part of the flashc tool shares: its exit codes and its error
 * message. A failure is recorded once, where it happens (tool_fail for the tool's own
 * failures such as a failed allocation, tool_library_fail for a flashc call that returned
 * an error, which keeps the status name and flashc_last_error()), travels up as a
 * flashc_status, and the command prints it once with tool_print_error.
 */
#ifndef FLASHC_TOOL_COMMON_H
#define FLASHC_TOOL_COMMON_H

#include <stddef.h>
#include <stdio.h>

#include "flashc.h"

/* Exit statuses of every subcommand (documented in `flashc --help`). */
enum {
  TOOL_EXIT_OK = 0,
  TOOL_EXIT_ERROR = 1,        /* a library or runtime error */
  TOOL_EXIT_USAGE = 2,        /* an unknown option or a malformed value */
  TOOL_EXIT_CHECK_FAILED = 3, /* --check found an output outside the tolerance */
};

#if defined(__GNUC__)
#define TOOL_PRINTF_FORMAT(fmt_index, args_index) __attribute__((format(printf, fmt_index, args_index)))
#else
#define TOOL_PRINTF_FORMAT(fmt_index, args_index)
#endif

/* Records the tool's own failure ("allocating q (2.1 GB) failed") and returns status. */
flashc_status tool_fail(flashc_status status, const char* format, ...) TOOL_PRINTF_FORMAT(2, 3);

/* Records a failed flashc call: "<call>: FLASHC_STATUS_...: <flashc_last_error()>". */
flashc_status tool_library_fail(flashc_status status, const char* call);

/* The recorded message ("" when nothing failed). */
const char* tool_error_message(void);

/* Prints "<prog>: error: <message>" to stderr. */
void tool_print_error(const char* prog);

/* The library's "not supported" group (FLASHC_STATUS_NOT_SUPPORTED and its dtype,
 * head-dim and arch variants): the operation is valid but this backend cannot run it. */
int tool_status_is_not_supported(flashc_status status);

/* "0.1.0" from a FLASHC_VERSION-style code (major * 10000 + minor * 100 + patch). */
const char* tool_version_string(int code, char* text, size_t capacity);

/* Propagates a failure from the calling function. */
#define TOOL_TRY(expr)                                               \
  do {                                                               \
    flashc_status tool_try_status_ = (expr);                         \
    if (tool_try_status_ != FLASHC_STATUS_SUCCESS) return tool_try_status_; \
  } while (0)

#endif
