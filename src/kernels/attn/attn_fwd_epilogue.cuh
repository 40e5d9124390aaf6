/*
 * attn_fwd_epilogue.cuh — a consumer warpgroup's end of a tile: O normalized by 1/l (0 for a
 * row that saw no key), converted to the output dtype, staged in shared memory and stored
 * with 16-byte coalesced stores; LSE (natural log, −inf for empty rows) stored per row.
 *
 * On a fixed-length problem (attn_fwd_params.o_tma_store) one thread stores the staged rows
 * with TMA and the warpgroup moves on; the next writer of the buffer waits until that store
 * has read it. Otherwise the rows are stored as below.
 * Staging: a buffer of its own where shared memory allows (attn_fwd_tile::O_SEPARATE), else
 * (d192/d256, O_IN_V_SLOT) O_PASS_BLOCKS column blocks at a time in slots the consumers hold
 * until their stores have read them (attn_fwd_release_o_slot): the first pass in the K slot of
 * the tile's last S, the second in the V slot of its last P·V (O_PASS0_IN_K_SLOT). Every
 * consumer reads both whole slots (K and V are their shared B operands), so a pass waits until
 * all of them announced the read (attn_fwd_smem::k_slot_read, v_slot_read): the first pass
 * only for the other consumer's last S, a block before its last P·V. Either way the
 * warpgroup's own 64 rows (the other warpgroup never reads them) in the swizzled block layout
 * of V's rows, written with stmatrix where the instance allows (STMATRIX_O_STAGING) — free of
 * bank conflicts either way — and read row-wise in 16-byte pieces, each quarter-warp one whole
 * 128-byte line. Stores are guarded by the sequence's used length, which covers varlen and
 * seqused_q (rows past it are another sequence's or must stay untouched). Q was freed in the
 * main loop, after the tile's last S.
 * Split-KV tiles (attn_fwd_params.o_partial) take attn_fwd_store_partial instead: the
 * normalized O straight from the accumulator fragment in fp32 and the LSE into the partials
 * workspace, with plain guarded stores (no staging: each quad of lanes writes 32 contiguous
 * bytes of a row, whole sectors); the combine kernel then writes o and lse.
 * Check: tests/gpu/gpu_attn_fwd.c (poisoned O and LSE with guards, varlen, seqused_q; the
 * split-KV cases of part 3 against the unsplit reference).
 */
#ifndef FLASHC_KERNELS_ATTN_FWD_EPILOGUE_CUH
#define FLASHC_KERNELS_ATTN_FWD_EPILOGUE_CUH

#include "kernels/attn/attn_fwd_config.cuh"
#include "kernels/attn/attn_fwd_mainloop.cuh"
#include "kernels/attn/attn_fwd_mask.cuh"
#include "kernels/attn/attn_fwd_params.cuh"
#include "kernels/attn/attn_fwd_scheduler.cuh"
#include "kernels/attn/attn_fwd_softmax.cuh"
#include "kernels/attn/attn_fwd_timeline.cuh"
#include "kernels/common/ptx.cuh"

/* Split-KV: this consumer's rows of the tile as fp32 partials (attn_fwd_params.o_partial /
 * lse_partial layout), O already multiplied by the split's 1/l (0 for a row that saw no key
 * in the split, whose LSE is then −inf: the combine skips it). Thread `thread` holds packed
 * rows fragment_row and + 8, columns 8j + fragment_column + {0, 1} (ptx_wgmma.cuh). Rows past
 * the sequence's used length are not written; the combine does not read them. */
