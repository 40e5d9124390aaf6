/*
 * attn_bwd_kernel.cuh — the attention backward on CUDA cores (portable: sm_80 and newer),
 * deterministic by construction, with the CPU backend's semantics (src/cpu/attn_math.inc):
 *   P = exp(s − lse),  D_i = dout_i · o_i,  dS = P ∘ (dout·vᵀ − D) (∘ 1 − (s/c)² under a
 *   softcap c),  dq = scale · dS·k,  dk = scale · dSᵀ·q,  dv = Pᵀ·dout,
 * where s = scale·q·k (or c·tanh(scale·q·k / c)), masks, GQA, varlen and seqused as in the
 * forward. Three kernels on the caller's stream:
 *   attn_bwd_row_dots_kernel   D for every (query row, head) into the workspace;
 *   attn_bwd_dkdv_kernel       one CTA per (key block, KV head, sequence): loops over the
 *                              group's query heads and the query blocks that see the key
 *                              block, accumulating dk, dv in registers (no atomics);
 *   attn_bwd_dq_kernel         one CTA per (query block, head, sequence): loops over the key
 *                              blocks its rows see, accumulating dq in registers.
 * S, P and dP are recomputed in both of the last two (7 block products where FlashAttention
 * needs 5): the price of determinism without atomics. Tiles of 32 × 32 in shared memory
 * (fp32, rows padded by one word against bank conflicts), 256 threads; head dims up to 256.
 * This is the correct-everywhere path, not the fast one: a Hopper WGMMA backward is the next
 * step (docs/NOTES-attn-fwd.md).
 * Check: tests/gpu/gpu_attn_bwd (tests/cpu_attn_bwd.c built against a CUDA handle: finite
 * differences in fp32, the fp64 oracle under DESIGN §6, bitwise reruns).
 */
#ifndef FLASHC_KERNELS_ATTN_BWD_KERNEL_CUH
#define FLASHC_KERNELS_ATTN_BWD_KERNEL_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>

constexpr int ATTN_BWD_BLOCK_M = 32; /* query rows per tile */
constexpr int ATTN_BWD_BLOCK_N = 32; /* keys per tile */
constexpr int ATTN_BWD_THREADS = 256;
constexpr int ATTN_BWD_MAX_HEAD_DIM = 256;
/* Accumulator elements per thread: a 32-row tile of up to 256 columns over 256 threads. */
constexpr int ATTN_BWD_ACCUMULATORS = ATTN_BWD_BLOCK_N * ATTN_BWD_MAX_HEAD_DIM / ATTN_BWD_THREADS;
static_assert(ATTN_BWD_BLOCK_M == ATTN_BWD_BLOCK_N, "the dq and dk/dv accumulators share one size");
static_assert(ATTN_BWD_BLOCK_M <= ATTN_BWD_THREADS, "one thread per query row of a tile for the row setup");

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

/* Shared-memory layout of one CTA (floats; row strides padded by one). */
struct attn_bwd_smem_layout {
  int q_stride, dout_stride, k_stride, v_stride, tile_stride;
  int q, dout, k, v, probs, dscores, lse, row_dots, end;
};

static __host__ __device__ inline attn_bwd_smem_layout attn_bwd_layout(int head_dim, int head_dim_v) {
  attn_bwd_smem_layout l;
  l.q_stride = head_dim + 1, l.dout_stride = head_dim_v + 1;
  l.k_stride = head_dim + 1, l.v_stride = head_dim_v + 1, l.tile_stride = ATTN_BWD_BLOCK_N + 1;
  l.q = 0;
  l.dout = l.q + ATTN_BWD_BLOCK_M * l.q_stride;
  l.k = l.dout + ATTN_BWD_BLOCK_M * l.dout_stride;
  l.v = l.k + ATTN_BWD_BLOCK_N * l.k_stride;
  l.probs = l.v + ATTN_BWD_BLOCK_N * l.v_stride;
  l.dscores = l.probs + ATTN_BWD_BLOCK_M * l.tile_stride;
  l.lse = l.dscores + ATTN_BWD_BLOCK_M * l.tile_stride;
  l.row_dots = l.lse + ATTN_BWD_BLOCK_M;
  l.end = l.row_dots + ATTN_BWD_BLOCK_M;
  return l;
}

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

