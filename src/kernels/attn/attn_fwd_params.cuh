/*
 * attn_fwd_params.cuh — the Hopper attention forward kernel's one parameter: a flat struct
 * with the TMA tensor maps of Q, K, V, explicit element strides for O and LSE, the sequence
 * description (fixed lengths or cu_seqlens / seqused, device pointers) and the resolved
 * softmax constants. Filled by attn_fwd_launch.cu from a validated fc_attn_problem.
 */
#ifndef FLASHC_KERNELS_ATTN_FWD_PARAMS_CUH
#define FLASHC_KERNELS_ATTN_FWD_PARAMS_CUH

#include <cuda.h>
#include <stdint.h>

#include "kernels/attn/attn_fwd_timeline.h"

struct attn_fwd_params {
  /* K, V: 4-D maps (d, rows, heads, batch), innermost first. With cu_seqlens the rows are the
   * packed total and the batch extent is 1 (coordinate 0). Rows past the extent read as 0.
   * Q: 5-D (d, heads in a pack, rows, packs, batch); a box of 2^pack_shift heads × BLOCK_M /
   * 2^pack_shift rows lands as tile rows (row · 2^pack_shift + head in pack). */
  CUtensorMap map_q;
  CUtensorMap map_k;
  CUtensorMap map_v;
  /* O as Q's 5-D layout with a box of one consumer's 64 rows × one swizzle span, valid when
   * o_tma_store: the epilogue stores O from its staging buffer with TMA (fixed lengths only). */
  CUtensorMap map_o;
  int o_tma_store;

  void* o;
  int64_t o_batch_stride, o_row_stride, o_head_stride; /* elements; batch unused with cu_seqlens_q */
  float* lse;                                          /* NULL: not written */
  int64_t lse_batch_stride, lse_head_stride;

  const int32_t* cu_seqlens_q; /* NULL: fixed length */
  const int32_t* cu_seqlens_k;
  const int32_t* seqused_q; /* NULL: the whole sequence */
  const int32_t* seqused_k;
  int batch, heads_q, heads_kv;
  int heads_per_kv;  /* heads_q / heads_kv */
  /* Pack-GQA: a tile's rows are (query row, query head) pairs of the 2^pack_shift query heads
   * that share a KV head (pack_shift = log2(heads_per_kv)), so short queries fill the tile and
   * K/V are read once per KV head. 0: one query head per tile. */
  int pack_shift;
  int tile_heads;    /* head slots per batch in the tile index: heads_q >> pack_shift */
  int seqlen_q, seqlen_k; /* fixed lengths, or the maxima with cu_seqlens */
  int m_blocks;           /* ceil((seqlen_q << pack_shift) / BLOCK_M) */
  int tile_count;         /* m_blocks · tile_heads · batch · num_splits */
  int reverse_m_order;    /* causal: the longest tiles (last query blocks) first */
  /* The tail order (attn_fwd_scheduler.cuh): tiles from tail_first_tile on cover the last
   * tail_heads head slots (tail_first_head ..), interleaved query block by query block;
   * tail_first_tile = tile_count: no tail. */
  int tail_first_tile, tail_first_head, tail_heads;
  /* This launch's value for the flags it raises in the workspace (the tile counter's ready flag,
   * the stream-K pieces' flags): unique per launch (fc_launch_tag), so what an earlier launch
   * left there never reads as raised and nothing clears the flags between launches. */
  uint64_t launch_tag;
  /* Dynamic scheduling, or NULL: static. CTA 0 zeroes the counter and then raises
   * tile_counter_ready to launch_tag; the other CTAs take tickets only after they saw it
   * (attn_fwd_next_tile). */
  int* tile_counter;
  uint64_t* tile_counter_ready;
  /* The stream-K tail (attn_fwd_stream_k.cuh; static scheduling only): tiles from
   * sk_first_tile on are split along their sk_tile_blocks key blocks into runs of units,
   * CTA c's from attn_fwd_stream_k_run_begin(c) (run length and remainder of units / grid);
   * sk_first_tile = tile_count: off. Pieces meet in sk_partials (a slot per CTA and consumer)
   * through sk_flags raised to launch_tag. */
  int sk_first_tile, sk_tile_blocks, sk_run_length, sk_run_rest;
  float* sk_partials;
  uint64_t* sk_flags;

  float softmax_scale_log2; /* log2(e) · scale without softcap; log2(e) with one (scale is inside tanh) */
  float logit_scale;        /* raw score → natural-log logit for the LSE: scale, or 1 after a softcap */
  float softcap;            /* 0: off */
  float softcap_input_scale; /* softmax_scale / softcap */
  int window_left, window_right; /* -1 = unbounded; causal is (-1, 0) */
  /* V rows past seqlen_k inside the last key block may be another sequence's rows or unused
   * cache (cu_seqlens_k / seqused_k): they are zeroed in shared memory before P·V, since
   * P = 0 there but 0 · NaN is NaN. Without them TMA zero-fills past the tensor's end. */
  int zero_v_tail;
  /* The key loop of an unmasked, unpaged sequence whose length is a multiple of
   * attn_fwd_tile::NARROW_STEP runs its last key blocks NARROW_N wide instead of padding and
   * masking a partial last block (attn_fwd_narrow_blocks); 0 off. */
  int narrow_tail;
  /* Paged KV (page_table != NULL): map_k / map_v are (d, page_size rows, heads, pages) and a
   * key block is loaded as BLOCK_N / kv_box_rows boxes of kv_box_rows rows, each from the page
   * the table names (kv_box_rows = min(page_size, BLOCK_N); the launcher picks a BLOCK_N that
   * page_size divides or is a multiple of). Table entries past max_pages are clamped: such
   * rows are past seqlen_k, masked, and their V rows zeroed (zero_v_tail). */
  const int32_t* page_table;
  int64_t page_table_batch_stride;
  int page_size, max_pages, kv_box_rows;

  /* Split-KV (attn_fwd_scheduler.cuh): num_splits = 1 unsplit (o_partial NULL: O and LSE go
   * to o and lse). num_splits > 1: each tile writes its split's rows, normalized by the
   * split's own row sums, in fp32 to o_partial as (split, batch, row, query head, d_v) and its
   * natural-log LSE (−inf: no key in the split) to lse_partial as (split, batch, query head,
   * row), row < seqlen_q (the maximum with cu_seqlens_q) — the default layout of
   * flashc_attn_combine, which the launcher runs next into o and lse. */
  int num_splits;
  float* o_partial;
  float* lse_partial;
#if FLASHC_ATTN_TIMELINE
  uint64_t* timeline; /* the workspace's timeline tail (attn_fwd_timeline.h) */
#endif
};

#endif
