/*
 * attn_bwd_kernel.cuh — the attention backward on tensor cores (portable: mma.sync m16n8k16,
 * sm_80 and newer), deterministic by construction, with the CPU backend's semantics
 * (src/cpu/attn_math.inc):
 *   P = exp(s − lse),  D_i = dout_i · o_i,  dS = P ∘ (dout·vᵀ − D) (∘ 1 − (s/c)² under a
 *   softcap c),  dq = scale · dS·k,  dk = scale · dSᵀ·q,  dv = Pᵀ·dout,
 * where s = scale·q·k (or c·tanh(scale·q·k / c)), masks, GQA, varlen and seqused as in the
 * forward; P and dS are rounded to the operand dtype before they multiply (as the CPU
 * reference's same-precision mode does). Three kernels on the caller's stream:
 *   attn_bwd_row_dots_kernel   D for every (query row, head) into the workspace (CUDA cores);
 *   attn_bwd_dkdv_kernel       one CTA per (key block, KV head, sequence): loops over the
 *                              group's query heads and the query blocks that see the key
 *                              block; per block Sᵀ = K·Qᵀ, dPᵀ = V·dOᵀ (tensor cores), Pᵀ and
 *                              dSᵀ (fp32, then 16-bit into shared memory), dV += Pᵀ·dO,
 *                              dK += dSᵀ·Q (tensor cores, fp32 accumulators in registers, no
 *                              atomics);
 *   attn_bwd_dq_kernel         one CTA per (query block, head, sequence): loops over the key
 *                              blocks its rows see; S = Q·Kᵀ, dP = dO·Vᵀ, dS, dQ += dS·K.
 * S, P and dP are recomputed in both of the last two (7 block products where FlashAttention
 * needs 5): the price of determinism without atomics.
 *
 * Tiles (attn_bwd_config): Block query rows × Block keys, Block = 64 with 8 warps, or 32 with
 * 4 warps where 64 does not fit the device's shared memory. Warps form a (Block/16) × 2 grid:
 * warp (row w_r, column w_c) owns rows 16·w_r.. of every block product and the w_c-th half of
 * its columns (keys/queries for S, head-dim columns for dK, dV, dQ). Q, dO, K, V, P and dS
 * live in shared memory as 16-bit (attn_bwd_mma.cuh: padded rows, cp.async loads that
 * zero-fill the head-dim padding and the rows past the sequence). Head dims are padded to
 * HeadDim, HeadDimV (template parameters: the accumulator arrays have a compile-time size);
 * attn_bwd_launch.cuh lists the instances.
 *
 * Check: tests/gpu/gpu_attn_bwd (tests/cpu_attn_bwd.c built against a CUDA handle: the fp64
 * oracle under DESIGN §6, bitwise reruns, untouched elements past the used lengths), on any
 * sm_80+ GPU; `cuobjdump -res-usage libflashc.so | grep -A1 attn_bwd` for registers/spills.
 */
#ifndef FLASHC_KERNELS_ATTN_BWD_KERNEL_CUH
#define FLASHC_KERNELS_ATTN_BWD_KERNEL_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>

#include "kernels/attn/attn_bwd_mma.cuh"

/* The row-dots kernel's tile: one thread per query row, every thread of the block busy. */
constexpr int ATTN_BWD_ROW_DOTS_ROWS = 256;
constexpr int ATTN_BWD_MAX_HEAD_DIM = 256;

struct attn_bwd_tensor {
  const void* data;
  int64_t batch_stride, row_stride, head_stride;
};

/* The validated problem (host/problem.h's fc_attn_problem) as the kernels read it. */
struct attn_bwd_params {
  int batch, seqlen_q, seqlen_k, heads_q, heads_kv, group, head_dim, head_dim_v;
  attn_bwd_tensor q, k, v, o, dout, dq, dk, dv; /* dq, dk, dv are written through a cast */
  const float* lse;
  int64_t lse_batch_stride, lse_head_stride;
  float* row_dots; /* workspace: D per (query row, head), rows as in the tensors (varlen: global) */
  float softmax_scale, softcap;
  int window_left, window_right;
  const int32_t* cu_seqlens_q;
  const int32_t* cu_seqlens_k;
  const int32_t* seqused_q;
  const int32_t* seqused_k;
};

/* Sequence b: where its rows start (varlen) and how many are used (seqused). */
struct attn_bwd_sequence {
  int64_t q_row0, k_row0;
  int seqlen_q, seqlen_k;
};