static __device__ __forceinline__ float attn_bwd_load(const float* data, int64_t i) { return data[i]; }
static __device__ __forceinline__ float attn_bwd_load(const __half* data, int64_t i) { return __half2float(data[i]); }
static __device__ __forceinline__ float attn_bwd_load(const __nv_bfloat16* data, int64_t i) { return __bfloat162float(data[i]); }
static __device__ __forceinline__ void attn_bwd_store(float* data, int64_t i, float v) { data[i] = v; }
static __device__ __forceinline__ void attn_bwd_store(__half* data, int64_t i, float v) { data[i] = __float2half_rn(v); }
static __device__ __forceinline__ void attn_bwd_store(__nv_bfloat16* data, int64_t i, float v) { data[i] = __float2bfloat16_rn(v); }

/* Rows [row0, row0 + tile_rows) of `head` into a shared tile (fp32), zeros past `valid_rows`;
 * consecutive threads read consecutive columns. */
template <typename T, bool KeySide>
static __device__ __forceinline__ void attn_bwd_load_tile(const attn_bwd_params& p, const attn_bwd_tensor& t,
                                                          const attn_bwd_sequence& s, int b, int head, int row0,
                                                          int valid_rows, int columns, float* tile, int tile_stride,
                                                          int tile_rows) {
  const T* data = static_cast<const T*>(t.data);
  for (int idx = threadIdx.x; idx < tile_rows * columns; idx += ATTN_BWD_THREADS) {
    const int r = idx / columns, c = idx % columns;
    float value = 0.0f;
    if (r < valid_rows) {
      const int64_t offset = KeySide ? attn_bwd_key_offset(p, t, s, b, row0 + r, head)
                                     : attn_bwd_query_offset(p, t, s, b, row0 + r, head);
      value = attn_bwd_load(data, offset + c);
    }
    tile[r * tile_stride + c] = value;
  }
}

/* P and dS of one (query tile, key tile) pair into shared memory, from
 * the Q, dO, K, V tiles and the rows' lse and D already there. Entries a row does not see
 * (mask, past the sequence, or a row the forward saw empty) are 0. */
static __device__ __forceinline__ void attn_bwd_tile_gradients(const attn_bwd_params& p, const attn_bwd_sequence& s,
                                                               const attn_bwd_smem_layout& l, float* smem, int m0,
                                                               int valid_rows, int n0, int valid_keys) {
  for (int idx = threadIdx.x; idx < ATTN_BWD_BLOCK_M * ATTN_BWD_BLOCK_N; idx += ATTN_BWD_THREADS) {
    const int r = idx / ATTN_BWD_BLOCK_N, j = idx % ATTN_BWD_BLOCK_N;
    float prob = 0.0f, score = 0.0f, dscore = 0.0f;
    if (r < valid_rows && j < valid_keys) {
      int first, last;
      attn_bwd_key_range(p, s, m0 + r, first, last);
      const float lse = smem[l.lse + r];
      if (n0 + j >= first && n0 + j <= last && lse != -INFINITY) {
        const float* q_row = smem + l.q + r * l.q_stride;
        const float* k_row = smem + l.k + j * l.k_stride;
        float dot = 0.0f;
        for (int e = 0; e < p.head_dim; ++e) dot = fmaf(q_row[e], k_row[e], dot);
        score = p.softmax_scale * dot;
        if (p.softcap > 0.0f) score = p.softcap * tanhf(score / p.softcap);
        prob = expf(score - lse);
        const float* dout_row = smem + l.dout + r * l.dout_stride;
        const float* v_row = smem + l.v + j * l.v_stride;
        float dprob = 0.0f;
        for (int e = 0; e < p.head_dim_v; ++e) dprob = fmaf(dout_row[e], v_row[e], dprob);
        dscore = prob * (dprob - smem[l.row_dots + r]);
        if (p.softcap > 0.0f) {
          const float tanh_value = score / p.softcap;
          dscore *= 1.0f - tanh_value * tanh_value;
        }
      }
    }
    smem[l.probs + r * l.tile_stride + j] = prob;
    smem[l.dscores + r * l.tile_stride + j] = dscore;
  }
}

