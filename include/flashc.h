/*
 * flashc.h — the public C API of flashc: Hopper-native attention and GEMM kernels,
 * with a CPU backend that computes the same functions on any machine.
 *
 * Conventions (see docs/API.md for a tour):
 *   - Every entry point returns a flashc_status; FLASHC_STATUS_SUCCESS (0) means success.
 *     On failure flashc_last_error() returns a thread-local message naming the argument
 *     and the value that failed, and nothing has been written to any output.
 *   - The library never prints, exits or aborts.
 *   - A handle is created for one CUDA device or for the CPU backend (FLASHC_DEVICE_CPU).
 *     With a CPU handle every pointer is host memory and operations complete before the
 *     call returns; with a device handle pointers are device memory and work is queued
 *     on the stream passed to the call (a cudaStream_t, NULL = legacy default stream).
 *   - Operations take a parameter struct. Fill it with the matching *_init() function
 *     first: it sets struct_size (so the ABI can grow) and every default.
 *   - Strides are in elements (int64). The last dimension of every tensor is contiguous.
 *     A stride left at 0 by *_init means "packed": derived from the sizes as documented
 *     per field.
 *   - Scratch memory: each operation has a *_workspace_size() query. Pass a buffer of at
 *     least that size, or pass workspace = NULL with workspace_bytes = 0 to let the
 *     handle own a growing workspace (not safe to share one handle across threads or
 *     streams that run concurrently in that mode).
 *
 * This header is C99 and C++ compatible and includes only <stddef.h> and <stdint.h>.
 */
#ifndef FLASHC_H
#define FLASHC_H

#include <stddef.h>
#include <stdint.h>

#define FLASHC_VERSION_MAJOR 0
#define FLASHC_VERSION_MINOR 1
#define FLASHC_VERSION_PATCH 0
/* Combined code: major * 10000 + minor * 100 + patch. */
#define FLASHC_VERSION \
  (FLASHC_VERSION_MAJOR * 10000 + FLASHC_VERSION_MINOR * 100 + FLASHC_VERSION_PATCH)

#if defined(_WIN32) && defined(FLASHC_BUILDING_SHARED)
#define FLASHC_API __declspec(dllexport)
#elif defined(_WIN32) && !defined(FLASHC_STATIC)
#define FLASHC_API __declspec(dllimport)
#elif defined(__GNUC__)
#define FLASHC_API __attribute__((visibility("default")))
#else
#define FLASHC_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------ */
/* Status codes                                                                          */
/* ------------------------------------------------------------------------------------ */

/*
 * One table: X(name, value, description). Codes are grouped by tens:
 *   1x invalid arguments, 2x not supported, 3x resources, 4x device/runtime, 5x internal.
 */
#define FLASHC_STATUS_TABLE(X)                                                              \
  X(FLASHC_STATUS_SUCCESS, 0, "success")                                                    \
  X(FLASHC_STATUS_INVALID_VALUE, 10, "an argument has an invalid value")                    \
  X(FLASHC_STATUS_NULL_POINTER, 11, "a required pointer is NULL")                           \
  X(FLASHC_STATUS_MISALIGNED, 12, "a pointer or stride is not aligned as required")         \
  X(FLASHC_STATUS_BAD_LAYOUT, 13, "tensor strides are negative, overlap or break the contiguous last dimension") \
  X(FLASHC_STATUS_SHAPE_MISMATCH, 14, "sizes of the arguments are inconsistent")            \
  X(FLASHC_STATUS_BAD_STRUCT_SIZE, 15, "parameter struct has an unknown struct_size (call the *_init function)") \
  X(FLASHC_STATUS_NOT_SUPPORTED_DTYPE, 20, "data type not supported for this operation")   \
  X(FLASHC_STATUS_NOT_SUPPORTED_HEAD_DIM, 21, "head dimension not supported by this backend") \
  X(FLASHC_STATUS_NOT_SUPPORTED_ARCH, 22, "operation not supported on this GPU architecture") \
  X(FLASHC_STATUS_NOT_SUPPORTED, 23, "feature or combination of features not supported by this backend") \
  X(FLASHC_STATUS_WORKSPACE_TOO_SMALL, 30, "workspace is smaller than the size query returned") \
  X(FLASHC_STATUS_OUT_OF_MEMORY, 31, "memory allocation failed")                            \
  X(FLASHC_STATUS_NO_DEVICE, 40, "no CUDA device, or the device index is out of range")     \
  X(FLASHC_STATUS_CUDA_ERROR, 41, "a CUDA runtime or driver call failed")                   \
  X(FLASHC_STATUS_INTERNAL_ERROR, 50, "internal error (a bug in flashc)")

