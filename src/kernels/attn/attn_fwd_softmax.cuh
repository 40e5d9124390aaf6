/*
 * attn_fwd_softmax.cuh — the online softmax on a consumer's S fragment, in registers and in
 * log2 space.
 *
 * Each thread holds two rows (g and g + 8 of its warp's 16) × BLOCK_N/4 columns; a row's other
 * columns live in the 3 other lanes of the quad, so row reductions are two xor-shuffles.
 * With scale_log2 = softmax_scale · log2(e) (or log2(e) after a softcap, whose tanh already
 * took the scale):
 *   m_new   = max(m_old, max_j s_j)   (raw scores; kept at m_old while the rise is small,
 *                                      see ATTN_RESCALE_THRESHOLD_LOG2)
 *   p_j     = exp2(s_j · scale_log2 − m_new · scale_log2)  one FFMA + ex2 per element
 *   l_new   = l_old · exp2((m_old − m_new) · scale_log2) + Σ_j p_j
 *   O      *= the same factor, before P·V of this block is added.
 * The running sum stays per thread (a quad's partial sums) until the end. A row whose scores
 * are all −inf so far uses 0 for its scaled maximum, so p = exp2(−inf) = 0, never NaN; the
 * epilogue turns l = 0 into O = 0 and LSE = −inf. LSE = m · scale + ln l, with the maximum
 * scaled in natural units directly (going through log2 space and back would add an fp32
 * rounding of |LSE|, which is ~50 for a softcap of 50).
 * Softcap: s ← softcap · tanh(s · scale / softcap) first, with CUDA's tanhf (2 ulp). A fast
 * tanh (tanh.approx, ~5e-4 relative, or 1 − 2/(ex2 + 1), a few 1e-7 absolute) is multiplied
 * by the softcap (often 30–50) into logit errors beyond the fp32 reference's own.
 * Check: tests/gpu/gpu_attn_fwd.c (softcap, masks with empty rows, long sequences).
 */
#ifndef FLASHC_KERNELS_ATTN_FWD_SOFTMAX_CUH
#define FLASHC_KERNELS_ATTN_FWD_SOFTMAX_CUH

#include <math.h>

#include "kernels/common/ptx.cuh"

constexpr float ATTN_LOG2E = 1.4426950408889634f;
constexpr float ATTN_LN2 = 0.6931471805599453f;

static __device__ __forceinline__ float attn_exp2(float x) { return exp2_approx_ftz(x); }

struct attn_softmax_rows {
  float max[2]; /* raw score maxima of the thread's two rows (−inf before any visible key) */
  float sum[2]; /* this thread's partial sums of p */
};

static __device__ __forceinline__ float attn_quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

static __device__ __forceinline__ float attn_quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

static __device__ __forceinline__ void attn_softmax_init(attn_softmax_rows& rows) {
  rows.max[0] = rows.max[1] = -INFINITY;
  rows.sum[0] = rows.sum[1] = 0.0f;
}

template <int Count>
static __device__ __forceinline__ void attn_softcap(float (&s)[Count], float input_scale, float cap) {
#pragma unroll
  for (int i = 0; i < Count; ++i) s[i] = cap * tanhf(s[i] * input_scale);
}

/* How far (in log2 units) a row's maximum may rise before the running maximum follows it.
 * While every row of a warp's half (its rows g, or its rows g + 8) stays within this, the
 * half keeps its stale maxima — one warp vote per half and key block, so the first half's
 * exponentials start before the second half's maximum is known (one vote for both made them
 * wait for both maxima: d128 −2–3 %, H200, 10th session): p ≤ 2^8 and
 * O, l grow by at most that factor, harmless in fp32 and in the 16-bit P (its error is
 * relative), and the 64 multiplications per block that rescale O (d = 128) are skipped —
 * after the first few key blocks of a row the maximum rarely moves by that much. LSE and the
 * final normalization use the same stale maximum as O and l, so the result is unchanged up
 * to rounding. (FlashAttention-4 rescales conditionally the same way.) Used where O is wide
 * enough for the skipped multiplications to outweigh the vote
 * (attn_fwd_tile::CONDITIONAL_RESCALE; H200: d_v 96 +6–8 %, d_v 128 +3–4 %, d_v 256 +9–12 %;
 * d_v 64 only with wide key blocks or three consumers). */
constexpr float ATTN_RESCALE_THRESHOLD_LOG2 = 8.0f;

/* p = exp2(s · scale_log2 − max_scaled) in place over one row's columns of the fragment
 * (half 0: columns 4j, 4j+1; half 1: 4j+2, 4j+3); returns their sum, accumulated in one
 * chain or (`SplitSum`) in two, one per column parity. */
template <bool SplitSum, int Count>
static __device__ __forceinline__ float attn_exp_row(float (&s)[Count], int half, float scale_log2, float max_scaled) {
  float sum[2] = {0.0f, 0.0f};
#pragma unroll
  for (int j = 0; j < Count / 4; ++j) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      float& value = s[4 * j + 2 * half + e];
      value = attn_exp2(fmaf(value, scale_log2, -max_scaled));
      sum[SplitSum ? e : 0] += value;
    }
  }
  return SplitSum ? sum[0] + sum[1] : sum[0];
}

/* The maximum of one row's columns of the fragment, over the quad. `Tree`: pairwise, depth
 * log2(Count / 4) instead of a Count / 4 long chain of dependent FMNMX (the softmax is the
 * consumers' critical path). H200, same process: alone +0.4–1.9 % on the two-consumer cases,
 * d64 16k (three consumers, 128 registers) −3.4 %; on top of the hoisted mask test −0.9 % to
 * +1.6 % (d128 a little down, d64 up): about neutral, kept for two consumers. */