/* The rows' lse (from the forward) and D (from the workspace) of a query tile of `head`. */
static __device__ __forceinline__ void attn_bwd_load_row_stats(const attn_bwd_params& p, const attn_bwd_sequence& s,
                                                               const attn_bwd_smem_layout& l, float* smem, int b,
                                                               int head, int m0, int valid_rows) {
  for (int r = threadIdx.x; r < ATTN_BWD_BLOCK_M; r += ATTN_BWD_THREADS) {
    smem[l.lse + r] = r < valid_rows ? p.lse[attn_bwd_lse_index(p, s, b, head, m0 + r)] : -INFINITY;
    smem[l.row_dots + r] = r < valid_rows ? p.row_dots[attn_bwd_row_dot_index(p, s, b, head, m0 + r)] : 0.0f;
  }
}

/* D_i = dout_i · o_i for every used row: one thread per row, accumulated in the order of the
 * dP = dout·v dot products of attn_bwd_tile_gradients (ascending e, fmaf). The same order
 * matters where dP − D cancels exactly: with one visible key O = V, and a different
 * summation order would leave rounding noise where dS is 0 (the CPU backend sums both
 * sequentially too). Grid: query tiles × heads × batch; D is a negligible part of the work. */
template <typename T>
__global__ void __launch_bounds__(ATTN_BWD_THREADS) attn_bwd_row_dots_kernel(const attn_bwd_params p) {
  const int m_tiles = (p.seqlen_q + ATTN_BWD_BLOCK_M - 1) / ATTN_BWD_BLOCK_M;
  const int m_tile = blockIdx.x % m_tiles, head = blockIdx.x / m_tiles % p.heads_q,
            b = blockIdx.x / m_tiles / p.heads_q;
  const attn_bwd_sequence s = attn_bwd_sequence_of(p, b);
  const int row = m_tile * ATTN_BWD_BLOCK_M + static_cast<int>(threadIdx.x);
  if (threadIdx.x >= ATTN_BWD_BLOCK_M || row >= s.seqlen_q) return;
  const T* dout = static_cast<const T*>(p.dout.data) + attn_bwd_query_offset(p, p.dout, s, b, row, head);
  const T* o = static_cast<const T*>(p.o.data) + attn_bwd_query_offset(p, p.o, s, b, row, head);
  float dot = 0.0f;
  for (int e = 0; e < p.head_dim_v; ++e) dot = fmaf(attn_bwd_load(dout, e), attn_bwd_load(o, e), dot);
  p.row_dots[attn_bwd_row_dot_index(p, s, b, head, row)] = dot;
}