static __device__ __forceinline__ attn_bwd_sequence attn_bwd_sequence_of(const attn_bwd_params& p, int b) {
  attn_bwd_sequence s;
  s.q_row0 = p.cu_seqlens_q ? p.cu_seqlens_q[b] : 0;
  s.k_row0 = p.cu_seqlens_k ? p.cu_seqlens_k[b] : 0;
  s.seqlen_q = p.cu_seqlens_q ? p.cu_seqlens_q[b + 1] - p.cu_seqlens_q[b] : p.seqlen_q;
  s.seqlen_k = p.cu_seqlens_k ? p.cu_seqlens_k[b + 1] - p.cu_seqlens_k[b] : p.seqlen_k;
  if (p.seqused_q) s.seqlen_q = p.seqused_q[b];
  if (p.seqused_k) s.seqlen_k = p.seqused_k[b];
  return s;
}

/* Visible keys [first, last] of query row i (empty: first > last), as fc_attn_key_range. */
static __device__ __forceinline__ void attn_bwd_key_range(const attn_bwd_params& p, const attn_bwd_sequence& s, int i,
                                                          int& first, int& last) {
  const int64_t diagonal = static_cast<int64_t>(i) + s.seqlen_k - s.seqlen_q;
  int64_t lo = 0, hi = static_cast<int64_t>(s.seqlen_k) - 1;
  if (p.window_left >= 0 && diagonal - p.window_left > lo) lo = diagonal - p.window_left;
  if (p.window_right >= 0 && diagonal + p.window_right < hi) hi = diagonal + p.window_right;
  if (hi < lo) lo = 0, hi = -1;
  first = static_cast<int>(lo), last = static_cast<int>(hi);
}

/* Element offset of row `row` (local to the sequence) of head `head` in a query-side or a
 * key-side tensor. */
static __device__ __forceinline__ int64_t attn_bwd_query_offset(const attn_bwd_params& p, const attn_bwd_tensor& t,
                                                                const attn_bwd_sequence& s, int b, int row, int head) {
  return (p.cu_seqlens_q ? 0 : b * t.batch_stride) + (s.q_row0 + row) * t.row_stride + head * t.head_stride;
}
static __device__ __forceinline__ int64_t attn_bwd_key_offset(const attn_bwd_params& p, const attn_bwd_tensor& t,
                                                              const attn_bwd_sequence& s, int b, int row, int head) {
  return (p.cu_seqlens_k ? 0 : b * t.batch_stride) + (s.k_row0 + row) * t.row_stride + head * t.head_stride;
}
static __device__ __forceinline__ int64_t attn_bwd_lse_index(const attn_bwd_params& p, const attn_bwd_sequence& s,
                                                             int b, int head, int row) {
  return (p.cu_seqlens_q ? 0 : b * p.lse_batch_stride) + head * p.lse_head_stride + s.q_row0 + row;
}
static __device__ __forceinline__ int64_t attn_bwd_row_dot_index(const attn_bwd_params& p, const attn_bwd_sequence& s,
                                                                 int b, int head, int row) {
  const int64_t global_row = p.cu_seqlens_q ? s.q_row0 + row : static_cast<int64_t>(b) * p.seqlen_q + row;
  return global_row * p.heads_q + head;
}

static __device__ __forceinline__ float attn_bwd_load(const __half* data, int64_t i) { return __half2float(data[i]); }
static __device__ __forceinline__ float attn_bwd_load(const __nv_bfloat16* data, int64_t i) { return __bfloat162float(data[i]); }
static __device__ __forceinline__ void attn_bwd_store(__half* data, int64_t i, float v) { data[i] = __float2half_rn(v); }
static __device__ __forceinline__ void attn_bwd_store(__nv_bfloat16* data, int64_t i, float v) { data[i] = __float2bfloat16_rn(v); }

/* Clears mma accumulator fragments (N n8 tiles of 4 fp32 each). */
template <int N>
static __device__ __forceinline__ void attn_bwd_zero(float (&acc)[N][4]) {
#pragma unroll
  for (int t = 0; t < N; ++t)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[t][e] = 0.0f;
}


/* One instance's tile shape and shared-memory layout (byte offsets). HeadDim, HeadDimV: the
 * head dims padded to a multiple of 32 (each of the two column warps takes whole n16 pairs). */