typedef enum flashc_status {
#define FLASHC_STATUS_ENUM_ENTRY(name, value, text) name = value,
  FLASHC_STATUS_TABLE(FLASHC_STATUS_ENUM_ENTRY)
#undef FLASHC_STATUS_ENUM_ENTRY
  FLASHC_STATUS_FORCE_INT = 0x7fffffff
} flashc_status;

/* "FLASHC_STATUS_NULL_POINTER"; "FLASHC_STATUS_UNKNOWN" for a value not in the table. */
FLASHC_API const char* flashc_status_name(flashc_status status);
/* The description column of the table ("a required pointer is NULL"). */
FLASHC_API const char* flashc_status_string(flashc_status status);
/*
 * The message of the last failing call on this thread, naming the argument and value,
 * e.g. "heads_q (12) is not a multiple of heads_kv (5)". "" if no call has failed.
 * The pointer stays valid until the next flashc call on this thread.
 */
FLASHC_API const char* flashc_last_error(void);

/* Runtime version: FLASHC_VERSION of the library that was linked. */
FLASHC_API int flashc_version(void);
/* Build configuration: "flashc 0.1.0; cuda 13.0; archs sm_90a; openmp yes; ...". */
FLASHC_API const char* flashc_build_info(void);

/* ------------------------------------------------------------------------------------ */
/* Data types and handles                                                                */
/* ------------------------------------------------------------------------------------ */

typedef enum flashc_dtype {
  FLASHC_DTYPE_AUTO = -1, /* only in output-dtype fields that say so: derived from the inputs */
  FLASHC_DTYPE_FP32 = 0,
  FLASHC_DTYPE_FP16 = 1,
  FLASHC_DTYPE_BF16 = 2,
  FLASHC_DTYPE_E4M3 = 3, /* float8 e4m3fn (OCP FP8: no infinities, max 448) */
  FLASHC_DTYPE_FORCE_INT = 0x7fffffff
} flashc_dtype;

/* "fp32", "fp16", "bf16", "e4m3"; NULL for FLASHC_DTYPE_AUTO or a value that is not a dtype. */
FLASHC_API const char* flashc_dtype_name(flashc_dtype dtype);
/* Bytes per element, 0 for a value that is not a dtype. */
FLASHC_API size_t flashc_dtype_size(flashc_dtype dtype);

typedef struct flashc_handle* flashc_handle_t;

/* Pass as the device of flashc_create to get the CPU backend. */
#define FLASHC_DEVICE_CPU (-1)

/*
 * Creates a handle for CUDA device `device` (0, 1, ...) or for the CPU backend.
 * A device handle caches the device's properties and owns small internal buffers.
 * Returns FLASHC_STATUS_NO_DEVICE if there is no such device (or the library was
 * built without CUDA).
 */
FLASHC_API flashc_status flashc_create(flashc_handle_t* handle, int device);
/* Frees the handle and what it owns. NULL is accepted. Synchronizes the device first. */
FLASHC_API flashc_status flashc_destroy(flashc_handle_t handle);

typedef enum flashc_backend {
  FLASHC_BACKEND_CPU = 0,
  FLASHC_BACKEND_CUDA = 1,
  FLASHC_BACKEND_FORCE_INT = 0x7fffffff
} flashc_backend;

typedef struct flashc_device_info {
  size_t struct_size;      /* set by flashc_device_info_init */
  flashc_backend backend;
  int device;              /* CUDA ordinal, or FLASHC_DEVICE_CPU */
  char name[256];          /* "NVIDIA H200" or "CPU (16 threads)" */
  int cc_major, cc_minor;  /* compute capability, 0 for the CPU */
  int sm_count;            /* multiprocessors, or OpenMP threads on the CPU */
  size_t global_memory_bytes;
  size_t shared_memory_per_block_optin;
  size_t l2_cache_bytes;
} flashc_device_info;

