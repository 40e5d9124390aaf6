/*
 * attn_fwd_mask.cuh — which keys a query tile sees: the per-sequence geometry read from
 * cu_seqlens / seqused, the range of key blocks a tile visits, and the mask applied to the
 * S fragment of the blocks that straddle a boundary.
 *
 * Semantics (DESIGN §5, identical to the CPU backend's fc_attn_key_range): query row i of a
 * sequence with lengths (seqlen_q, seqlen_k) sees key j when
 *   j < seqlen_k,  j ≥ i + seqlen_k − seqlen_q − window_left  (when window_left ≥ 0),
 *                  j ≤ i + seqlen_k − seqlen_q + window_right (when window_right ≥ 0).
 * Blocks entirely inside every row's range need no mask; only the ones crossing the seqlen_k
 * tail or a window edge pay for the comparisons.
 * Check: tests/gpu/gpu_attn_fwd.c (causal, local, seqlen_q ≠ seqlen_k, varlen);
 * tests/cpu_attn_mask_blocks.cu (the block ranges and bounds against a per-key brute force,
 * on the host: the functions below are __host__ __device__ for it).
 */
#ifndef FLASHC_KERNELS_ATTN_FWD_MASK_CUH
#define FLASHC_KERNELS_ATTN_FWD_MASK_CUH

#include <math.h>

#include "kernels/attn/attn_fwd_params.cuh"

/* One (batch) sequence: where its rows start in the tensor maps and how many are used. */
struct attn_fwd_sequence {
  int q_row0, k_row0;         /* row coordinate of row 0 (cu_seqlens), else 0 */
  int q_batch, k_batch;       /* batch coordinate: b, or 0 with cu_seqlens */
  int seqlen_q, seqlen_k;     /* used lengths */
};

static __device__ __forceinline__ attn_fwd_sequence attn_fwd_sequence_of(const attn_fwd_params& p, int b) {
  attn_fwd_sequence s;
  if (p.cu_seqlens_q) {
    s.q_row0 = __ldg(p.cu_seqlens_q + b);
    s.seqlen_q = __ldg(p.cu_seqlens_q + b + 1) - s.q_row0;
    s.q_batch = 0;
  } else {
    s.q_row0 = 0;
    s.seqlen_q = p.seqlen_q;
    s.q_batch = b;
  }
  if (p.cu_seqlens_k) {
    s.k_row0 = __ldg(p.cu_seqlens_k + b);
    s.seqlen_k = __ldg(p.cu_seqlens_k + b + 1) - s.k_row0;
    s.k_batch = 0;
  } else {
    s.k_row0 = 0;
    s.seqlen_k = p.seqlen_k;
    s.k_batch = b;
  }
  if (p.seqused_q) s.seqlen_q = __ldg(p.seqused_q + b);
  if (p.seqused_k) s.seqlen_k = __ldg(p.seqused_k + b);
  return s;
}