template <int HeadDim, int HeadDimV, int Block>
struct attn_bwd_config {
  static constexpr int HEAD_DIM = HeadDim, HEAD_DIM_V = HeadDimV, BLOCK = Block;
  static constexpr int WARPS_COLS = 2;
  static constexpr int WARPS_ROWS = Block / ATTN_BWD_MMA_M;
  static constexpr int THREADS = WARPS_ROWS * WARPS_COLS * 32;
  static constexpr int SCORE_TILES = Block / WARPS_COLS / ATTN_BWD_MMA_N;      /* n8 tiles of S per warp */
  static constexpr int GRAD_TILES = HeadDim / WARPS_COLS / ATTN_BWD_MMA_N;     /* of dq, dk per warp */
  static constexpr int GRAD_V_TILES = HeadDimV / WARPS_COLS / ATTN_BWD_MMA_N;  /* of dv per warp */
  static_assert(HeadDim % (WARPS_COLS * 2 * ATTN_BWD_MMA_N) == 0 && HeadDimV % (WARPS_COLS * 2 * ATTN_BWD_MMA_N) == 0,
                "padded head dims: whole n16 pairs per column warp");
  static_assert(SCORE_TILES % 2 == 0, "whole n16 pairs of keys/queries per column warp");
  static_assert(Block <= THREADS, "one thread per query row for the row setup");
  using key_tile = attn_bwd_tile<Block, HeadDim>;    /* Q and K: rows × head_dim */
  using value_tile = attn_bwd_tile<Block, HeadDimV>; /* dO and V: rows × head_dim_v */
  using score_tile = attn_bwd_tile<Block, Block>;    /* P and dS (dkdv: Pᵀ, dSᵀ) */
  static constexpr int Q = 0;
  static constexpr int DOUT = Q + key_tile::BYTES;
  static constexpr int K = DOUT + value_tile::BYTES;
  static constexpr int V = K + key_tile::BYTES;
  static constexpr int PROBS = V + value_tile::BYTES;
  static constexpr int DSCORES = PROBS + score_tile::BYTES;
  static constexpr int LSE = DSCORES + score_tile::BYTES; /* float per query row */
  static constexpr int ROW_DOTS = LSE + Block * 4;        /* float per query row: D */
  static constexpr int KEY_FIRST = ROW_DOTS + Block * 4;  /* int per query row: visible keys */
  static constexpr int KEY_LAST = KEY_FIRST + Block * 4;
  static constexpr int BLOCK_KEY_RANGE = KEY_LAST + Block * 4; /* 2 ints: keys any row of a dq block sees */
  static constexpr int SMEM_BYTES = BLOCK_KEY_RANGE + 16;       /* (all shared memory is dynamic: the host's
                                                                   limit check sees the whole need) */
  /* Two CTAs per SM cap a thread at 128 registers: enough up to head dim 64; from 96 on,
   * ptxas spills under that cap (measured), so those instances run one CTA per SM. */
  static constexpr int MIN_BLOCKS = HeadDim <= 64 && HeadDimV <= 64 && Block == 64 ? 2 : 1;
};

/* The two score products of a block pair for one warp, into fresh accumulators:
 * score_dot = A_qk · B_qkᵀ (q·k over head_dim) and dprob = A_vo · B_voᵀ (dO·v over head_dim_v),
 * A rows from a_row0, B rows from b_row0. The dk/dv kernel passes K, V as A and Q, dO as B
 * (Sᵀ, dPᵀ); the dq kernel passes Q, dO as A and K, V as B (S, dP). */
template <bool IsBf16, class Cfg>
static __device__ __forceinline__ void attn_bwd_score_products(float (&score_dot)[Cfg::SCORE_TILES][4],
                                                               float (&dprob)[Cfg::SCORE_TILES][4], uint32_t a_qk,
                                                               uint32_t a_vo, int a_row0, uint32_t b_qk, uint32_t b_vo,
                                                               int b_row0, int lane) {
  using key_tile = typename Cfg::key_tile;
  using value_tile = typename Cfg::value_tile;
  attn_bwd_zero(score_dot);
  attn_bwd_zero(dprob);
  attn_bwd_warp_mma_abt<IsBf16, Cfg::SCORE_TILES, Cfg::HEAD_DIM / ATTN_BWD_MMA_K, key_tile, key_tile>(
      score_dot, a_qk, a_row0, b_qk, b_row0, lane);
  attn_bwd_warp_mma_abt<IsBf16, Cfg::SCORE_TILES, Cfg::HEAD_DIM_V / ATTN_BWD_MMA_K, value_tile, value_tile>(
      dprob, a_vo, a_row0, b_vo, b_row0, lane);
}

/* A query tile's rows as the block products read them: lse, D and the visible key range;
 * rows past the sequence and rows the forward saw empty (lse = −inf) get the empty range, so
 * every test below is a range test. Called by the threads < Block, one row each. */