FLASHC_API void flashc_device_info_init(flashc_device_info* info);
FLASHC_API flashc_status flashc_get_device_info(flashc_handle_t handle, flashc_device_info* info);
/* Number of CUDA devices visible (0 without a GPU or without CUDA support). */
FLASHC_API flashc_status flashc_get_device_count(int* count);

/*
 * Kernel availability: what this build and this handle's device can run, as a
 * human-readable list ("attn_fwd: cpu; gemm: cpu"). Useful to tell what a GPU build has.
 */
FLASHC_API const char* flashc_handle_kernels(flashc_handle_t handle);

/* ------------------------------------------------------------------------------------ */
/* Attention forward                                                                     */
/* ------------------------------------------------------------------------------------ */

/*
 * O = softmax(mask(softcap(scale · Q·Kᵀ))) · V per (batch, query head), FlashAttention-3
 * conventions:
 *   q: (batch, seqlen_q, heads_q, head_dim)       k: (batch, seqlen_k, heads_kv, head_dim)
 *   v: (batch, seqlen_k, heads_kv, head_dim_v)    o: (batch, seqlen_q, heads_q, head_dim_v)
 *   lse (optional): (batch, heads_q, seqlen_q) fp32, natural log of the softmax denominator.
 * Query head h uses KV head h / (heads_q / heads_kv) (GQA/MQA).
 *
 * Masks are aligned to the bottom-right corner: query i sees key j when
 *   j >= i + seqlen_k - seqlen_q - window_left   (if window_left  >= 0)
 *   j <= i + seqlen_k - seqlen_q + window_right  (if window_right >= 0)
 * causal = 1 is the window (-1, 0). A row with no visible key gets O = 0, LSE = -inf.
 * softcap > 0 replaces each score s by softcap · tanh(s / softcap) before the softmax.
 *
 * Variable length (cu_seqlens_q != NULL or cu_seqlens_k != NULL): the tensor has no batch
 * dimension; q is (total_q, heads_q, head_dim) and sequence b holds rows
 * [cu_seqlens_q[b], cu_seqlens_q[b+1]) (int32, batch+1 entries, non-decreasing, starting
 * at 0, ending at total_q). Likewise k/v with cu_seqlens_k and total_k. With varlen,
 * seqlen_q / seqlen_k are the maximum sequence lengths (FA3's max_seqlen_q/k) and the
 * batch strides are ignored; lse is (heads_q, total_q).
 * seqused_q / seqused_k (int32[batch], optional) limit the rows used per sequence: query
 * rows at or beyond seqused_q[b] are not written; keys beyond seqused_k[b] are ignored.
 *
 * Paged KV (page_table != NULL): k and v are caches of shape (num_pages, page_size,
 * heads_kv, d) with k_batch_stride / v_batch_stride the stride between pages;
 * key j of sequence b lives in page page_table[b * page_table_batch_stride + j / page_size]
 * at row j % page_size. The sequence's KV length is cache_seqlens[b] (or seqused_k[b]; at
 * most one of the two may be given) or else seqlen_k.
 *
 * Split-KV (num_splits > 1): the keys of each row are processed in num_splits chunks
 * whose partial outputs are merged by the combine step (see flashc_attn_combine); the
 * result equals the unsplit one up to rounding. num_splits = 0 lets flashc choose. The
 * partials live in the workspace: on a GPU num_splits × batch × seqlen_q × heads_q ×
 * (head_dim_v + 1) fp32 values (flashc_attn_fwd_workspace_size includes them).
 * On Hopper, a problem without masks, varlen, seqused or splits whose tiles leave the
 * persistent grid's last round partly empty may split that round's tiles along the keys
 * across all SMs and merge the pieces (the same arithmetic as the combine, so the result
 * equals the unsplit one up to rounding, and repeats bit for bit on the same device); the
 * pieces use up to SMs × 256 × (head_dim_v + 8) fp32 values of workspace, also included in
 * flashc_attn_fwd_workspace_size.
 *
 * FP8 (dtype = FLASHC_DTYPE_E4M3): q, k, v in e4m3; q_descale, k_descale, v_descale are
 * fp32 arrays indexed [b * descale_batch_stride + kv_head * descale_head_stride]
 * (FA3: shape (batch, heads_kv)); the real values are stored value · descale. All three
 * are required. out_dtype is BF16 (default) or FP16.
 *
 * Dtypes: fp16, bf16 (o has the input dtype), e4m3 as above; fp32 on the CPU backend only.
 * Head dims: the CPU backend takes any 1..512; the GPU supports what flashc_handle_kernels
 * lists.
 */
