/*
 * attn_common.h — what the CPU attention files share: tiling constants, per-thread scratch
 * carving, the per-row split-KV merge, and the declarations of the attention math that
 * attn_math.inc defines once per accumulator type (f32: the backend and the "same
 * precision" reference; f64: the oracle). Internal to src/cpu.
 */
#ifndef FLASHC_CPU_ATTN_COMMON_H
#define FLASHC_CPU_ATTN_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include <stdlib.h>

#include "cpu/cpu_backend.h"
#include "flashc.h"
#include "host/error.h"
#include "host/numeric.h"
#include "host/problem.h"

#ifdef FLASHC_WITH_OPENMP
#include <omp.h>
#endif

/* Query rows processed together: their scores form one block S = Q_block·Kᵀ, so every key
 * loaded from cache serves this many rows. 32 keeps the score block of a 2k-key head in L2
 * and wastes little on the masked triangle of a causal block. */
#define FC_ATTN_ROWS_PER_BLOCK 32

/* Register tile of matmul_acc: 4 rows × 16 columns of fp32 accumulators are 16 SSE or 8 AVX
 * registers. The kernel spells the four rows out, so the row count is fixed. */
#define FC_MATMUL_TILE_ROWS 4
#define FC_MATMUL_TILE_COLS 16
_Static_assert(FC_MATMUL_TILE_ROWS == 4, "matmul_acc in attn_math.inc spells out four accumulator rows");

/* Every scratch buffer starts on a cache line, so buffers never share one across threads. */
#define FC_SCRATCH_ALIGNMENT 64

static inline size_t fc_scratch_round_up(size_t bytes) {
  return (bytes + FC_SCRATCH_ALIGNMENT - 1) / FC_SCRATCH_ALIGNMENT * FC_SCRATCH_ALIGNMENT;
}

/* Places a buffer of `bytes` at *offset in a scratch region starting at `base` and advances
 * *offset. With base == NULL it only measures (returns NULL): one layout function then
 * serves both the size query and the carving, so the two cannot disagree. */
static inline void* fc_scratch_place(void* base, size_t* offset, size_t bytes) {
  void* buffer = base ? (char*)base + *offset : NULL;
  *offset += fc_scratch_round_up(bytes);
  return buffer;
}

/* First FC_SCRATCH_ALIGNMENT-aligned address at or after `pointer`. */
static inline char* fc_scratch_align(void* pointer) {
  uintptr_t address = (uintptr_t)pointer;
  uintptr_t aligned = (address + FC_SCRATCH_ALIGNMENT - 1) / FC_SCRATCH_ALIGNMENT * FC_SCRATCH_ALIGNMENT;
  return (char*)pointer + (aligned - address);
}

/* Allocates `threads` regions of `thread_bytes` (a multiple of FC_SCRATCH_ALIGNMENT) for the
 * threads of a parallel loop: *allocation is what to free, *scratch the aligned start of region
 * 0 (thread t uses scratch + t · thread_bytes). `what` names the operation in the message. */