template <class Cfg>
static __device__ __forceinline__ void attn_bwd_store_row_info(const attn_bwd_params& p, const attn_bwd_sequence& s,
                                                               unsigned char* smem, int b, int head, int m0,
                                                               int valid_rows, int r, int first, int last) {
  float lse = -INFINITY, row_dot = 0.0f;
  if (r < valid_rows) {
    lse = p.lse[attn_bwd_lse_index(p, s, b, head, m0 + r)];
    row_dot = p.row_dots[attn_bwd_row_dot_index(p, s, b, head, m0 + r)];
  }
  if (r >= valid_rows || lse == -INFINITY) first = 0, last = -1;
  reinterpret_cast<float*>(smem + Cfg::LSE)[r] = lse;
  reinterpret_cast<float*>(smem + Cfg::ROW_DOTS)[r] = row_dot;
  reinterpret_cast<int*>(smem + Cfg::KEY_FIRST)[r] = first;
  reinterpret_cast<int*>(smem + Cfg::KEY_LAST)[r] = last;
}

/* P and dS of one (query row, key) from its dot products q·k and dout·v (the formulas of the
 * CPU backend). A row that sees exactly one key has dS = 0: its softmax is the constant 1, and
 * P·(dP − D) would only leave the rounding difference between the MMA's dP and the row-dots
 * kernel's D (the CPU backend's sequential sums cancel exactly there). */
static __device__ __forceinline__ void attn_bwd_gradient_element(const attn_bwd_params& p, float dot, float dprob,
                                                                 float lse, float row_dot, int key, int first,
                                                                 int last, float& prob, float& dscore) {
  prob = 0.0f, dscore = 0.0f;
  if (key < first || key > last) return;
  float score = p.softmax_scale * dot;
  if (p.softcap > 0.0f) score = p.softcap * tanhf(score / p.softcap);
  prob = expf(score - lse);
  if (first == last) return;
  dscore = prob * (dprob - row_dot);
  if (p.softcap > 0.0f) {
    const float tanh_value = score / p.softcap;
    dscore *= 1.0f - tanh_value * tanh_value;
  }
}

/* Which mma.sync / cvt form the operand dtype takes. */
template <typename T>
struct attn_bwd_is_bf16 {
  static constexpr bool value = false;
};
template <>
struct attn_bwd_is_bf16<__nv_bfloat16> {
  static constexpr bool value = true;
};

static __device__ __forceinline__ void attn_bwd_store_pair(__half* data, int64_t i, float low, float high) {
  *reinterpret_cast<__half2*>(data + i) = __floats2half2_rn(low, high);
}
static __device__ __forceinline__ void attn_bwd_store_pair(__nv_bfloat16* data, int64_t i, float low, float high) {
  *reinterpret_cast<__nv_bfloat162*>(data + i) = __floats2bfloat162_rn(low, high);
}

/* Columns col, col + 1 (col even) of an output row at data + row_offset, through the output
 * dtype; columns at or past `columns` (the head-dim padding) are not written. A pair store is
 * 4-byte aligned: rows start 16-byte aligned (host validation) and col is even. */
template <typename T>
static __device__ __forceinline__ void attn_bwd_store_columns(T* data, int64_t row_offset, int col, int columns,
                                                              float low, float high) {
  if (col + 1 < columns)
    attn_bwd_store_pair(data, row_offset + col, low, high);
  else if (col < columns)
    attn_bwd_store(data, row_offset + col, low);
}

/* D_i = dout_i · o_i for every used row: one thread per row, ascending e, fmaf (the CPU
 * backend's sequential order). dP now comes from the tensor cores in the MMA's summation order,
 * so dP − D no longer cancels bit-exactly where one key is visible (O = V); the dk/dv and dq
 * kernels give such rows dS = 0 directly (attn_bwd_gradient_element), which is the exact
 * gradient of a one-element softmax. Grid: tiles of ATTN_BWD_ROW_DOTS_ROWS query rows × heads ×
 * batch, one thread per row; D is a negligible part of the work. */