typedef struct flashc_attn_fwd_params {
  size_t struct_size; /* sizeof(flashc_attn_fwd_params), set by the init function */

  flashc_dtype dtype;     /* q, k, v dtype; default FLASHC_DTYPE_BF16 */
  flashc_dtype out_dtype; /* o dtype; FLASHC_DTYPE_AUTO (default) = dtype, BF16 for E4M3 */

  int batch;
  int seqlen_q, seqlen_k; /* per-sequence lengths (maximum lengths with varlen) */
  int heads_q, heads_kv;  /* heads_kv = 0 (default) means heads_kv = heads_q */
  int head_dim;
  int head_dim_v;         /* 0 (default) means head_dim */

  const void* q;
  const void* k;
  const void* v;
  void* o;
  float* lse; /* optional */

  /* Element strides; 0 = packed for the shapes above. */
  int64_t q_batch_stride, q_row_stride, q_head_stride;
  int64_t k_batch_stride, k_row_stride, k_head_stride;
  int64_t v_batch_stride, v_row_stride, v_head_stride;
  int64_t o_batch_stride, o_row_stride, o_head_stride;
  int64_t lse_batch_stride, lse_head_stride; /* rows are contiguous; 0 = packed */

  float softmax_scale; /* 0 (default) means 1 / sqrt(head_dim) */
  int causal;          /* 0 or 1 */
  int window_left;     /* -1 (default) = unbounded */
  int window_right;    /* -1 (default) = unbounded */
  float softcap;       /* 0 (default) = off */

  /* Variable length */
  const int32_t* cu_seqlens_q; /* batch + 1 entries, or NULL */
  const int32_t* cu_seqlens_k; /* batch + 1 entries, or NULL */
  const int32_t* seqused_q;    /* batch entries, or NULL */
  const int32_t* seqused_k;    /* batch entries, or NULL */
  int total_q;                 /* rows of q/o with cu_seqlens_q (required then) */
  int total_k;                 /* rows of k/v with cu_seqlens_k (required then) */

  /* Paged KV cache */
  const int32_t* page_table;   /* (batch, max_pages) int32, or NULL */
  int64_t page_table_batch_stride; /* 0 = max_pages */
  int max_pages;               /* entries per sequence in page_table */
  int page_size;               /* rows per page */
  int num_pages;               /* pages in k and v */
  const int32_t* cache_seqlens; /* batch entries, or NULL */

  /* Split-KV */
  int num_splits; /* 1 (default) = no split; 0 = let flashc choose; > 1 = that many */

  /* GQA packing hint for the GPU: -1 (default) = heuristic, 0 = off, 1 = on */
  int pack_gqa;

  /* FP8 */
  const float* q_descale;
  const float* k_descale;
  const float* v_descale;
  int64_t descale_batch_stride; /* 0 = heads_kv */
  int64_t descale_head_stride;  /* 0 = 1 */
} flashc_attn_fwd_params;

/* Sets struct_size and every default (dtype bf16, windows -1, num_splits 1, ...). */
FLASHC_API void flashc_attn_fwd_params_init(flashc_attn_fwd_params* params);

/* Bytes of workspace flashc_attn_fwd needs for these params (validated as by the call). */
FLASHC_API flashc_status flashc_attn_fwd_workspace_size(flashc_handle_t handle,
                                                        const flashc_attn_fwd_params* params,
                                                        size_t* workspace_bytes);

/*
 * Runs the forward. Returns INVALID_VALUE / NULL_POINTER / MISALIGNED / BAD_LAYOUT /
 * SHAPE_MISMATCH for bad arguments, NOT_SUPPORTED_* for what the backend cannot run,
 * WORKSPACE_TOO_SMALL, CUDA_ERROR for a failed launch.
 */