template <bool Tree, int Count>
static __device__ __forceinline__ float attn_block_row_max(const float (&s)[Count], int half) {
  constexpr int PAIRS = Count / 4;
  if constexpr (Tree) {
    float v[PAIRS];
#pragma unroll
    for (int j = 0; j < PAIRS; ++j) v[j] = fmaxf(s[4 * j + 2 * half], s[4 * j + 2 * half + 1]);
#pragma unroll
    for (int width = 1; width < PAIRS; width *= 2)
#pragma unroll
      for (int j = 0; j + width < PAIRS; j += 2 * width) v[j] = fmaxf(v[j], v[j + width]);
    return attn_quad_max(v[0]);
  } else {
    float value = -INFINITY;
#pragma unroll
    for (int j = 0; j < PAIRS; ++j) value = fmaxf(value, fmaxf(s[4 * j + 2 * half], s[4 * j + 2 * half + 1]));
    return attn_quad_max(value);
  }
}

/* Turns the (masked) scores `s` into p in place and updates the row state. Returns whether O
 * accumulated so far must be rescaled (warp-uniform), by the factors put in `o_scale`: always
 * unless `Conditional`, then only when some row of the warp rose past the threshold (a half
 * whose rows did not rise gets the factor 1). */
template <bool Conditional, bool MaxTree, bool SplitSum, int Count>
static __device__ __forceinline__ bool attn_softmax_step(float (&s)[Count], attn_softmax_rows& rows,
                                                         float scale_log2, float (&o_scale)[2]) {
  if constexpr (!Conditional) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const float old_max = rows.max[half];
      const float new_max = fmaxf(old_max, attn_block_row_max<MaxTree>(s, half));
      rows.max[half] = new_max;
      const float max_scaled = new_max == -INFINITY ? 0.0f : new_max * scale_log2;
      o_scale[half] = old_max == -INFINITY ? 0.0f : attn_exp2(old_max * scale_log2 - max_scaled);
      rows.sum[half] = rows.sum[half] * o_scale[half] + attn_exp_row<SplitSum>(s, half, scale_log2, max_scaled);
    }
    return true;
  } else {
    bool rescale_any = false;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const float block_max = attn_block_row_max<MaxTree>(s, half);
      /* −inf − −inf is NaN and compares false: a row with no visible key yet stays empty. */
      const bool rescale =
          __any_sync(0xffffffffu, (block_max - rows.max[half]) * scale_log2 > ATTN_RESCALE_THRESHOLD_LOG2);
      o_scale[half] = 1.0f;
      if (rescale) {
        const float old_max = rows.max[half];
        const float new_max = fmaxf(old_max, block_max);
        rows.max[half] = new_max;
        const float new_scaled = new_max == -INFINITY ? 0.0f : new_max * scale_log2;
        o_scale[half] = old_max == -INFINITY ? 0.0f : attn_exp2(old_max * scale_log2 - new_scaled);
      }
      const float max_scaled = rows.max[half] == -INFINITY ? 0.0f : rows.max[half] * scale_log2;
      const float sum = attn_exp_row<SplitSum>(s, half, scale_log2, max_scaled);
      rows.sum[half] = rescale ? rows.sum[half] * o_scale[half] + sum : rows.sum[half] + sum;
      rescale_any |= rescale;
    }
    return rescale_any;
  }
}

/* O ← O · factor of its row. */
template <int Count>
static __device__ __forceinline__ void attn_rescale_rows(float (&o)[Count], const float (&factor)[2]) {
#pragma unroll
  for (int j = 0; j < Count / 4; ++j) {
    o[4 * j + 0] *= factor[0];
    o[4 * j + 1] *= factor[0];
    o[4 * j + 2] *= factor[1];
    o[4 * j + 3] *= factor[1];
  }
}

/* What the epilogue takes from a tile's rows: 1/l per row (0 for a row that saw no key) and the
 * LSE (natural log, −inf for such a row). */
struct attn_softmax_result {
  float normalizer[2];
  float lse[2];
};

/* Whether row `half` saw no visible key (its LSE is −inf, its 1/l 0). */
static __device__ __forceinline__ bool attn_softmax_row_empty(const attn_softmax_rows& rows, int half) {
  return rows.sum[half] == 0.0f || rows.max[half] == -INFINITY;
}

/* End of a tile's rows, first half: the full row sums (the quad's partial sums added, held in
 * rows.sum by every lane of the quad from here on) and the normalizer 1/l (0 for a row that saw
 * no key). 1/l by the hardware reciprocal (__fdividef: MUFU.RCP, ~1 ulp; l is a sum of at most
 * seqlen_k terms ≤ 1, far below its 2^126 limit): the correctly rounded 1.0f / l added a
 * slow-path call whose registers made the d128 128-key consumer spill once this moved under
 * the tile's last P·V (attn_fwd_finish_rows_early). */
static __device__ __forceinline__ void attn_softmax_normalizer(attn_softmax_rows& rows, attn_softmax_result& result) {
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    rows.sum[half] = attn_quad_sum(rows.sum[half]);
    result.normalizer[half] = attn_softmax_row_empty(rows, half) ? 0.0f : __fdividef(1.0f, rows.sum[half]);
  }
}

/* Second half: the LSE (natural log, −inf for a row that saw no key) of rows whose sums are
 * full (after attn_softmax_normalizer). */
static __device__ __forceinline__ void attn_softmax_lse(const attn_softmax_rows& rows, float logit_scale,
                                                        attn_softmax_result& result) {
#pragma unroll
  for (int half = 0; half < 2; ++half)
    result.lse[half] = attn_softmax_row_empty(rows, half)
                           ? -INFINITY
                           : fmaf(rows.max[half], logit_scale, __log2f(rows.sum[half]) * ATTN_LN2);
}

#endif
