/*
 * error.h — the thread-local error message behind flashc_last_error().
 *
 * Every failing path returns through fc_fail(), which formats the message (naming the
 * argument and the value) and returns the status, so a check reads
 *     if (p->batch <= 0) return fc_fail(FLASHC_STATUS_INVALID_VALUE, "batch (%d) must be positive", p->batch);
 */
#ifndef FLASHC_HOST_ERROR_H
#define FLASHC_HOST_ERROR_H

#include "flashc.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define FC_PRINTF_FORMAT(fmt_index, args_index) __attribute__((format(printf, fmt_index, args_index)))
#else
#define FC_PRINTF_FORMAT(fmt_index, args_index)
#endif

/* Sets this thread's message and returns status. */
flashc_status fc_fail(flashc_status status, const char* format, ...) FC_PRINTF_FORMAT(2, 3);

/* Propagates a failure: returns from the calling function if `expr` is not SUCCESS. */
#define FC_TRY(expr)                                    \
  do {                                                  \
    flashc_status fc_try_status_ = (expr);              \
    if (fc_try_status_ != FLASHC_STATUS_SUCCESS) return fc_try_status_; \
  } while (0)

#ifdef __cplusplus
}
#endif

#endif