template <typename T>
__global__ void __launch_bounds__(ATTN_BWD_ROW_DOTS_ROWS) attn_bwd_row_dots_kernel(const attn_bwd_params p) {
  const int m_tiles = (p.seqlen_q + ATTN_BWD_ROW_DOTS_ROWS - 1) / ATTN_BWD_ROW_DOTS_ROWS;
  const int m_tile = blockIdx.x % m_tiles, head = blockIdx.x / m_tiles % p.heads_q,
            b = blockIdx.x / m_tiles / p.heads_q;
  const attn_bwd_sequence s = attn_bwd_sequence_of(p, b);
  const int row = m_tile * ATTN_BWD_ROW_DOTS_ROWS + static_cast<int>(threadIdx.x);
  if (row >= s.seqlen_q) return;
  const T* dout = static_cast<const T*>(p.dout.data) + attn_bwd_query_offset(p, p.dout, s, b, row, head);
  const T* o = static_cast<const T*>(p.o.data) + attn_bwd_query_offset(p, p.o, s, b, row, head);
  float dot = 0.0f;
  for (int e = 0; e < p.head_dim_v; ++e) dot = fmaf(attn_bwd_load(dout, e), attn_bwd_load(o, e), dot);
  p.row_dots[attn_bwd_row_dot_index(p, s, b, head, row)] = dot;
}