/* dk, dv of one key tile of one KV head. Grid: key tiles × KV heads × batch. */
template <typename T>
__global__ void __launch_bounds__(ATTN_BWD_THREADS) attn_bwd_dkdv_kernel(const attn_bwd_params p) {
  extern __shared__ float attn_bwd_smem[];
  float* smem = attn_bwd_smem;
  const attn_bwd_smem_layout l = attn_bwd_layout(p.head_dim, p.head_dim_v);
  const int n_tiles = (p.seqlen_k + ATTN_BWD_BLOCK_N - 1) / ATTN_BWD_BLOCK_N;
  const int n_tile = blockIdx.x % n_tiles, kv_head = blockIdx.x / n_tiles % p.heads_kv,
            b = blockIdx.x / n_tiles / p.heads_kv;
  const attn_bwd_sequence s = attn_bwd_sequence_of(p, b);
  const int n0 = n_tile * ATTN_BWD_BLOCK_N;
  if (n0 >= s.seqlen_k) return; /* keys past the used ones are not written */
  const int valid_keys = min(ATTN_BWD_BLOCK_N, s.seqlen_k - n0);
  attn_bwd_load_tile<T, true>(p, p.k, s, b, kv_head, n0, valid_keys, p.head_dim, smem + l.k, l.k_stride, ATTN_BWD_BLOCK_N);
  attn_bwd_load_tile<T, true>(p, p.v, s, b, kv_head, n0, valid_keys, p.head_dim_v, smem + l.v, l.v_stride, ATTN_BWD_BLOCK_N);

  float dk[ATTN_BWD_ACCUMULATORS], dv[ATTN_BWD_ACCUMULATORS];
#pragma unroll
  for (int a = 0; a < ATTN_BWD_ACCUMULATORS; ++a) dk[a] = dv[a] = 0.0f;

  for (int head = kv_head * p.group; head < (kv_head + 1) * p.group; ++head) {
    for (int m0 = 0; m0 < s.seqlen_q; m0 += ATTN_BWD_BLOCK_M) {
      const int valid_rows = min(ATTN_BWD_BLOCK_M, s.seqlen_q - m0);
      int sees = 0;
      if (threadIdx.x < valid_rows) {
        int first, last;
        attn_bwd_key_range(p, s, m0 + threadIdx.x, first, last);
        sees = first <= last && last >= n0 && first < n0 + valid_keys;
      }
      if (!__syncthreads_or(sees)) continue; /* (the barrier also ends the previous tile's reads) */
      attn_bwd_load_tile<T, false>(p, p.q, s, b, head, m0, valid_rows, p.head_dim, smem + l.q, l.q_stride, ATTN_BWD_BLOCK_M);
      attn_bwd_load_tile<T, false>(p, p.dout, s, b, head, m0, valid_rows, p.head_dim_v, smem + l.dout, l.dout_stride,
                                   ATTN_BWD_BLOCK_M);
      attn_bwd_load_row_stats(p, s, l, smem, b, head, m0, valid_rows);
      __syncthreads();
      attn_bwd_tile_gradients(p, s, l, smem, m0, valid_rows, n0, valid_keys);
      __syncthreads();
      /* dk[j][e] += Σ_r dS[r][j]·q[r][e];  dv[j][e] += Σ_r P[r][j]·dout[r][e] (rows ascending) */
#pragma unroll
      for (int a = 0; a < ATTN_BWD_ACCUMULATORS; ++a) {
        const int idx = threadIdx.x + a * ATTN_BWD_THREADS;
        if (idx < ATTN_BWD_BLOCK_N * p.head_dim) {
          const int j = idx / p.head_dim, e = idx % p.head_dim;
          float sum = dk[a];
          for (int r = 0; r < valid_rows; ++r)
            sum = fmaf(smem[l.dscores + r * l.tile_stride + j], smem[l.q + r * l.q_stride + e], sum);
          dk[a] = sum;
        }
        if (idx < ATTN_BWD_BLOCK_N * p.head_dim_v) {
          const int j = idx / p.head_dim_v, e = idx % p.head_dim_v;
          float sum = dv[a];
          for (int r = 0; r < valid_rows; ++r)
            sum = fmaf(smem[l.probs + r * l.tile_stride + j], smem[l.dout + r * l.dout_stride + e], sum);
          dv[a] = sum;
        }
      }
    }
  }

  T* dk_out = static_cast<T*>(const_cast<void*>(p.dk.data));
  T* dv_out = static_cast<T*>(const_cast<void*>(p.dv.data));
#pragma unroll
  for (int a = 0; a < ATTN_BWD_ACCUMULATORS; ++a) {
    const int idx = threadIdx.x + a * ATTN_BWD_THREADS;
    if (idx < ATTN_BWD_BLOCK_N * p.head_dim) {
      const int j = idx / p.head_dim, e = idx % p.head_dim;
      if (j < valid_keys)
        attn_bwd_store(dk_out, attn_bwd_key_offset(p, p.dk, s, b, n0 + j, kv_head) + e, p.softmax_scale * dk[a]);
    }
    if (idx < ATTN_BWD_BLOCK_N * p.head_dim_v) {
      const int j = idx / p.head_dim_v, e = idx % p.head_dim_v;
      if (j < valid_keys) attn_bwd_store(dv_out, attn_bwd_key_offset(p, p.dv, s, b, n0 + j, kv_head) + e, dv[a]);
    }
  }
}