/* floor(a / b) for b > 0 and any a. */
static __host__ __device__ __forceinline__ int attn_floor_div(int a, int b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* Key blocks [first, end) that the tile of packed rows [m0, m0 + BlockM) visits (query rows
 * m0 >> pack_shift .. up to the last used one); empty when end ≤ first (the tile then writes
 * O = 0, LSE = −inf). */
template <int BlockM, int BlockN>
static __host__ __device__ __forceinline__ void attn_fwd_key_blocks(const attn_fwd_params& p,
                                                                    const attn_fwd_sequence& s, int m0, int* first,
                                                                    int* end) {
  const int first_row = m0 >> p.pack_shift;
  const int last_row = (min(m0 + BlockM, s.seqlen_q << p.pack_shift) - 1) >> p.pack_shift;
  const int shift = s.seqlen_k - s.seqlen_q; /* bottom-right alignment */
  int block_end = (s.seqlen_k + BlockN - 1) / BlockN;
  if (p.window_right >= 0) block_end = min(block_end, attn_floor_div(last_row + shift + p.window_right, BlockN) + 1);
  int block_first = 0;
  if (p.window_left >= 0) block_first = max(0, attn_floor_div(first_row + shift - p.window_left, BlockN));
  *first = block_first;
  *end = block_end;
}

/* Which key blocks need element masks for the tile of packed rows [m0, m0 + BlockM): those
 * at or past `from` (they cross the seqlen_k tail or the right window edge) and those before
 * `below` (they cross the left window edge). Computed once per tile, so a key block's test is
 * two compares instead of the geometry's dozen instructions and constant loads (ncu, d128
 * 16k: ~5 % of the consumers' samples sat in the per-block test, on the softmax's critical
 * path; H200: d128 +2–4 %). Block n needs a mask when
 *   n·B + B > seqlen_k                          ⇔ n ≥ ⌊seqlen_k / B⌋
 *   n·B + B − 1 > first_row + shift + right     ⇔ n ≥ ⌊(first_row + shift + right + 1) / B⌋
 *   n·B < last_row + shift − left               ⇔ n < ⌈(last_row + shift − left) / B⌉. */
struct attn_fwd_masked_blocks {
  int below, from;
  __host__ __device__ __forceinline__ bool contains(int n) const { return n >= from || n < below; }
};

/* `Windows` false: the caller's instance takes no window (attn_fwd_tile::WINDOWS), so only the
 * seqlen_k tail counts, as with window_left = window_right = −1. */
template <int BlockM, int BlockN, bool Windows>
static __host__ __device__ __forceinline__ attn_fwd_masked_blocks attn_fwd_masked_blocks_of(const attn_fwd_params& p,
                                                                                            const attn_fwd_sequence& s,
                                                                                            int m0) {
  const int shift = s.seqlen_k - s.seqlen_q;
  attn_fwd_masked_blocks masked = {0, s.seqlen_k / BlockN};
  if (Windows && p.window_right >= 0) {
    const int first_row = m0 >> p.pack_shift;
    masked.from = min(masked.from, attn_floor_div(first_row + shift + p.window_right + 1, BlockN));
  }
  if (Windows && p.window_left >= 0) {
    const int last_row = (m0 + BlockM - 1) >> p.pack_shift;
    masked.below = -attn_floor_div(-(last_row + shift - p.window_left), BlockN);
  }
  return masked;
}

/* Sets the invisible entries of a consumer's S fragment (64 × BlockN, packed rows from `row0`,
 * keys from n0) to −inf. Thread `thread` holds packed rows row0 + 16w + g and + 8 (w = warp,
 * g = lane / 4; query row = packed row >> pack_shift) and columns 8j + 2(lane % 4) + {0, 1}
 * (ptx_wgmma.cuh). Without `Windows` only the seqlen_k tail is masked (the caller's problem
 * has no window). */
template <int BlockN, bool Windows>
static __device__ __forceinline__ void attn_fwd_apply_mask(float (&s)[BlockN / 2], const attn_fwd_params& p,
                                                           const attn_fwd_sequence& seq, int row0, int n0,
                                                           int thread) {
  const int shift = seq.seqlen_k - seq.seqlen_q;
  const int column_base = n0 + 2 * (thread % 4);
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = (row0 + 16 * (thread / 32) + (thread % 32) / 4 + 8 * half) >> p.pack_shift;
    const int diagonal = row + shift;
    int lo = 0, hi = seq.seqlen_k - 1; /* visible keys [lo, hi] */
    if (Windows && p.window_left >= 0) lo = max(lo, diagonal - p.window_left);
    if (Windows && p.window_right >= 0) hi = min(hi, diagonal + p.window_right);
#pragma unroll
    for (int j = 0; j < BlockN / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int column = column_base + 8 * j + e;
        float& value = s[4 * j + 2 * half + e];
        if (column < lo || column > hi) value = -INFINITY;
      }
    }
  }
}

#endif