FLASHC_API flashc_status flashc_attn_fwd(flashc_handle_t handle, const flashc_attn_fwd_params* params,
                                         void* workspace, size_t workspace_bytes, void* stream);

/* ------------------------------------------------------------------------------------ */
/* Attention backward                                                                    */
/* ------------------------------------------------------------------------------------ */

/*
 * Given q, k, v, o, lse of a forward and dout = dL/dO, computes dq, dk, dv (same shapes
 * and stride conventions as q, k, v; dq, dk, dv have the input dtype). lse is required.
 * Shapes, masks, softcap, GQA and varlen as in the forward; paged KV, split-KV and FP8 are
 * not part of the backward. deterministic = 1 makes results bitwise reproducible run to run.
 */
typedef struct flashc_attn_bwd_params {
  size_t struct_size;

  flashc_dtype dtype; /* default BF16 */
  int batch;
  int seqlen_q, seqlen_k;
  int heads_q, heads_kv; /* heads_kv = 0 means heads_q */
  int head_dim;
  int head_dim_v;        /* 0 means head_dim */

  const void* q;
  const void* k;
  const void* v;
  const void* o;
  const float* lse;
  const void* dout;
  void* dq;
  void* dk;
  void* dv;

  int64_t q_batch_stride, q_row_stride, q_head_stride;
  int64_t k_batch_stride, k_row_stride, k_head_stride;
  int64_t v_batch_stride, v_row_stride, v_head_stride;
  int64_t o_batch_stride, o_row_stride, o_head_stride;
  int64_t lse_batch_stride, lse_head_stride;
  int64_t dout_batch_stride, dout_row_stride, dout_head_stride;
  int64_t dq_batch_stride, dq_row_stride, dq_head_stride;
  int64_t dk_batch_stride, dk_row_stride, dk_head_stride;
  int64_t dv_batch_stride, dv_row_stride, dv_head_stride;

  float softmax_scale;
  int causal;
  int window_left, window_right;
  float softcap;

  const int32_t* cu_seqlens_q;
  const int32_t* cu_seqlens_k;
  const int32_t* seqused_q;
  const int32_t* seqused_k;
  int total_q, total_k;

  int deterministic; /* 0 or 1 */
} flashc_attn_bwd_params;

FLASHC_API void flashc_attn_bwd_params_init(flashc_attn_bwd_params* params);
FLASHC_API flashc_status flashc_attn_bwd_workspace_size(flashc_handle_t handle,
                                                        const flashc_attn_bwd_params* params,
                                                        size_t* workspace_bytes);
FLASHC_API flashc_status flashc_attn_bwd(flashc_handle_t handle, const flashc_attn_bwd_params* params,
                                         void* workspace, size_t workspace_bytes, void* stream);

/* ------------------------------------------------------------------------------------ */
/* Split-KV combine                                                                      */
/* ------------------------------------------------------------------------------------ */

/*
 * Merges num_splits partial attention results (e.g. from several GPUs of a context-
 * parallel run, each over its own slice of the keys):
 *   lse   = log Σ_s exp(lse_partial[s])
 *   o     = Σ_s exp(lse_partial[s] - lse) · o_partial[s]
 * o_partial: fp32 (num_splits, batch, seqlen, heads, head_dim_v);
 * lse_partial: fp32 (num_splits, batch, heads, seqlen) by default — set its strides for
 * FA3's (num_splits, batch, seqlen, heads) layout. A split with lse = -inf contributes
 * nothing; a row whose splits are all -inf gets o = 0, lse = -inf.
 * o: (batch, seqlen, heads, head_dim_v) in out_dtype (fp16, bf16 or fp32);
 * lse (optional): (batch, heads, seqlen) fp32.
 */
typedef struct flashc_attn_combine_params {
  size_t struct_size;
  flashc_dtype out_dtype; /* default BF16 */
  int num_splits, batch, seqlen, heads, head_dim_v;

  const float* o_partial;
  const float* lse_partial;
  void* o;
  float* lse; /* optional */

  int64_t o_partial_split_stride, o_partial_batch_stride, o_partial_row_stride, o_partial_head_stride;
  int64_t lse_partial_split_stride, lse_partial_batch_stride, lse_partial_head_stride,
      lse_partial_row_stride;
  int64_t o_batch_stride, o_row_stride, o_head_stride;
  int64_t lse_batch_stride, lse_head_stride; /* rows contiguous */
} flashc_attn_combine_params;