/* dq of one query tile of one head. Grid: query tiles × heads × batch. */
template <typename T>
__global__ void __launch_bounds__(ATTN_BWD_THREADS) attn_bwd_dq_kernel(const attn_bwd_params p) {
  extern __shared__ float attn_bwd_smem[];
  float* smem = attn_bwd_smem;
  __shared__ int key_first, key_last;
  const attn_bwd_smem_layout l = attn_bwd_layout(p.head_dim, p.head_dim_v);
  const int m_tiles = (p.seqlen_q + ATTN_BWD_BLOCK_M - 1) / ATTN_BWD_BLOCK_M;
  const int m_tile = blockIdx.x % m_tiles, head = blockIdx.x / m_tiles % p.heads_q,
            b = blockIdx.x / m_tiles / p.heads_q;
  const int kv_head = head / p.group;
  const attn_bwd_sequence s = attn_bwd_sequence_of(p, b);
  const int m0 = m_tile * ATTN_BWD_BLOCK_M;
  if (m0 >= s.seqlen_q) return; /* rows past the used ones are not written */
  const int valid_rows = min(ATTN_BWD_BLOCK_M, s.seqlen_q - m0);
  if (threadIdx.x == 0) key_first = 0x7fffffff, key_last = -1;
  attn_bwd_load_tile<T, false>(p, p.q, s, b, head, m0, valid_rows, p.head_dim, smem + l.q, l.q_stride, ATTN_BWD_BLOCK_M);
  attn_bwd_load_tile<T, false>(p, p.dout, s, b, head, m0, valid_rows, p.head_dim_v, smem + l.dout, l.dout_stride,
                               ATTN_BWD_BLOCK_M);
  attn_bwd_load_row_stats(p, s, l, smem, b, head, m0, valid_rows);
  __syncthreads();
  if (threadIdx.x < valid_rows) { /* the keys any row of the tile sees */
    int first, last;
    attn_bwd_key_range(p, s, m0 + threadIdx.x, first, last);
    if (first <= last) atomicMin(&key_first, first), atomicMax(&key_last, last);
  }
  __syncthreads();
  const int first_key = key_first, last_key = key_last;

  float dq[ATTN_BWD_ACCUMULATORS];
#pragma unroll
  for (int a = 0; a < ATTN_BWD_ACCUMULATORS; ++a) dq[a] = 0.0f;
  if (first_key <= last_key) {
    for (int n0 = first_key / ATTN_BWD_BLOCK_N * ATTN_BWD_BLOCK_N; n0 <= last_key; n0 += ATTN_BWD_BLOCK_N) {
      const int valid_keys = min(ATTN_BWD_BLOCK_N, s.seqlen_k - n0);
      __syncthreads(); /* the previous key tile's reads are done */
      attn_bwd_load_tile<T, true>(p, p.k, s, b, kv_head, n0, valid_keys, p.head_dim, smem + l.k, l.k_stride,
                                  ATTN_BWD_BLOCK_N);
      attn_bwd_load_tile<T, true>(p, p.v, s, b, kv_head, n0, valid_keys, p.head_dim_v, smem + l.v, l.v_stride,
                                  ATTN_BWD_BLOCK_N);
      __syncthreads();
      attn_bwd_tile_gradients(p, s, l, smem, m0, valid_rows, n0, valid_keys);
      __syncthreads();
      /* dq[r][e] += Σ_j dS[r][j]·k[j][e] (keys ascending) */
#pragma unroll
      for (int a = 0; a < ATTN_BWD_ACCUMULATORS; ++a) {
        const int idx = threadIdx.x + a * ATTN_BWD_THREADS;
        if (idx < ATTN_BWD_BLOCK_M * p.head_dim) {
          const int r = idx / p.head_dim, e = idx % p.head_dim;
          float sum = dq[a];
          for (int j = 0; j < valid_keys; ++j)
            sum = fmaf(smem[l.dscores + r * l.tile_stride + j], smem[l.k + j * l.k_stride + e], sum);
          dq[a] = sum;
        }
      }
    }
  }

  T* dq_out = static_cast<T*>(const_cast<void*>(p.dq.data));
#pragma unroll
  for (int a = 0; a < ATTN_BWD_ACCUMULATORS; ++a) {
    const int idx = threadIdx.x + a * ATTN_BWD_THREADS;
    if (idx < ATTN_BWD_BLOCK_M * p.head_dim) {
      const int r = idx / p.head_dim, e = idx % p.head_dim;
      if (r < valid_rows)
        attn_bwd_store(dq_out, attn_bwd_query_offset(p, p.dq, s, b, m0 + r, head) + e, p.softmax_scale * dq[a]);
    }
  }
}

#endif