/* dk, dv of one key block of one KV head. Grid: key blocks × KV heads × batch. */
template <typename T, class Cfg>
__global__ void __launch_bounds__(Cfg::THREADS, Cfg::MIN_BLOCKS) attn_bwd_dkdv_kernel(const attn_bwd_params p) {
  constexpr bool IS_BF16 = attn_bwd_is_bf16<T>::value;
  constexpr int BLOCK = Cfg::BLOCK;
  using key_tile = typename Cfg::key_tile;
  using value_tile = typename Cfg::value_tile;
  using score_tile = typename Cfg::score_tile;
  extern __shared__ __align__(16) unsigned char attn_bwd_smem[];
  unsigned char* smem = attn_bwd_smem;
  const uint32_t smem_base = smem_u32(smem);
  const float* row_lse = reinterpret_cast<const float*>(smem + Cfg::LSE);
  const float* row_dots = reinterpret_cast<const float*>(smem + Cfg::ROW_DOTS);
  const int* row_first = reinterpret_cast<const int*>(smem + Cfg::KEY_FIRST);
  const int* row_last = reinterpret_cast<const int*>(smem + Cfg::KEY_LAST);

  const int n_tiles = (p.seqlen_k + BLOCK - 1) / BLOCK;
  const int n_tile = blockIdx.x % n_tiles, kv_head = blockIdx.x / n_tiles % p.heads_kv,
            b = blockIdx.x / n_tiles / p.heads_kv;
  const attn_bwd_sequence s = attn_bwd_sequence_of(p, b);
  const int n0 = n_tile * BLOCK;
  if (n0 >= s.seqlen_k) return; /* keys past the used ones are not written */
  const int valid_keys = min(BLOCK, s.seqlen_k - n0);

  const int lane = static_cast<int>(threadIdx.x % 32);
  const int warp = warp_index_uniform();
  const int warp_row0 = (warp / Cfg::WARPS_COLS) * ATTN_BWD_MMA_M;          /* keys of the warp */
  const int warp_query0 = (warp % Cfg::WARPS_COLS) * (BLOCK / Cfg::WARPS_COLS); /* queries of its Sᵀ */
  const int warp_dk_col0 = (warp % Cfg::WARPS_COLS) * (Cfg::HEAD_DIM / Cfg::WARPS_COLS);
  const int warp_dv_col0 = (warp % Cfg::WARPS_COLS) * (Cfg::HEAD_DIM_V / Cfg::WARPS_COLS);

  const uint16_t* k_data = static_cast<const uint16_t*>(p.k.data);
  const uint16_t* v_data = static_cast<const uint16_t*>(p.v.data);
  attn_bwd_copy_tile<key_tile, Cfg::THREADS>(smem_base + Cfg::K, k_data, valid_keys, p.head_dim,
                                             [&](int r) { return attn_bwd_key_offset(p, p.k, s, b, n0 + r, kv_head); });
  attn_bwd_copy_tile<value_tile, Cfg::THREADS>(smem_base + Cfg::V, v_data, valid_keys, p.head_dim_v,
                                               [&](int r) { return attn_bwd_key_offset(p, p.v, s, b, n0 + r, kv_head); });
  cp_async_commit_group(); /* waited for with the first query block's tiles */

  float dk[Cfg::GRAD_TILES][4], dv[Cfg::GRAD_V_TILES][4];
  attn_bwd_zero(dk);
  attn_bwd_zero(dv);

  const uint16_t* q_data = static_cast<const uint16_t*>(p.q.data);
  const uint16_t* dout_data = static_cast<const uint16_t*>(p.dout.data);
  for (int head = kv_head * p.group; head < (kv_head + 1) * p.group; ++head) {
    for (int m0 = 0; m0 < s.seqlen_q; m0 += BLOCK) {
      const int valid_rows = min(BLOCK, s.seqlen_q - m0);
      const int r = static_cast<int>(threadIdx.x);
      int first = 0, last = -1, sees = 0;
      if (r < valid_rows) {
        attn_bwd_key_range(p, s, m0 + r, first, last);
        sees = first <= last && last >= n0 && first < n0 + valid_keys;
      }
      /* (the barrier also ends the previous block's reads of Q, dO, P, dS and the row info) */
      if (!__syncthreads_or(sees)) continue;
      attn_bwd_copy_tile<key_tile, Cfg::THREADS>(smem_base + Cfg::Q, q_data, valid_rows, p.head_dim,
                                                 [&](int row) { return attn_bwd_query_offset(p, p.q, s, b, m0 + row, head); });
      attn_bwd_copy_tile<value_tile, Cfg::THREADS>(
          smem_base + Cfg::DOUT, dout_data, valid_rows, p.head_dim_v,
          [&](int row) { return attn_bwd_query_offset(p, p.dout, s, b, m0 + row, head); });
      cp_async_commit_group();
      if (r < BLOCK) attn_bwd_store_row_info<Cfg>(p, s, smem, b, head, m0, valid_rows, r, first, last);
      cp_async_wait_group<0>();
      __syncthreads();

      /* Sᵀ (keys × queries) and dPᵀ for the warp's 16 keys and BLOCK/2 queries. */
      float score_dot[Cfg::SCORE_TILES][4], dprob[Cfg::SCORE_TILES][4];
      attn_bwd_score_products<IS_BF16, Cfg>(score_dot, dprob, smem_base + Cfg::K, smem_base + Cfg::V, warp_row0,
                                            smem_base + Cfg::Q, smem_base + Cfg::DOUT, warp_query0, lane);

      /* Pᵀ, dSᵀ: accumulator pairs (c0, c1) and (c2, c3) are two adjacent queries of one key,
       * stored as one 16-bit pair at [key][query]. */
#pragma unroll
      for (int t = 0; t < Cfg::SCORE_TILES; ++t) {
        const int query = warp_query0 + attn_bwd_acc_col(lane, t, 0);
        const float2 lse = *reinterpret_cast<const float2*>(row_lse + query);
        const float2 row_dot = *reinterpret_cast<const float2*>(row_dots + query);
        const int2 first2 = *reinterpret_cast<const int2*>(row_first + query);
        const int2 last2 = *reinterpret_cast<const int2*>(row_last + query);
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int key_local = warp_row0 + attn_bwd_acc_row(lane, 2 * half);
          const int key = n0 + key_local;
          float prob0, prob1, dscore0, dscore1;
          attn_bwd_gradient_element(p, score_dot[t][2 * half], dprob[t][2 * half], lse.x, row_dot.x, key, first2.x,
                                    last2.x, prob0, dscore0);
          attn_bwd_gradient_element(p, score_dot[t][2 * half + 1], dprob[t][2 * half + 1], lse.y, row_dot.y, key,
                                    first2.y, last2.y, prob1, dscore1);
          *reinterpret_cast<uint32_t*>(smem + Cfg::PROBS + score_tile::offset(key_local, query)) =
              attn_bwd_pack<IS_BF16>(prob0, prob1);
          *reinterpret_cast<uint32_t*>(smem + Cfg::DSCORES + score_tile::offset(key_local, query)) =
              attn_bwd_pack<IS_BF16>(dscore0, dscore1);
        }
      }
      __syncthreads();

      /* dV += Pᵀ·dO, dK += dSᵀ·Q over the block's queries (k = queries, ascending). */
      attn_bwd_warp_mma_ab<IS_BF16, Cfg::GRAD_V_TILES, BLOCK / ATTN_BWD_MMA_K, score_tile, value_tile>(
          dv, smem_base + Cfg::PROBS, warp_row0, smem_base + Cfg::DOUT, warp_dv_col0, lane);
      attn_bwd_warp_mma_ab<IS_BF16, Cfg::GRAD_TILES, BLOCK / ATTN_BWD_MMA_K, score_tile, key_tile>(
          dk, smem_base + Cfg::DSCORES, warp_row0, smem_base + Cfg::Q, warp_dk_col0, lane);
    }
  }
  cp_async_wait_group<0>(); /* no K/V copy in flight when no query block was visible */

  T* dk_out = static_cast<T*>(const_cast<void*>(p.dk.data));
  T* dv_out = static_cast<T*>(const_cast<void*>(p.dv.data));
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int key_local = warp_row0 + attn_bwd_acc_row(lane, 2 * half);
    if (key_local >= valid_keys) continue;
    const int64_t dk_row = attn_bwd_key_offset(p, p.dk, s, b, n0 + key_local, kv_head);
    const int64_t dv_row = attn_bwd_key_offset(p, p.dv, s, b, n0 + key_local, kv_head);
