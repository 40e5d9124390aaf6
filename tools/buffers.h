/*
 * buffers.h — the tool's tensors: one host buffer and, when an operation runs on a GPU, a
 * device mirror, with a record of which side holds the current contents so that inputs
 * are uploaded once and outputs downloaded once whichever backend ran the operation
 * (a GPU operation can fall back to the CPU halfway through a command).
 *
 * Also the random inputs of DESIGN.md §6 (normal values per dtype, a few large outliers,
 * never zero) from a seeded generator, and the poison (all bytes 0xFF, a NaN in every
 * dtype) written over outputs before each checked run, so an element the operation
 * did not write is recognizable.
 *
 * Device memory exists only in builds with FLASHC_TOOL_WITH_CUDA; elsewhere asking for the
 * device side fails with FLASHC_STATUS_NO_DEVICE.
 */
#ifndef FLASHC_TOOL_BUFFERS_H
#define FLASHC_TOOL_BUFFERS_H

#include <stddef.h>
#include <stdint.h>

#include "flashc.h"

/* ---- random numbers: splitmix64, reproducible from --seed ---- */

typedef struct tool_rng {
  uint64_t state;
} tool_rng;

void rng_seed(tool_rng* rng, uint64_t seed);
uint64_t rng_next(tool_rng* rng);
double rng_uniform(tool_rng* rng);            /* [0, 1) */
double rng_normal(tool_rng* rng);             /* standard normal */
int rng_int(tool_rng* rng, int low, int high); /* uniform in [low, high] */

/* ---- tensors ---- */

typedef struct tensor {
  const char* name;   /* "q", "dk", "page_table": used in messages */
  flashc_dtype dtype; /* element type of float data; FLASHC_DTYPE_AUTO for raw (int32) data */
  size_t element_bytes;
  int64_t count;      /* elements the tensor spans (padding included) */
  void* host;
  void* device;
  int host_current;   /* the host buffer holds the latest contents */
  int device_current; /* the device buffer holds the latest contents */
} tensor;

/* Host buffer of `count` elements of dtype (at least one element, so pointers are never NULL). */
flashc_status tensor_alloc(tensor* t, const char* name, flashc_dtype dtype, int64_t count);
/* Host buffer for non-float data (int32 index arrays, raw workspace bytes). */
flashc_status tensor_alloc_raw(tensor* t, const char* name, size_t element_bytes, int64_t count);
/* Frees both sides; a zeroed or already freed tensor is fine. */
void tensor_free(tensor* t);

int tensor_is_allocated(const tensor* t);
size_t tensor_bytes(const tensor* t);
/* The buffer of one side (NULL if that side was never allocated or t is unallocated). */
void* tensor_pointer(const tensor* t, int on_device);

/* Before an operation reads t on that side: allocate and upload if the side is stale. */
flashc_status tensor_prepare_input(tensor* t, int on_device);
/* Before an operation writes t on that side: allocate, poison, and mark the other side stale. */
flashc_status tensor_prepare_output(tensor* t, int on_device);
/* After an operation wrote t: bring the contents to the host if the host copy is stale. */
flashc_status tensor_fetch(tensor* t);

/* A workspace of at least `bytes` on that side (grown when too small, poisoned so an
 * operation that relies on zeroed scratch fails its check). bytes = 0 frees it: the
 * operation then gets workspace = NULL, workspace_bytes = 0. */
flashc_status tensor_reserve_workspace(tensor* t, size_t bytes, int on_device);

/* Normal values (times `scale`) with a few outliers, rounded to the dtype, never zero. */
void tensor_fill_random(tensor* t, tool_rng* rng, double scale);
/* Uniform values in [low, high) (fp32 scales and descales). */
void tensor_fill_uniform(tensor* t, tool_rng* rng, double low, double high);
/* Whether element i still holds the poison bytes. */
int tensor_element_is_poison(const tensor* t, int64_t i);

/* Bytes of the device buffers the tool allocated so far (for messages); 0 without CUDA. */
size_t tensor_device_bytes_in_use(void);

#endif