static inline flashc_status fc_scratch_alloc(int threads, size_t thread_bytes, const char* what, void** allocation,
                                             char** scratch) {
  const size_t bytes = (size_t)threads * thread_bytes + FC_SCRATCH_ALIGNMENT;
  *allocation = malloc(bytes);
  if (!*allocation) return fc_fail(FLASHC_STATUS_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes of scratch", what, bytes);
  *scratch = fc_scratch_align(*allocation);
  return FLASHC_STATUS_SUCCESS;
}

/* Index of the calling thread inside a parallel region (0 without OpenMP). */
static inline int fc_cpu_thread_index(void) {
#ifdef FLASHC_WITH_OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

/* Threads to run `work_items` independent items: the backend's count, at most one per item. */
static inline int fc_cpu_threads_for(int64_t work_items) {
  int64_t threads = fc_cpu_thread_count();
  if (threads > work_items) threads = work_items;
  return threads < 1 ? 1 : (int)threads;
}

/* Longest query / key sequence of the problem after varlen, seqused and paging. */
static inline int fc_attn_max_seqlen_q(const fc_attn_problem* p) {
  int longest = 0;
  for (int b = 0; b < p->batch; ++b) {
    fc_attn_seq seq = fc_attn_sequence(p, b);
    if (seq.seqlen_q > longest) longest = seq.seqlen_q;
  }
  return longest;
}

static inline int fc_attn_max_seqlen_k(const fc_attn_problem* p) {
  int longest = 0;
  for (int b = 0; b < p->batch; ++b) {
    fc_attn_seq seq = fc_attn_sequence(p, b);
    if (seq.seqlen_k > longest) longest = seq.seqlen_k;
  }
  return longest;
}

/* Keys per split-KV chunk of a sequence with seqlen_k keys: ceil(seqlen_k / num_splits), so
 * chunk s holds keys [s·chunk, min((s+1)·chunk, seqlen_k)); trailing chunks may be empty. */
static inline int fc_attn_split_chunk(int seqlen_k, int num_splits) {
  return num_splits > 1 ? (seqlen_k + num_splits - 1) / num_splits : seqlen_k;
}

/* FP8 descale factors of (b, kv_head); 1 when the problem has none. */
static inline double fc_attn_descale(const fc_attn_problem* p, const float* descale, int b, int kv_head) {
  if (!descale) return 1.0;
  return descale[(int64_t)b * p->descale_batch_stride + (int64_t)kv_head * p->descale_head_stride];
}

/*
 * The split-KV merge of one row (attn_combine.c), shared by flashc_attn_combine and the
 * split forward:  lse = log Σ_s exp(lse_s),  o = Σ_s exp(lse_s − lse) · o_s.
 * Split s has its lse at lse_partial[s · lse_split_stride] and its row of head_dim_v values
 * at o_partial + s · o_split_stride. Splits with lse = −inf are skipped (their o_s is never
 * read); if all are, o = 0 and lse = −inf. `weights` is scratch for num_splits floats.
 */
void fc_attn_combine_row(int num_splits, int head_dim_v, const float* lse_partial, int64_t lse_split_stride,
                         const float* o_partial, int64_t o_split_stride, float* weights, float* o_row,
                         float* lse_row);

/* ---- the attention math of attn_math.inc, per accumulator type ---- */

/* How the backward gets its softmax statistics and where its gradients go. */
typedef struct fc_attn_bwd_mode {
  /* 0: take lse and o from the problem (the backend, as FA's backward does).
   * 1: recompute lse and o from q, k, v (the reference, which must not trust them). */
  int recompute_softmax;
  /* P, dS and a recomputed o are rounded to this dtype before they enter a product, as a
   * kernel holding them in the input precision would (FP32: not rounded). */
  flashc_dtype operand_dtype;
  /* Non-NULL: gradients go to these double arrays at the offsets of dq / dk / dv instead of
   * being stored in the problem's dtype. All three or none. */
  double* dq_ref;
  double* dk_ref;
  double* dv_ref;
} fc_attn_bwd_mode;

/*
 * Forward of query head h of sequence b over the keys in [key_begin, key_end) (clipped to
 * the sequence; pass 0, INT_MAX for all keys): for every row i < seqlen_q of the sequence,
 *   o_rows[i · o_row_stride + e] = v_descale · Σ_j P_ij v_j[e] / Σ_j P_ij,
 *   lse_rows[i] = log Σ_j exp(s_ij)     (j over the row's visible keys in the range),
 * and 0 / −inf for a row without such a key. P is rounded to p_round_dtype before P·V
 * (FP32: not rounded). `scratch` holds fwd_scratch_bytes(p, key_end − key_begin) bytes,
 * FC_SCRATCH_ALIGNMENT-aligned.
 */
size_t fc_attn_fwd_scratch_bytes_f32(const fc_attn_problem* p, int max_keys);
size_t fc_attn_fwd_scratch_bytes_f64(const fc_attn_problem* p, int max_keys);
void fc_attn_fwd_head_f32(const fc_attn_problem* p, int b, int h, int key_begin, int key_end,
                          flashc_dtype p_round_dtype, void* scratch, float* o_rows, int64_t o_row_stride,
                          float* lse_rows);
void fc_attn_fwd_head_f64(const fc_attn_problem* p, int b, int h, int key_begin, int key_end,
                          flashc_dtype p_round_dtype, void* scratch, double* o_rows, int64_t o_row_stride,
                          double* lse_rows);

/*
 * Backward of KV head kv_head of sequence b: dq of every query head that shares it (rows
 * < seqlen_q), and dk, dv of the KV head (all seqlen_k rows; zero for keys no row sees),
 * summed over the query heads of the group in ascending order. `scratch` holds
 * bwd_scratch_bytes(p, max_keys, mode->recompute_softmax) bytes for max_keys >= seqlen_k.
 */
size_t fc_attn_bwd_scratch_bytes_f32(const fc_attn_problem* p, int max_keys, int recompute_softmax);
size_t fc_attn_bwd_scratch_bytes_f64(const fc_attn_problem* p, int max_keys, int recompute_softmax);
void fc_attn_bwd_kv_head_f32(const fc_attn_problem* p, int b, int kv_head, const fc_attn_bwd_mode* mode,
                             void* scratch);
void fc_attn_bwd_kv_head_f64(const fc_attn_problem* p, int b, int kv_head, const fc_attn_bwd_mode* mode,
                             void* scratch);

#endif /* FLASHC_CPU_ATTN_COMMON_H */