FLASHC_API void flashc_attn_combine_params_init(flashc_attn_combine_params* params);
FLASHC_API flashc_status flashc_attn_combine(flashc_handle_t handle,
                                             const flashc_attn_combine_params* params, void* stream);

/* ------------------------------------------------------------------------------------ */
/* GEMM                                                                                  */
/* ------------------------------------------------------------------------------------ */

typedef enum flashc_layout {
  FLASHC_ROW_MAJOR = 0, /* element (i, j) at i * ld + j */
  FLASHC_COL_MAJOR = 1, /* element (i, j) at j * ld + i */
  FLASHC_LAYOUT_FORCE_INT = 0x7fffffff
} flashc_layout;

typedef enum flashc_activation {
  FLASHC_ACTIVATION_NONE = 0,
  FLASHC_ACTIVATION_RELU = 1,
  FLASHC_ACTIVATION_GELU = 2, /* tanh approximation, as cuBLASLt's GELU epilogue */
  FLASHC_ACTIVATION_FORCE_INT = 0x7fffffff
} flashc_activation;

/*
 * D = act(alpha · scale_a · scale_b · A·B + beta · C + bias), per batch, where
 *   A is m×k (a_layout, leading dimension lda), B is k×n (b_layout, ldb),
 *   C and D are m×n (cd_layout, ldc, ldd); C may alias D exactly.
 * Leading dimensions of 0 mean packed (k for row-major A, m for column-major A, ...).
 * Strided batches: matrix i of X starts at X + i * stride_x (elements); for A, B and C a
 * stride of 0 broadcasts one matrix to every batch; for D a stride of 0 means packed (the
 * span of one D matrix), and an explicit stride must not make batches overlap.
 * a_dtype = b_dtype ∈ {fp16, bf16, e4m3} (fp32 on the CPU backend only); d_dtype and
 * c_dtype ∈ {fp16, bf16, fp32}, C has d_dtype. bias (optional): n elements of d_dtype,
 * added per column. scale_a / scale_b (fp32 scalars in the handle's memory) are required
 * for e4m3 and optional otherwise (NULL = 1). fp32 accumulation throughout.
 */
typedef struct flashc_gemm_params {
  size_t struct_size;
  int m, n, k;
  int batch_count; /* default 1 */

  flashc_dtype a_dtype, b_dtype; /* default BF16 */
  flashc_dtype d_dtype;          /* FLASHC_DTYPE_AUTO (default) = a_dtype, BF16 for E4M3; C has d_dtype */
  flashc_layout a_layout, b_layout, cd_layout; /* default row-major */

  const void* a;
  const void* b;
  const void* c; /* may be NULL when beta == 0 */
  void* d;
  const void* bias;     /* optional */
  flashc_activation activation;

  int64_t lda, ldb, ldc, ldd;                      /* 0 = packed */
  int64_t stride_a, stride_b, stride_c, stride_d;  /* batch strides; 0 = broadcast (D: packed) */

  float alpha; /* default 1 */
  float beta;  /* default 0 */
  const float* scale_a;
  const float* scale_b;

  /* Which kernel family: 0 = automatic, 1 = Hopper TMA/WGMMA, 2 = portable cp.async/MMA.
     Ignored on the CPU backend. */
  int algo;
} flashc_gemm_params;

#define FLASHC_GEMM_ALGO_AUTO 0
#define FLASHC_GEMM_ALGO_HOPPER 1
#define FLASHC_GEMM_ALGO_PORTABLE 2

FLASHC_API void flashc_gemm_params_init(flashc_gemm_params* params);
FLASHC_API flashc_status flashc_gemm_workspace_size(flashc_handle_t handle, const flashc_gemm_params* params,
                                                    size_t* workspace_bytes);
FLASHC_API flashc_status flashc_gemm(flashc_handle_t handle, const flashc_gemm_params* params,
                                     void* workspace, size_t workspace_bytes, void* stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FLASHC_H */