template <class T>
static __device__ __forceinline__ void attn_fwd_store_partial(const attn_fwd_params& p, const attn_fwd_sequence& seq,
                                                              const attn_fwd_tile_coord& tile, int m0, int fragment_row,
                                                              int fragment_column, const float (&o)[T::O_ACCUMULATORS],
                                                              const float (&normalizer)[2], const float (&lse)[2],
                                                              int thread) {
  const int head_mask = (1 << p.pack_shift) - 1;
  const int64_t split_batch = tile.out_batch; /* split · batch count + batch */
  /* p.seqlen_q bounds a sequence's slot in the partials; a varlen sequence longer than the
   * maximum the caller gave (flashc.h forbids it; the GPU cannot check device-side
   * cu_seqlens) then loses rows instead of writing into the next slot or past the workspace. */
  const int rows = min(seq.seqlen_q, p.seqlen_q);
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int packed = m0 + fragment_row + 8 * half;
    const int row = packed >> p.pack_shift, head = tile.q_head0 + (packed & head_mask);
    if (row >= rows) continue;
    const int64_t lse_index = (split_batch * p.heads_q + head) * p.seqlen_q + row;
    const int64_t row_index = (split_batch * p.seqlen_q + row) * p.heads_q + head;
    float* o_row = p.o_partial + row_index * T::HEAD_DIM_V + fragment_column;
#pragma unroll
    for (int j = 0; j < T::HEAD_DIM_V / 8; ++j)
      *reinterpret_cast<float2*>(o_row + 8 * j) =
          make_float2(o[4 * j + 2 * half] * normalizer[half], o[4 * j + 2 * half + 1] * normalizer[half]);
    if (thread % 4 == 0) p.lse_partial[lse_index] = lse[half];
  }
}

/* Unsplit: this consumer's rows of O in the output dtype through the staging buffer `staging`
 * (TMA or 16-byte stores) and their LSE, as the top of this file describes; O_PASSES passes of
 * O_PASS_BLOCKS column blocks where the buffer is a V slot. staging = nullptr (a V-slot
 * instance's tile without keys holds no slot): O = 0 stored straight from registers. */