#pragma unroll
    for (int t = 0; t < Cfg::GRAD_TILES; ++t)
      attn_bwd_store_columns(dk_out, dk_row, warp_dk_col0 + attn_bwd_acc_col(lane, t, 0), p.head_dim,
                             p.softmax_scale * dk[t][2 * half], p.softmax_scale * dk[t][2 * half + 1]);
#pragma unroll
    for (int t = 0; t < Cfg::GRAD_V_TILES; ++t)
      attn_bwd_store_columns(dv_out, dv_row, warp_dv_col0 + attn_bwd_acc_col(lane, t, 0), p.head_dim_v,
                             dv[t][2 * half], dv[t][2 * half + 1]);
  }
}

/* dq of one query block of one head. Grid: query blocks × heads × batch. */
template <typename T, class Cfg>
__global__ void __launch_bounds__(Cfg::THREADS, Cfg::MIN_BLOCKS) attn_bwd_dq_kernel(const attn_bwd_params p) {
  constexpr bool IS_BF16 = attn_bwd_is_bf16<T>::value;
  constexpr int BLOCK = Cfg::BLOCK;
  using key_tile = typename Cfg::key_tile;
  using value_tile = typename Cfg::value_tile;
  using score_tile = typename Cfg::score_tile;
  extern __shared__ __align__(16) unsigned char attn_bwd_smem[];
  unsigned char* smem = attn_bwd_smem;
  const uint32_t smem_base = smem_u32(smem);
  int& block_key_first = reinterpret_cast<int*>(smem + Cfg::BLOCK_KEY_RANGE)[0];
  int& block_key_last = reinterpret_cast<int*>(smem + Cfg::BLOCK_KEY_RANGE)[1];

  const int m_tiles = (p.seqlen_q + BLOCK - 1) / BLOCK;
  const int m_tile = blockIdx.x % m_tiles, head = blockIdx.x / m_tiles % p.heads_q,
            b = blockIdx.x / m_tiles / p.heads_q;
  const int kv_head = head / p.group;
  const attn_bwd_sequence s = attn_bwd_sequence_of(p, b);
  const int m0 = m_tile * BLOCK;
  if (m0 >= s.seqlen_q) return; /* rows past the used ones are not written */
  const int valid_rows = min(BLOCK, s.seqlen_q - m0);

  const int lane = static_cast<int>(threadIdx.x % 32);
  const int warp = warp_index_uniform();
  const int warp_row0 = (warp / Cfg::WARPS_COLS) * ATTN_BWD_MMA_M;            /* queries of the warp */
  const int warp_key0 = (warp % Cfg::WARPS_COLS) * (BLOCK / Cfg::WARPS_COLS);  /* keys of its S */
  const int warp_dq_col0 = (warp % Cfg::WARPS_COLS) * (Cfg::HEAD_DIM / Cfg::WARPS_COLS);

  attn_bwd_copy_tile<key_tile, Cfg::THREADS>(smem_base + Cfg::Q, static_cast<const uint16_t*>(p.q.data), valid_rows,
                                             p.head_dim,
                                             [&](int r) { return attn_bwd_query_offset(p, p.q, s, b, m0 + r, head); });
  attn_bwd_copy_tile<value_tile, Cfg::THREADS>(
      smem_base + Cfg::DOUT, static_cast<const uint16_t*>(p.dout.data), valid_rows, p.head_dim_v,
      [&](int r) { return attn_bwd_query_offset(p, p.dout, s, b, m0 + r, head); });
  cp_async_commit_group(); /* waited for with the first key block's tiles */
  if (threadIdx.x == 0) block_key_first = 0x7fffffff, block_key_last = -1;
  __syncthreads();
  if (static_cast<int>(threadIdx.x) < BLOCK) { /* the rows' info and the keys any row of the block sees */
    const int r = static_cast<int>(threadIdx.x);
    int first = 0, last = -1;
    if (r < valid_rows) {
      attn_bwd_key_range(p, s, m0 + r, first, last);
      if (first <= last) atomicMin(&block_key_first, first), atomicMax(&block_key_last, last);
    }
    attn_bwd_store_row_info<Cfg>(p, s, smem, b, head, m0, valid_rows, r, first, last);
  }
  __syncthreads();
  const int first_key = block_key_first, last_key = block_key_last;

  /* The thread's two accumulator rows (c0, c1: row g; c2, c3: row g + 8). */
  float lse[2], row_dot[2];
  int first[2], last[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int r = warp_row0 + attn_bwd_acc_row(lane, 2 * half);
    lse[half] = reinterpret_cast<const float*>(smem + Cfg::LSE)[r];
    row_dot[half] = reinterpret_cast<const float*>(smem + Cfg::ROW_DOTS)[r];
    first[half] = reinterpret_cast<const int*>(smem + Cfg::KEY_FIRST)[r];
    last[half] = reinterpret_cast<const int*>(smem + Cfg::KEY_LAST)[r];
  }

  float dq[Cfg::GRAD_TILES][4];
  attn_bwd_zero(dq);

  const uint16_t* k_data = static_cast<const uint16_t*>(p.k.data);
  const uint16_t* v_data = static_cast<const uint16_t*>(p.v.data);
  if (first_key <= last_key) {
    for (int n0 = first_key / BLOCK * BLOCK; n0 <= last_key; n0 += BLOCK) {
      const int valid_keys = min(BLOCK, s.seqlen_k - n0);
      __syncthreads(); /* the previous key block's reads of K, V and dS are done */
      attn_bwd_copy_tile<key_tile, Cfg::THREADS>(smem_base + Cfg::K, k_data, valid_keys, p.head_dim,
                                                 [&](int r) { return attn_bwd_key_offset(p, p.k, s, b, n0 + r, kv_head); });
      attn_bwd_copy_tile<value_tile, Cfg::THREADS>(smem_base + Cfg::V, v_data, valid_keys, p.head_dim_v,
                                                   [&](int r) { return attn_bwd_key_offset(p, p.v, s, b, n0 + r, kv_head); });
      cp_async_commit_group();
      cp_async_wait_group<0>();
      __syncthreads();

      /* S (queries × keys) and dP for the warp's 16 queries and BLOCK/2 keys. */
      float score_dot[Cfg::SCORE_TILES][4], dprob[Cfg::SCORE_TILES][4];
      attn_bwd_score_products<IS_BF16, Cfg>(score_dot, dprob, smem_base + Cfg::Q, smem_base + Cfg::DOUT, warp_row0,
                                            smem_base + Cfg::K, smem_base + Cfg::V, warp_key0, lane);

      /* dS: accumulator pairs are two adjacent keys of one query, one 16-bit pair at [query][key]. */
#pragma unroll
      for (int t = 0; t < Cfg::SCORE_TILES; ++t) {
        const int key_local = warp_key0 + attn_bwd_acc_col(lane, t, 0);
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int row_local = warp_row0 + attn_bwd_acc_row(lane, 2 * half);
          float prob, dscore0, dscore1;
          attn_bwd_gradient_element(p, score_dot[t][2 * half], dprob[t][2 * half], lse[half], row_dot[half],
                                    n0 + key_local, first[half], last[half], prob, dscore0);
          attn_bwd_gradient_element(p, score_dot[t][2 * half + 1], dprob[t][2 * half + 1], lse[half], row_dot[half],
                                    n0 + key_local + 1, first[half], last[half], prob, dscore1);
          *reinterpret_cast<uint32_t*>(smem + Cfg::DSCORES + score_tile::offset(row_local, key_local)) =
              attn_bwd_pack<IS_BF16>(dscore0, dscore1);
        }
      }
      __syncthreads();

      /* dQ += dS·K over the block's keys (k = keys, ascending). */
      attn_bwd_warp_mma_ab<IS_BF16, Cfg::GRAD_TILES, BLOCK / ATTN_BWD_MMA_K, score_tile, key_tile>(
          dq, smem_base + Cfg::DSCORES, warp_row0, smem_base + Cfg::K, warp_dq_col0, lane);
    }
  }
  cp_async_wait_group<0>(); /* no Q/dO copy in flight when no key block was visible */

  T* dq_out = static_cast<T*>(const_cast<void*>(p.dq.data));
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row_local = warp_row0 + attn_bwd_acc_row(lane, 2 * half);
    if (row_local >= valid_rows) continue;
    const int64_t dq_row = attn_bwd_query_offset(p, p.dq, s, b, m0 + row_local, head);
#pragma unroll
    for (int t = 0; t < Cfg::GRAD_TILES; ++t)
      attn_bwd_store_columns(dq_out, dq_row, warp_dq_col0 + attn_bwd_acc_col(lane, t, 0), p.head_dim,
                             p.softmax_scale * dq[t][2 * half], p.softmax_scale * dq[t][2 * half + 1]);
  }
}

#endif
