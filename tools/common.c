/* common.c — the tool's error message: recorded where a failure happens, printed once. */
#include "common.h"

#include <stdarg.h>

/* Room for a library message (512 bytes in the library) plus the call and status names. */
#define TOOL_ERROR_CAPACITY 1024

static char tool_error_text[TOOL_ERROR_CAPACITY];

flashc_status tool_fail(flashc_status status, const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(tool_error_text, sizeof tool_error_text, format, args);
  va_end(args);
  return status;
}

flashc_status tool_library_fail(flashc_status status, const char* call) {
  const char* detail = flashc_last_error();
  return tool_fail(status, "%s: %s: %s", call, flashc_status_name(status),
                   detail && detail[0] ? detail : flashc_status_string(status));
}

const char* tool_error_message(void) { return tool_error_text; }

void tool_print_error(const char* prog) {
  fflush(stdout); /* the report printed so far comes first when both streams go to one place */
  fprintf(stderr, "%s: error: %s\n", prog, tool_error_text[0] ? tool_error_text : "unknown failure");
}

int tool_status_is_not_supported(flashc_status status) {
  return status == FLASHC_STATUS_NOT_SUPPORTED || status == FLASHC_STATUS_NOT_SUPPORTED_DTYPE ||
         status == FLASHC_STATUS_NOT_SUPPORTED_HEAD_DIM || status == FLASHC_STATUS_NOT_SUPPORTED_ARCH;
}

const char* tool_version_string(int code, char* text, size_t capacity) {
  snprintf(text, capacity, "%d.%d.%d", code / 10000, code / 100 % 100, code % 100);
  return text;
}