template <int Input, class T>
static __device__ __forceinline__ void attn_fwd_store_output(const attn_fwd_params& p, const attn_fwd_smem& sm,
                                                             uint8_t* staging, uint8_t* first_pass_staging,
                                                             uint32_t k_slot_read_parity, const attn_fwd_sequence& seq,
                                                             const attn_fwd_tile_coord& tile, int m0, int consumer,
                                                             int thread, int tile_row0, int fragment_row,
                                                             const float (&o)[T::O_ACCUMULATORS],
                                                             const float (&normalizer)[2], const float (&lse)[2],
                                                             attn_fwd_timeline& timeline) {
  constexpr smem_swizzle SW = T::V_SWIZZLE;
  constexpr int CHUNK_ELEMENTS = 16 / T::ELEMENT_BYTES;
  constexpr int PASS_COLUMNS = T::O_PASS_BLOCKS * T::V_BOX_INNER;
  constexpr int CHUNKS_PER_PASS_ROW = PASS_COLUMNS / CHUNK_ELEMENTS;
  const bool no_staging = T::O_IN_V_SLOT && staging == nullptr;
  const bool tma_store = p.o_tma_store && !no_staging;
  /* A buffer of its own is rewritten here with no barrier since the last tile's reads below:
   * wait until every thread of the warpgroup (or the last tile's TMA store) has done them. (A
   * V slot was waited for before it was released: attn_fwd_release_o_slot.) */
  if constexpr (T::O_SEPARATE) {
    if (tma_store && thread == 0) tma_wait_group_read<0>();
    named_barrier_sync(ATTN_FWD_BARRIER_EPILOGUE_0 + consumer, ATTN_FWD_WARPGROUP_THREADS);
    attn_fwd_stamp(timeline, ATTN_EVENT_BUFFER);
  } else if constexpr (T::O_PASS0_IN_K_SLOT) {
    /* The first pass goes to the K slot of the tile's last S, once every consumer has read it. */
    if (!no_staging) mbarrier_wait_parity(sm.k_slot_read, k_slot_read_parity);
  } else {
    /* (A V-slot instance whose O takes one pass.) Every consumer's last P·V reads the whole
     * slot (V is their shared B operand): none writes O into it before all of them are done. */
    if (!no_staging) named_barrier_sync(ATTN_FWD_BARRIER_O_SLOT, T::CONSUMER_THREADS);
  }
  auto pack = [&](int j, int half) {
    const float low = o[4 * j + 2 * half] * normalizer[half], high = o[4 * j + 2 * half + 1] * normalizer[half];
    return Input == ATTN_INPUT_BF16 ? pack_bf16x2(low, high) : pack_f16x2(low, high);
  };
  /* Packed tile row → (query row, query head): row = packed >> pack_shift, head = q_head0 +
   * (packed & (2^pack_shift − 1)). */
  const int head_mask = (1 << p.pack_shift) - 1;
  const int64_t batch_offset = p.cu_seqlens_q ? 0 : static_cast<int64_t>(tile.out_batch) * p.o_batch_stride;
  uint8_t* o_base = static_cast<uint8_t*>(p.o) + (batch_offset + static_cast<int64_t>(tile.q_head0) * p.o_head_stride +
                                                  static_cast<int64_t>(seq.q_row0) * p.o_row_stride) *
                                                     T::ELEMENT_BYTES;
#pragma unroll
  for (int pass = 0; pass < T::O_PASSES; ++pass) {
    constexpr int LAST_BLOCKS = T::V_BLOCKS - (T::O_PASSES - 1) * T::O_PASS_BLOCKS;
    const int pass_blocks = pass == T::O_PASSES - 1 ? LAST_BLOCKS : T::O_PASS_BLOCKS;
    const int column0 = pass * PASS_COLUMNS;
    if (no_staging) { /* no keys, no slot: O = 0 */
      for (int chunk = thread; chunk < ATTN_FWD_ROWS_PER_CONSUMER * CHUNKS_PER_PASS_ROW; chunk += ATTN_FWD_WARPGROUP_THREADS) {
        const int r = chunk / CHUNKS_PER_PASS_ROW, column = column0 + (chunk % CHUNKS_PER_PASS_ROW) * CHUNK_ELEMENTS;
        const int packed = m0 + tile_row0 + r;
        const int row = packed >> p.pack_shift, head = packed & head_mask;
        if (row < seq.seqlen_q && column < T::HEAD_DIM_V)
          *reinterpret_cast<uint4*>(o_base + (static_cast<int64_t>(row) * p.o_row_stride +
                                              static_cast<int64_t>(head) * p.o_head_stride + column) *
                                                 T::ELEMENT_BYTES) = make_uint4(0u, 0u, 0u, 0u);
      }
      continue;
    }
    uint8_t* const pass_staging = T::O_PASS0_IN_K_SLOT && pass == 0 ? first_pass_staging : staging;
    if (T::O_PASS0_IN_K_SLOT && pass == 1) {
      /* The V slot (not the first pass's buffer: no wait for its reads), once every consumer's
       * last P·V has read it; announced right after that P·V (a barrier of all consumers here
       * made the leader also wait for the other's first pass: d256 causal 512 −4 %). */
      mbarrier_wait_parity(sm.v_slot_read, k_slot_read_parity);
    } else if (pass > 0) { /* the previous pass's stores have read the buffer */
      if (tma_store && thread == 0) tma_wait_group_read<0>();
      named_barrier_sync(ATTN_FWD_BARRIER_EPILOGUE_0 + consumer, ATTN_FWD_WARPGROUP_THREADS);
    }
    if constexpr (T::STMATRIX_O_STAGING) {
      /* The accumulator fragment of n8 column block j is two 8×8 matrices (rows g and g + 8 of
       * the warp's 16), laid out as stmatrix takes them: one stmatrix.x4 stores column blocks
       * j and j + 1, lane l addressing row l % 8 of matrix l / 8 = (block j + (l/8)/2, half
       * (l/8) % 2). A quarter of the store instructions, and one offset per store, of a
       * 4-byte store per register (the epilogue was ~14 % of a tile's instructions at 1k). */
      static_assert(T::HEAD_DIM_V % 16 == 0 && PASS_COLUMNS % 16 == 0, "column blocks in pairs");
      const int lane = thread % 32, matrix = lane / 8;
      const int store_row = tile_row0 + 16 * (thread / 32) + 8 * (matrix % 2) + lane % 8;
      const uint32_t o_smem = smem_u32(pass_staging);
#pragma unroll
      for (int j = column0 / 8; j < T::HEAD_DIM_V / 8 && j < (column0 + PASS_COLUMNS) / 8; j += 2) {
        const uint32_t r[4] = {pack(j, 0), pack(j, 1), pack(j + 1, 0), pack(j + 1, 1)};
        stmatrix_x4_shared(o_smem + smem_k_major_element_offset(SW, T::BLOCK_M, store_row,
                                                                8 * (j + matrix / 2) - column0, T::ELEMENT_BYTES),
                           r);
      }
    } else { /* one 4-byte store per accumulator pair (attn_fwd_tile::STMATRIX_O_STAGING) */
#pragma unroll
      for (int j = column0 / 8; j < T::HEAD_DIM_V / 8 && j < (column0 + PASS_COLUMNS) / 8; ++j)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const uint32_t offset = smem_k_major_element_offset(SW, T::BLOCK_M, fragment_row + 8 * half,
                                                              8 * j + 2 * (thread % 4) - column0, T::ELEMENT_BYTES);
          *reinterpret_cast<uint32_t*>(pass_staging + offset) = pack(j, half);
        }
    }
    if (pass == 0) attn_fwd_stamp(timeline, ATTN_EVENT_WRITTEN);
    if (tma_store) fence_proxy_async_shared_cta(); /* the TMA store (async proxy) reads these writes */
    if (pass == 0) attn_fwd_stamp(timeline, ATTN_EVENT_FENCED);
    named_barrier_sync(ATTN_FWD_BARRIER_EPILOGUE_0 + consumer, ATTN_FWD_WARPGROUP_THREADS);
    if (pass == 0) attn_fwd_stamp(timeline, ATTN_EVENT_O_STAGED);

    if (tma_store) {
      /* One thread stores the warpgroup's 64 rows, one box per swizzle span of columns; rows
       * past seqlen_q fall outside the map and are not written. The next writer of the buffer
       * waits for the reads. */
      if (thread == 0) {
        const int q_row = seq.q_row0 + ((m0 + tile_row0) >> p.pack_shift);
        for (int block = 0; block < pass_blocks; ++block)
          tma_store_5d(&p.map_o, pass_staging + block * T::O_BLOCK_BYTES + tile_row0 * static_cast<uint32_t>(SW),
                       (pass * T::O_PASS_BLOCKS + block) * T::V_BOX_INNER, 0, q_row, tile.q_head0 >> p.pack_shift,
                       tile.out_batch);
        tma_commit_group();
      }
    } else {
      /* 16-byte guarded stores: varlen and seqused_q rows past the end stay untouched. */
      const int chunks_per_row = pass_blocks * T::V_BOX_INNER / CHUNK_ELEMENTS;
      for (int chunk = thread; chunk < ATTN_FWD_ROWS_PER_CONSUMER * chunks_per_row; chunk += ATTN_FWD_WARPGROUP_THREADS) {
        const int r = chunk / chunks_per_row, column = (chunk % chunks_per_row) * CHUNK_ELEMENTS;
        const int packed = m0 + tile_row0 + r;
        const int row = packed >> p.pack_shift, head = packed & head_mask;
        if (row < seq.seqlen_q) {
          const uint4 value = *reinterpret_cast<const uint4*>(
              pass_staging + smem_k_major_element_offset(SW, T::BLOCK_M, tile_row0 + r, column, T::ELEMENT_BYTES));
          *reinterpret_cast<uint4*>(o_base + (static_cast<int64_t>(row) * p.o_row_stride +
                                              static_cast<int64_t>(head) * p.o_head_stride + column0 + column) *
                                                 T::ELEMENT_BYTES) = value;
        }
      }
    }
  }

  if (p.lse && thread % 4 == 0) {
    const int64_t lse_batch = p.cu_seqlens_q ? 0 : static_cast<int64_t>(tile.out_batch) * p.lse_batch_stride;
    float* lse_tile = p.lse + lse_batch + static_cast<int64_t>(tile.q_head0) * p.lse_head_stride + seq.q_row0;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int packed = m0 + fragment_row + 8 * half;
      const int row = packed >> p.pack_shift, head = packed & head_mask;
      if (row < seq.seqlen_q) lse_tile[static_cast<int64_t>(head) * p.lse_head_stride + row] = lse[half];
    }
  }
}

/* O staged in a V slot (attn_fwd_tile::O_IN_V_SLOT): once this consumer's stores have read it,
 * the slot goes back to the producer, whose next loads (async proxy) overwrite what these
 * threads wrote; with O_PASS0_IN_K_SLOT the K slot of the tile's last S too. Stored by TMA
 * (O_PASS0_IN_K_SLOT), the warpgroup's writes were fenced for the async proxy before the stores
 * were issued and only the stores' reads remain, so thread 0 releases for the whole warpgroup:
 * the K slot now, once the first pass's store has read it, the V slot later
 * (attn_fwd_release_deferred_v_slot, after the next tile's first S is issued: the producer's
 * next V load there is needed only at that tile's second P·V). The warpgroup no longer waits
 * at a barrier for the second store's reads (2.4 % of the warp samples, ncu, d256 full 512).
 * Nothing held (−1): nothing to do. */
template <class T>
static __device__ __forceinline__ void attn_fwd_release_o_slot(const attn_fwd_params& p, const attn_fwd_smem& sm,
                                                               int held_v_stage, int consumer, int thread,
                                                               bool staged, attn_fwd_consumer_state& state) {
  if constexpr (T::O_IN_V_SLOT) {
    if (held_v_stage < 0) return;
    if constexpr (T::O_PASS0_IN_K_SLOT) {
      if (staged && p.o_tma_store) {
        if (thread == 0) {
          tma_wait_group_read<1>(); /* the first pass's group: all but the newest */
          attn_fwd_release_for_warpgroup(&sm.k_empty[held_v_stage]);
        }
        state.deferred_v_slot = held_v_stage;
        return;
      }
    }
    if (staged) {
      /* The 16-byte stores read the slot with generic loads: every thread's, fenced. */
      fence_proxy_async_shared_cta();
      named_barrier_sync(ATTN_FWD_BARRIER_EPILOGUE_0 + consumer, ATTN_FWD_WARPGROUP_THREADS);
    }
    attn_fwd_release(&sm.v_empty[held_v_stage]);
    if constexpr (T::O_PASS0_IN_K_SLOT) attn_fwd_release(&sm.k_empty[held_v_stage]); /* (the same index) */
  }
}

/* The end of a tile for consumer warpgroup `consumer`: the softmax's 1/l and LSE, then O and
 * LSE to the output (unsplit) or to the split-KV partials; then the V slot it held for O, if
 * any (held_v_stage, from attn_fwd_consume), goes back to the producer. */
template <int Input, class T>
static __device__ __forceinline__ void attn_fwd_epilogue(const attn_fwd_params& p, const attn_fwd_smem& sm,
                                                         const attn_fwd_sequence& seq, const attn_fwd_tile_coord& tile,
                                                         int m0, int consumer, int thread, int held_v_stage,
                                                         float (&o)[T::O_ACCUMULATORS], attn_softmax_rows& rows,
                                                         bool rows_ended, attn_softmax_result& finished,
                                                         attn_fwd_consumer_state& state) {
  /* rows_ended: the key loop did attn_fwd_finish_rows_early (attn_fwd_rows_end_in_loop) */
  if (!rows_ended) attn_softmax_normalizer(rows, finished);
  if (!rows_ended || !T::EARLY_LSE) attn_softmax_lse(rows, p.logit_scale, finished);
  const float(&normalizer)[2] = finished.normalizer;
  const float(&lse)[2] = finished.lse;
  attn_fwd_stamp(state.timeline, ATTN_EVENT_FINISHED);

  const int tile_row0 = consumer * ATTN_FWD_ROWS_PER_CONSUMER; /* this warpgroup's first row in the tile */
  const int fragment_row = tile_row0 + 16 * (thread / 32) + (thread % 32) / 4;
  const int fragment_column = 2 * (thread % 4);
  if (p.o_partial) {
    attn_fwd_store_partial<T>(p, seq, tile, m0, fragment_row, fragment_column, o, normalizer, lse, thread);
    attn_fwd_release_o_slot<T>(p, sm, held_v_stage, consumer, thread, false, state);
  } else {
    uint8_t* staging = T::O_SEPARATE ? sm.o : held_v_stage >= 0 ? sm.v + held_v_stage * T::V_STAGE_BYTES : nullptr;
    uint8_t* first_pass_staging =
        T::O_PASS0_IN_K_SLOT && held_v_stage >= 0 ? sm.k + held_v_stage * T::K_STAGE_BYTES : nullptr;
    attn_fwd_store_output<Input, T>(p, sm, staging, first_pass_staging, state.k_slot_read_phase ^ 1u, seq, tile, m0,
                                    consumer, thread, tile_row0, fragment_row, o, normalizer, lse, state.timeline);
    attn_fwd_release_o_slot<T>(p, sm, held_v_stage, consumer, thread, true, state);
  }
}

#endif
