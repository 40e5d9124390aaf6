/*
 * attn_fwd_mainloop.cuh — the two halves of the Hopper attention forward main loop.
 *
 * Shared memory (attn_fwd_config.cuh): Q (BLOCK_M rows), a ring of STAGES K blocks and one of
 * STAGES V blocks (BLOCK_N keys each), every tile in the swizzled block layout of ptx_desc.cuh
 * (one TMA box per block of swizzle-span columns). Barriers, named by what they guard:
 *   q_full[b] / q_empty[b]   Q in buffer b landed / both consumers are done with it: after
 *                            their last S = Q·Kᵀ of the tile (Q_STAGES buffers, tiles taking
 *                            them in turn)
 *   k_full[s] / k_empty[s]   K block in slot s landed / both consumers' S = Q·Kᵀ read it
 *   v_full[s] / v_empty[s]   likewise for V and O += P·V (with O staged in the slots,
 *                            attn_fwd_tile::O_IN_V_SLOT / O_PASS0_IN_K_SLOT, the tile's last K
 *                            and V slots are released after the epilogue; k_slot_read /
 *                            v_slot_read say when every consumer has read them)
 *
 * Producer (one elected thread): per tile, key blocks from the last visible one (of the tile's
 * split, attn_fwd_split_key_blocks) down to the first (the masked ones come first, so the
 * unmasked middle runs without compares), in the order the consumers need them: K(last), Q,
 * then K(n), V(n + 1) pairs, then V(first). K of a tile is requested before its Q so it
 * overlaps the previous tile's epilogue; with two Q buffers Q comes first, since its buffer is
 * free a tile ahead.
 *
 * Consumer warpgroup c (query rows 64c .. 64c + 63 of the tile), per key block n:
 *   issue S_n = Q·K_nᵀ (SS wgmma) and O += P_{n+1}·V_{n+1} (RS wgmma, P from registers);
 *   wait for S_n only, then softcap / mask / online softmax on it while P·V still runs;
 *   wait for P·V, pack P_n for the next block. O's rescale by the new row maxima waits until
 *   the next block's S has been issued, so it runs under that GEMM instead of between GEMMs.
 * That is the intra-warpgroup GEMM/softmax overlap of FlashAttention-3: the tensor core works
 * on P·V while the warps do the exponentials. A consumer with no row of the tile inside the
 * sequence only follows the blocks (attn_fwd_follow_key_loop) where the instance allows.
 * Check: tests/gpu/gpu_attn_fwd.c; `nvcc -Xptxas -v`: no spills, no C7510/C7519 warnings.
 */
#ifndef FLASHC_KERNELS_ATTN_FWD_MAINLOOP_CUH
#define FLASHC_KERNELS_ATTN_FWD_MAINLOOP_CUH

#include <cuda.h>

#include "kernels/attn/attn_fwd_config.cuh"
#include "kernels/attn/attn_fwd_mask.cuh"
#include "kernels/attn/attn_fwd_params.cuh"
#include "kernels/attn/attn_fwd_scheduler.cuh"
#include "kernels/attn/attn_fwd_softmax.cuh"
#include "kernels/attn/attn_fwd_stream_k.cuh"
#include "kernels/attn/attn_fwd_timeline.cuh"
#include "kernels/common/ptx.cuh"
#include "kernels/common/ring.cuh"

/* A tile as the producer hands it to the consumers beside its Q (in shared memory, written
 * before q_full's arrival, read after its wait): what the producer derived from the tile
 * index — coordinates, the sequence's geometry and the key blocks to visit — so that the
 * consumers repeat none of the per-tile integer divisions or varlen loads. first < 0 ends the
 * work (the other fields are then not written). */
struct attn_fwd_job {
  attn_fwd_tile_coord tile;
  attn_fwd_sequence seq;
  int first, end; /* key blocks [first, end) of the tile (of its split or piece); first < 0: no more tiles */
};
/* Pointers into the CTA's shared memory. The handed-over jobs: attn_fwd_tile::JOB_SLOTS of
 * them — two where they alternate by the q_full phase (the producer writes the job of tile
 * t + 2 only after the consumers released tile t + 1's Q, which follows tile t's epilogue, so
 * a consumer can read its tile's job again after the key loop instead of holding the
 * epilogue's fields in registers through it: the 4-consumer instance spilled them), one
 * elsewhere. */
struct attn_fwd_smem {
  attn_fwd_job* job; /* the tile whose Q q_full announces (tile count c: job[job_slot(c)]), decoded */
  uint8_t* q;         /* Q_STAGES × Q_BYTES */
  uint8_t* o; /* O staging: its own buffer (attn_fwd_tile::O_SEPARATE), else unused (a V slot) */
  uint8_t* k; /* STAGES × K_STAGE_BYTES */
  uint8_t* v; /* STAGES × V_STAGE_BYTES */
  uint64_t* q_full;  /* [Q_STAGES] */
  uint64_t* q_empty; /* [Q_STAGES] */
  uint64_t* k_full;
  uint64_t* k_empty;
  uint64_t* v_full;
  uint64_t* v_empty;
  int* softmax_pins; /* one word per consumer warp, written and never read (attn_fwd_pin_softmax) */
  /* attn_fwd_tile::O_PASS0_IN_K_SLOT: every consumer warp arrives once its last S of the tile
   * has read the K slot, and once its last P·V has read the V slot (slots it then holds for O
   * instead of releasing them); a consumer staging O's first pass in the K slot, its second in
   * the V slot, waits for the phase first. Both complete once per tile with keys. */
  uint64_t* k_slot_read;
  uint64_t* v_slot_read;
};

/* Job slot `slot`. A stream-K kernel's slots each hold the piece's role (ATTN_FWD_PIECE_*,
 * attn_fwd_stream_k.cuh) in an int right after the job (attn_fwd_job_piece); the plain kernels'
 * jobs keep their size (a larger job changed their code: the stride broke the 8-byte pairs of
 * the second slot), and the role lives in the job slot rather than beside the softmax pins (its
 * address there made the 4-consumer stream-K kernel spill). */
template <class T>
constexpr uint32_t attn_fwd_job_stride() { return sizeof(attn_fwd_job) + (T::STREAM_K ? sizeof(int) : 0u); }

template <class T>
static __device__ __forceinline__ attn_fwd_job* attn_fwd_job_at(const attn_fwd_smem& sm, unsigned slot) {
  if constexpr (!T::STREAM_K) return sm.job + slot; /* (the byte arithmetic below changed the 4-consumer kernel's code) */
  else return reinterpret_cast<attn_fwd_job*>(reinterpret_cast<uint8_t*>(sm.job) + slot * attn_fwd_job_stride<T>());
}

template <class T>
static __device__ __forceinline__ int* attn_fwd_job_piece(const attn_fwd_smem& sm, unsigned slot) {
  return reinterpret_cast<int*>(attn_fwd_job_at<T>(sm, slot) + 1);
}

/* The role of job slot `slot`'s piece; a plain kernel's jobs are whole tiles. */
template <class T>
static __device__ __forceinline__ int attn_fwd_job_role(const attn_fwd_smem& sm, unsigned slot) {
  if constexpr (T::STREAM_K) return *attn_fwd_job_piece<T>(sm, slot);
  else return ATTN_FWD_PIECE_WHOLE;
}

/* Arrivals that free a K or V slot: one lane of each consumer warp. */
template <class T>
constexpr uint32_t attn_fwd_slot_releases() { return T::CONSUMER_THREADS / 32; }
/* Arrivals that free Q: every consumer thread (attn_fwd_release_q_early). */
template <class T>
constexpr uint32_t attn_fwd_q_releases() { return T::CONSUMER_THREADS; }

/* ------------------------------------------------------------------------------------ */
/* Producer                                                                             */
/* ------------------------------------------------------------------------------------ */

/* A key block's width as a type: NARROW_N keys (true) or BLOCK_N (false). */
template <bool Narrow>
struct attn_fwd_narrow_tag {
  static constexpr bool value = Narrow;
};

/* The S accumulators and P fragments a block of width `Width` uses: all, or for a narrow block
 * the prefixes of NARROW_S_ACCUMULATORS and NARROW_PV_STEPS. */
template <class T, class Width>
static __device__ __forceinline__ decltype(auto) attn_fwd_block_scores(float (&s)[T::S_ACCUMULATORS], Width) {
  if constexpr (Width::value) return reinterpret_cast<float(&)[T::NARROW_S_ACCUMULATORS]>(s);
  else return (s);
}
template <class T, class Width>
static __device__ __forceinline__ decltype(auto) attn_fwd_block_p(uint32_t (&p)[T::PV_STEPS][4], Width) {
  if constexpr (Width::value) return reinterpret_cast<uint32_t(&)[T::NARROW_PV_STEPS][4]>(p);
  else return (p);
}

/* Where key block n of a sequence starts (attn_fwd_tile::NARROW_TAIL): blocks [0, wide) are
 * BLOCK_N keys from n · BLOCK_N, blocks from `wide` on NARROW_N keys after them; wide = INT_MAX
 * when the sequence has no narrow blocks. The producer and the consumers derive it alike from
 * the sequence's length. */
template <class T>
struct attn_fwd_key_map {
  int wide;
  __device__ __forceinline__ bool narrow(int n) const { return n >= wide; }
  __device__ __forceinline__ int key0(int n) const {
    return n <= wide ? n * T::BLOCK_N : wide * T::BLOCK_N + (n - wide) * T::NARROW_N;
  }
};

/* The key map of a sequence of seqlen_k keys: its last attn_fwd_tile::narrow_blocks(seqlen_k)
 * blocks narrow, of the ⌈L / BLOCK_N⌉ attn_fwd_key_blocks gives; only for unmasked, unpaged
 * problems (attn_fwd_params::narrow_tail). The rule is written out here rather than calling
 * narrow_blocks, which the launcher's kernel choice calls: the same arithmetic through that call
 * moved ptxas's schedule in both 160-key kernels (sass_diff: +8 instructions in the narrow
 * stream-K one, and wgmmas serialized, C7511, with the call inside the narrow_tail test). */
template <class T>
static __device__ __forceinline__ attn_fwd_key_map<T> attn_fwd_key_map_of(const attn_fwd_params& p, int seqlen_k) {
  attn_fwd_key_map<T> map = {INT_MAX};
  if constexpr (T::NARROW_TAIL) {
    if (p.narrow_tail && seqlen_k % T::NARROW_STEP == 0) {
      const int blocks = (seqlen_k + T::BLOCK_N - 1) / T::BLOCK_N;
      const int narrow = (T::BLOCK_N - seqlen_k % T::BLOCK_N) % T::BLOCK_N / T::NARROW_STEP;
      if (narrow > 0 && narrow <= blocks) map.wide = blocks - narrow;
    }
  }
  return map;
}

/* Loads the BLOCK_N rows of K or V starting at `row` into the next slot of its ring; with
 * paged KV, key block `key0` of sequence `batch` page by page (attn_fwd_params.page_table). */
template <int Blocks, int BoxInner, uint32_t StageBytes, uint32_t BlockBytes, int BlockN, int Stages>
static __device__ __forceinline__ void attn_fwd_load_kv(const attn_fwd_params& p, const CUtensorMap* map, uint8_t* ring,
                                                        uint64_t* full, uint64_t* empty, ring_position& position,
                                                        int row, int key0, int head, int batch) {
  mbarrier_wait_parity(&empty[position.stage], position.phase ^ 1u);
  uint64_t* bar = &full[position.stage];
  mbarrier_arrive_expect_tx(bar, StageBytes);
  uint8_t* slot = ring + position.stage * StageBytes;
  if (p.page_table == nullptr) {
#pragma unroll
    for (int block = 0; block < Blocks; ++block)
      tma_load_4d(slot + block * BlockBytes, map, bar, block * BoxInner, row, head, batch);
  } else {
    /* Box rows land kv_box_rows · (bytes of a row of one span block) apart; kv_box_rows is a
     * multiple of 8, so every box starts on a swizzle atom and the slot's layout is the one a
     * single BLOCK_N-row box would give. */
    constexpr uint32_t ROW_BYTES = BlockBytes / BlockN;
    const int32_t* table = p.page_table + static_cast<int64_t>(batch) * p.page_table_batch_stride;
    for (int box_row = 0; box_row < BlockN; box_row += p.kv_box_rows) {
      const int key = key0 + box_row;
      const int page_index = min(key / p.page_size, p.max_pages - 1);
      const int page = __ldg(table + page_index);
#pragma unroll
      for (int block = 0; block < Blocks; ++block)
        tma_load_4d(slot + block * BlockBytes + box_row * ROW_BYTES, map, bar, block * BoxInner, key % p.page_size,
                    head, page);
    }
  }
  ring_advance<Stages>(position);
}

/* Producer: the tiles of this CTA (attn_fwd_scheduler.cuh), then its stream-K pieces
 * (attn_fwd_stream_k.cuh), each as a job beside its Q and its key blocks' loads. */
template <class T>
static __device__ __forceinline__ void attn_fwd_produce(const attn_fwd_params& p, const attn_fwd_smem& sm) {
  tma_prefetch_map(&p.map_q);
  tma_prefetch_map(&p.map_k);
  tma_prefetch_map(&p.map_v);
  if (p.o_tma_store) tma_prefetch_map(&p.map_o); /* the consumers' O stores (the same SM's descriptor cache) */
  ring_position k_position = {0, 0}, v_position = {0, 0};
  uint32_t q_count = 0; /* tiles handed over (attn_fwd_tile::q_stage, q_parity, job_slot) */
  /* A job: its decoded tile beside its Q, then its key blocks [first, end) from the last one
   * down (the masked ones first). */
  auto produce_job = [&](const attn_fwd_tile_coord& tile, const attn_fwd_sequence& seq, int first, int end,
                         int piece) {
    const int kv_head = tile.kv_head;
    const attn_fwd_key_map<T> keys = attn_fwd_key_map_of<T>(p, seq.seqlen_k);
    auto load_k = [&](int n) {
      const int key0 = keys.key0(n);
      attn_fwd_load_kv<T::QK_BLOCKS, T::QK_BOX_INNER, T::K_STAGE_BYTES, T::K_BLOCK_BYTES, T::BLOCK_N, T::STAGES>(
          p, &p.map_k, sm.k, sm.k_full, sm.k_empty, k_position, seq.k_row0 + key0, key0, kv_head, seq.k_batch);
    };
    auto load_v = [&](int n) {
      const int key0 = keys.key0(n);
      attn_fwd_load_kv<T::V_BLOCKS, T::V_BOX_INNER, T::V_STAGE_BYTES, T::V_BLOCK_BYTES, T::BLOCK_N, T::STAGES>(
          p, &p.map_v, sm.v, sm.v_full, sm.v_empty, v_position, seq.k_row0 + key0, key0, kv_head, seq.k_batch);
    };
    if (T::Q_STAGES == 1 && end > first) load_k(end - 1);
    const unsigned q_stage = T::q_stage(q_count);
    mbarrier_wait_parity(&sm.q_empty[q_stage], T::q_parity(q_count) ^ 1u);
    attn_fwd_job& job = *attn_fwd_job_at<T>(sm, T::job_slot(q_count));
    job.tile = tile;
    job.seq = seq;
    job.first = first;
    job.end = end;
    if constexpr (T::STREAM_K) *attn_fwd_job_piece<T>(sm, T::job_slot(q_count)) = piece;
    uint64_t* q_full = &sm.q_full[q_stage];
    uint8_t* q_buffer = sm.q + q_stage * T::Q_BYTES;
    mbarrier_arrive_expect_tx(q_full, T::Q_BYTES); /* (releases the job's stores) */
#pragma unroll
    for (int block = 0; block < T::QK_BLOCKS; ++block)
      tma_load_5d(q_buffer + block * T::Q_BLOCK_BYTES, &p.map_q, q_full, block * T::QK_BOX_INNER, 0,
                  seq.q_row0 + ((tile.m_block * T::BLOCK_M) >> p.pack_shift), tile.q_head0 >> p.pack_shift,
                  seq.q_batch);
    ++q_count;
    if (T::Q_STAGES > 1 && end > first) load_k(end - 1);
    for (int n = end - 2; n >= first; --n) {
      load_k(n);
      load_v(n + 1);
    }
    if (end > first) load_v(first);
  };
  /* A tile of the scheduler's order: decoded, skipped when a varlen sequence is shorter than
   * the longest (returns false), else its visible key blocks (of its split). */
  auto decode_tile = [&](int linear, attn_fwd_tile_coord& tile, attn_fwd_sequence& seq, int& first, int& end) {
    tile = attn_fwd_tile_at(p, linear);
    seq = attn_fwd_sequence_of(p, tile.batch);
    if (tile.m_block * T::BLOCK_M >= seq.seqlen_q << p.pack_shift) return false;
    attn_fwd_key_blocks<T::BLOCK_M, T::BLOCK_N>(p, seq, tile.m_block * T::BLOCK_M, &first, &end);
    attn_fwd_split_key_blocks(p, tile.split, &first, &end);
    return true;
  };
  attn_fwd_tile_coord tile;
  attn_fwd_sequence seq;
  int first, end;
  attn_fwd_reset_tile_counter(p);
  bool counter_seen = false;
  if constexpr (!T::STREAM_K) {
    /* The plain kernels keep the loop the masked grids were measured with: the stream-K
     * kernels' loop below cost causal d256 1k 2 % here (H200, 16th session). */
    for (int linear = blockIdx.x; linear < p.tile_count; linear = attn_fwd_next_tile(p, linear, counter_seen))
      if (decode_tile(linear, tile, seq, first, end)) produce_job(tile, seq, first, end, ATTN_FWD_PIECE_WHOLE);
  } else {
    /* One call site for the loads (a second one for the pieces made ptxas spill in the
     * 4-consumer instance): each turn takes a whole tile before the tail, then this CTA's
     * pieces (attn_fwd_stream_k.cuh). */
    int linear = blockIdx.x;
    int sk_cursor = ATTN_FWD_STREAM_K_NOT_STARTED;
    attn_fwd_stream_k_piece next_piece;
    for (;;) {
      int piece = ATTN_FWD_PIECE_WHOLE;
      if (linear < p.sk_first_tile) {
        const bool visible = decode_tile(linear, tile, seq, first, end);
        linear = attn_fwd_next_tile(p, linear, counter_seen);
        if (!visible) continue;
      } else if (attn_fwd_stream_k_next_piece(p, blockIdx.x, gridDim.x, sk_cursor, next_piece)) {
        tile = attn_fwd_tile_at(p, next_piece.linear);
        seq = attn_fwd_sequence_of(p, tile.batch);
        first = next_piece.first;
        end = next_piece.end;
        piece = next_piece.role;
      } else {
        break;
      }
      produce_job(tile, seq, first, end, piece);
    }
  }
  /* No more tiles: tell the consumers through the job. */
  mbarrier_wait_parity(&sm.q_empty[T::q_stage(q_count)], T::q_parity(q_count) ^ 1u);
  attn_fwd_job_at<T>(sm, T::job_slot(q_count))->first = -1;
  mbarrier_arrive(&sm.q_full[T::q_stage(q_count)]);
}

/* ------------------------------------------------------------------------------------ */
/* Consumer                                                                             */
/* ------------------------------------------------------------------------------------ */

template <int Input, int N, int TransB>
static __device__ __forceinline__ void attn_wgmma_ss(float (&acc)[N], uint64_t desc_a, uint64_t desc_b,
                                                     uint32_t accumulate) {
  if constexpr (Input == ATTN_INPUT_BF16) wgmma_ss_bf16<0, TransB>(acc, desc_a, desc_b, accumulate);
  else wgmma_ss_f16<0, TransB>(acc, desc_a, desc_b, accumulate);
}

/* TransB = 1: B MN-major (V in P·V); 0: K-major (K in S = Q·Kᵀ with Q in registers). */
template <int Input, int N, int TransB = 1>
static __device__ __forceinline__ void attn_wgmma_rs(float (&acc)[N], const uint32_t (&a)[4], uint64_t desc_b,
                                                     uint32_t accumulate) {
  if constexpr (Input == ATTN_INPUT_BF16) wgmma_rs_bf16<TransB>(acc, a, desc_b, accumulate);
  else wgmma_rs_f16<TransB>(acc, a, desc_b, accumulate);
}

/* S = Q·Kᵀ for this consumer's 64 rows (issue only), from the descriptors of Q and of the K
 * slot at k = 0; each k-step moves them by a compile-time offset (smem_desc_advance_low), so
 * the issue sequence is wgmmas and 32-bit adds, not re-encoded descriptors. */
template <int Input, class T, int Accumulators>
static __device__ __forceinline__ void attn_fwd_issue_qk(float (&s)[Accumulators], uint64_t desc_q0,
                                                         uint64_t desc_k0) {
  /* (Accumulators < S_ACCUMULATORS: a narrow block, the slot's first 2 · Accumulators rows;
   * the slot keeps its BLOCK_N-row layout) */
#pragma unroll
  for (int step = 0; step < T::QK_STEPS; ++step) {
    const uint64_t desc_q = smem_desc_advance_low(desc_q0, smem_k_major_offset(T::QK_SWIZZLE, T::BLOCK_M, step * 32u));
    const uint64_t desc_k = smem_desc_advance_low(desc_k0, smem_k_major_offset(T::QK_SWIZZLE, T::BLOCK_N, step * 32u));
    attn_wgmma_ss<Input, Accumulators, 0>(s, desc_q, desc_k, step > 0 ? 1u : 0u);
  }
}

/* The same with Q in registers (attn_fwd_tile::Q_IN_REGISTERS): the A fragment of k-step
 * `step` is q[step]. */
template <int Input, class T, int Accumulators>
static __device__ __forceinline__ void attn_fwd_issue_qk(float (&s)[Accumulators], const uint32_t (&q)[T::QK_STEPS][4],
                                                         uint64_t desc_k0) {
#pragma unroll
  for (int step = 0; step < T::QK_STEPS; ++step) {
    const uint64_t desc_k = smem_desc_advance_low(desc_k0, smem_k_major_offset(T::QK_SWIZZLE, T::BLOCK_N, step * 32u));
    attn_wgmma_rs<Input, Accumulators, 0>(s, q[step], desc_k, step > 0 ? 1u : 0u);
  }
}

/* This consumer's 64 Q rows of buffer `q_stage` as the A fragments of S = Q·Kᵀ, one ldmatrix.x4
 * per k-step of 16 columns: lane l addresses row 16·warp + l % 16 at column 16·step + 8·(l / 16),
 * so matrices 0–3 are (rows 0–7, 8–15) × (columns 0–7, 8–15) of the warp's rows — the wgmma
 * (and mma.m16n8k16) A fragment a0..a3. */
template <class T>
static __device__ __forceinline__ void attn_fwd_load_q_fragments(const attn_fwd_smem& sm, unsigned q_stage,
                                                                 int consumer, int thread,
                                                                 uint32_t (&q)[T::QK_STEPS][4]) {
  const int lane = thread % 32, warp = thread / 32;
  const uint32_t row = static_cast<uint32_t>(consumer * ATTN_FWD_ROWS_PER_CONSUMER + 16 * warp + lane % 16);
  const uint8_t* q_buffer = sm.q + q_stage * T::Q_BYTES;
#pragma unroll
  for (int step = 0; step < T::QK_STEPS; ++step) {
    const uint32_t column = static_cast<uint32_t>(16 * step + 8 * (lane / 16));
    ldmatrix_x4(q[step], q_buffer + smem_k_major_element_offset(T::QK_SWIZZLE, T::BLOCK_M, row, column,
                                                                T::ELEMENT_BYTES));
  }
}

/* O += P·V (issue only) from the descriptor of the V slot at key 0; V is MN-major (contiguous
 * along d_v). accumulate = 0 (the tile's first P·V) makes it O = P·V: O is never zeroed. */
template <int Input, class T, int Steps>
static __device__ __forceinline__ void attn_fwd_issue_pv(float (&o)[T::O_ACCUMULATORS], const uint32_t (&p)[Steps][4],
                                                         uint64_t desc_v0, uint32_t accumulate) {
#pragma unroll
  for (int step = 0; step < Steps; ++step) {
    const uint64_t desc_v = smem_desc_advance_low(desc_v0, smem_mn_major_offset(T::V_SWIZZLE, step * T::K_PER_WGMMA));
    attn_wgmma_rs<Input, T::O_ACCUMULATORS>(o, p[step], desc_v, step == 0 ? accumulate : 1u);
  }
}

/* P (fp32 in the S fragment) → 16-bit A fragments of P·V, one per k-step of 16 keys. */
template <int Input, int Steps>
static __device__ __forceinline__ void attn_fwd_pack_p(uint32_t (&p)[Steps][4], const float (&s)[8 * Steps]) {
#pragma unroll
  for (int step = 0; step < Steps; ++step)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float low = s[8 * step + 2 * i], high = s[8 * step + 2 * i + 1];
      p[step][i] = Input == ATTN_INPUT_BF16 ? pack_bf16x2(low, high) : pack_f16x2(low, high);
    }
}

static __device__ __forceinline__ void attn_fwd_release(uint64_t* empty) {
  if (lane_id() == 0) mbarrier_arrive(empty);
}

/* The same release for all four warps of a consumer warpgroup, by one thread (its caller):
 * where only that thread still waits on the slot (a TMA store's reads). */
static __device__ __forceinline__ void attn_fwd_release_for_warpgroup(uint64_t* empty) {
  mbarrier_arrive_count(empty, ATTN_FWD_WARPGROUP_THREADS / 32);
}

/* A K slot its S has read: released to the producer — but the slot of the tile's last S
 * (`last`) with O_PASS0_IN_K_SLOT, which the consumer holds for O's first pass and announces on
 * k_slot_read instead. */
template <class T>
static __device__ __forceinline__ void attn_fwd_release_k(const attn_fwd_smem& sm, int k_stage, bool last) {
  if constexpr (T::O_PASS0_IN_K_SLOT) {
    if (!last) attn_fwd_release(&sm.k_empty[k_stage]);
    else if (lane_id() == 0) mbarrier_arrive(sm.k_slot_read);
  } else {
    attn_fwd_release(&sm.k_empty[k_stage]);
  }
}

/* Frees Q buffer `q_stage` for a later tile's load once this thread's last S = Q·Kᵀ of the
 * tile completed (the epilogue stages O elsewhere: attn_fwd_tile::O_SEPARATE / O_IN_V_SLOT). */
static __device__ __forceinline__ void attn_fwd_release_q_early(const attn_fwd_smem& sm, unsigned q_stage) {
  mbarrier_arrive(&sm.q_empty[q_stage]);
}

/* Zeroes rows [valid_rows, BLOCK_N) of a V slot (all of its column blocks); both consumer
 * warpgroups take part and meet at a named barrier before either reads the slot. */
template <class T>
static __device__ __forceinline__ void attn_fwd_zero_v_tail(uint8_t* v_slot, int valid_rows, int consumer_thread) {
  constexpr uint32_t ROW_BYTES = static_cast<uint32_t>(T::V_SWIZZLE);
  const int chunks_per_block = (T::BLOCK_N - valid_rows) * static_cast<int>(ROW_BYTES / 16);
  const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
  for (int block = 0; block < T::V_BLOCKS; ++block) {
    uint4* tail = reinterpret_cast<uint4*>(v_slot + block * T::V_BLOCK_BYTES + valid_rows * ROW_BYTES);
    for (int chunk = consumer_thread; chunk < chunks_per_block; chunk += T::CONSUMER_THREADS) tail[chunk] = zero;
  }
  fence_proxy_async_shared_cta(); /* the wgmma (async proxy) reads what these stores wrote */
  named_barrier_sync(ATTN_FWD_BARRIER_V_TAIL, T::CONSUMER_THREADS);
}

/* Ping-pong between the consumer warpgroups: each issues its wgmmas only in its turn and then
 * hands the turn to the next (round robin), so the tensor core alternates between them and one
 * warpgroup's softmax runs while another's GEMMs execute (FlashAttention-3 §3.1). The last
 * consumer grants consumer 0 the first turn at start; consumer 0 takes the one arrival left
 * over at the end. Each turn barrier joins two warpgroups: the one waiting and the one passing.
 * Off in every instance since the 11th session (attn_fwd_tile::PINGPONG says why). */
constexpr int ATTN_FWD_TURN_THREADS = 2 * ATTN_FWD_WARPGROUP_THREADS;

template <class T>
static __device__ __forceinline__ void attn_fwd_wait_turn(int consumer) {
  if constexpr (T::PINGPONG) named_barrier_sync(ATTN_FWD_BARRIER_TURN_0 + consumer, ATTN_FWD_TURN_THREADS);
}

template <class T>
static __device__ __forceinline__ void attn_fwd_pass_turn(int consumer) {
  if constexpr (T::PINGPONG)
    named_barrier_arrive(ATTN_FWD_BARRIER_TURN_0 + (consumer + 1) % T::CONSUMERS, ATTN_FWD_TURN_THREADS);
}

/* Keeps the P·V wait after the softmax. ptxas's scheduler otherwise hoists wgmma.wait_group 0
 * above the whole softmax (bench/sass_attn.sh showed DEPBAR before the row-max shuffles and
 * the exponentials, though the PTX has it after them), so the exponentials ran after P·V
 * instead of under it. A shared store that depends on every exponential (through the row
 * sums), placed before the wait, pins it: ptxas keeps the wait after an earlier shared store.
 * One word per warp, nobody reads it; only lane 0 writes (32 lanes writing different values to
 * one word is a benign race, but compute-sanitizer's racecheck rightly reports it). */
static __device__ __forceinline__ void attn_fwd_pin_softmax(int* pin, const attn_softmax_rows& rows) {
  /* st.shared, not a generic store through `pin` (ST.E with a 64-bit address). */
  if ((threadIdx.x & 31) == 0)
    asm volatile("st.shared.b32 [%0], %1;" ::"r"(smem_u32(pin)), "f"(rows.sum[0] + rows.sum[1]) : "memory");
}

/* A ring slot index as ptxas must see it to build the wgmma descriptors in uniform registers:
 * the position is the same in every lane, but it is carried through a loop whose trip count
 * comes from shared memory, so ptxas treats it as per-thread; shuffled from lane 0 it is
 * visibly uniform. Without this (and uniform_u64 on the base descriptors) every HGMMA of the
 * ping-pong turn waited on 4 R2UR and ~5 integer instructions (SASS, d128: 52 R2UR per key
 * block, 2 with it). */
static __device__ __forceinline__ int attn_fwd_uniform_stage(const ring_position& position) {
  return __shfl_sync(0xffffffffu, static_cast<int>(position.stage), 0);
}

/* Consumer state that lives across the tiles of a CTA. */
struct attn_fwd_consumer_state {
  ring_position k_position, v_position;
  uint32_t q_count; /* tiles taken (the next one's Q buffer, phase and job: attn_fwd_tile::q_stage, ...) */
  uint32_t k_slot_read_phase; /* attn_fwd_smem::k_slot_read's and v_slot_read's next phase (O_PASS0_IN_K_SLOT) */
  int deferred_v_slot;        /* a V slot of O's last TMA store, not released yet (O_PASS0_IN_K_SLOT), or −1 */
  attn_fwd_timeline timeline; /* empty unless FLASHC_ATTN_TIMELINE */
};

/* The V slot whose release attn_fwd_release_o_slot deferred: once the TMA store has read it
 * (thread 0 waits), released for the whole warpgroup. Called after the next tile's first S is
 * issued, before a tile without keys returns, and at the kernel's end. */
template <class T>
static __device__ __forceinline__ void attn_fwd_release_deferred_v_slot(const attn_fwd_smem& sm,
                                                                        attn_fwd_consumer_state& state, int thread) {
  if constexpr (T::O_PASS0_IN_K_SLOT) {
    if (state.deferred_v_slot >= 0) {
      if (thread == 0) {
        tma_wait_group_read<0>();
        attn_fwd_release_for_warpgroup(&sm.v_empty[state.deferred_v_slot]);
      }
      state.deferred_v_slot = -1;
    }
  }
}

/* Whether the key loop ends a tile's rows itself (attn_fwd_finish_rows_early), from the tile's
 * stream-K role: a whole tile's rows are final after its last softmax; a piece's are merged with
 * the other pieces' first, so its epilogue ends them (attn_fwd_epilogue). The caller reads the
 * role before the key loop: with one job slot the producer rewrites it once Q is released, before
 * the epilogue. Constant in the plain kernels. */
template <class T>
static __device__ __forceinline__ bool attn_fwd_rows_end_in_loop(int piece) {
  return T::WHOLE_TILE_ROWS_END_IN_LOOP && piece == ATTN_FWD_PIECE_WHOLE;
}

/* The rows' end moved into the key loop's last block, under its P·V: their full sums and 1/l,
 * and (attn_fwd_tile::EARLY_LSE) the LSE; attn_fwd_epilogue does the rest. */
template <class T>
static __device__ __forceinline__ void attn_fwd_finish_rows_early(const attn_fwd_params& p, bool rows_end_in_loop,
                                                                  attn_softmax_rows& rows,
                                                                  attn_softmax_result& finished) {
  if (rows_end_in_loop) {
    attn_softmax_normalizer(rows, finished);
    if constexpr (T::EARLY_LSE) attn_softmax_lse(rows, p.logit_scale, finished);
  }
}

/* Whether consumer warpgroup `consumer` has no row of the tile at m0 inside its sequence (all
 * 64 packed rows at or past seqlen_q) and follows the key loop idle (attn_fwd_follow_key_loop):
 * the last tile of a sequence that leaves fewer than BLOCK_M − 64 · consumer rows in it, every
 * tile of a decode step (one query row, or a pack of a few heads). Warpgroup-uniform, and the
 * same for every piece of a stream-K tile. Not where a V tail may need zeroing
 * (attn_fwd_params::zero_v_tail: varlen keys, seqused_k, paged KV): the zeroing meets every
 * consumer at a named barrier, and the follower that took part in it (its share of the zeroing
 * inlined) moved ptxas's schedule of the working path: d128 512–16k −0.2 to −0.8 % (H200, 43rd
 * session), where the follower without it reads ±0.3 %. */
template <class T>
static __device__ __forceinline__ bool attn_fwd_consumer_idle(const attn_fwd_params& p, const attn_fwd_sequence& seq,
                                                              int m0, int consumer) {
  static_assert(T::IDLE_CONSUMERS_FOLLOW, "asked only where idle consumers follow the key loop");
  return m0 + consumer * ATTN_FWD_ROWS_PER_CONSUMER >= seq.seqlen_q << p.pack_shift && !p.zero_v_tail;
}

/* The key loop of a tile for an idle consumer (attn_fwd_consumer_idle): none of its rows is
 * stored, so it computes nothing and only keeps the CTA's shared rings moving — it releases Q,
 * then waits for each key block's K and V and releases them, block by block (the producer
 * loads K(n − 1) before V(n), and each of its loads waits only for slots released two blocks
 * earlier, so this order never holds it up). The tensor core, the MUFU and the issue slots then
 * serve the working consumer alone: an idle consumer used to compute S, the softmax and P·V of
 * rows nobody reads, as much work as a working one. No epilogue follows: O and LSE rows past
 * the sequence are never written, and a stream-K tile's idle consumer is idle in all its pieces
 * (it neither publishes nor collects). Only where attn_fwd_tile::IDLE_CONSUMERS_FOLLOW. */
template <class T>
static __device__ __forceinline__ void attn_fwd_follow_key_loop(const attn_fwd_smem& sm, int first, int end,
                                                                attn_fwd_consumer_state& state) {
  static_assert(T::IDLE_CONSUMERS_FOLLOW, "an instance whose idle consumers follow the key loop");
  attn_fwd_release_q_early(sm, T::q_stage(state.q_count - 1u));
  if (end <= first) return;
  auto follow = [&](uint64_t* full, uint64_t* empty, ring_position& position) {
    const int stage = static_cast<int>(position.stage);
    mbarrier_wait_parity(&full[stage], position.phase);
    attn_fwd_release(&empty[stage]);
    ring_advance<T::STAGES>(position);
  };
  for (int n = first; n < end; ++n) {
    follow(sm.k_full, sm.k_empty, state.k_position);
    follow(sm.v_full, sm.v_empty, state.v_position);
  }
}

/* The whole key loop of one tile for consumer warpgroup `consumer`: O (unnormalized) and the
 * softmax rows, and with rows_end_in_loop (attn_fwd_rows_end_in_loop) in `finished` what
 * attn_fwd_finish_rows_early computes of the rows' end (under the last P·V). A tile with no
 * visible key leaves O = 0 and the rows empty. Returns the V slot this consumer still holds
 * for the epilogue's O staging (attn_fwd_tile::O_IN_V_SLOT: the slot of the last P·V, not
 * released yet), or −1; with O_PASS0_IN_K_SLOT it holds the K slot of the last S too, the same
 * index (the K and V rings advance together, once per block). */
template <int Input, class T>
static __device__ __forceinline__ int attn_fwd_consume(const attn_fwd_params& p, const attn_fwd_smem& sm,
                                                        const attn_fwd_sequence& seq, int m0, int first, int end,
                                                        int consumer, int thread, attn_fwd_consumer_state& state,
                                                        float (&o)[T::O_ACCUMULATORS], attn_softmax_rows& rows,
                                                        bool rows_end_in_loop, attn_softmax_result& finished) {
  auto zero_o = [&] {
#pragma unroll
    for (int i = 0; i < T::O_ACCUMULATORS; ++i) o[i] = 0.0f;
  };
  if constexpr (T::ZERO_O_AT_TILE_START) zero_o(); /* else the tile's first P·V writes O (accumulate = 0) */
  attn_softmax_init(rows);
  const unsigned q_stage = T::q_stage(state.q_count - 1u); /* this tile's Q buffer (the caller counted it) */
  if (end <= first) { /* (the caller waited for Q) */
    if constexpr (!T::ZERO_O_AT_TILE_START) zero_o();
    attn_fwd_finish_rows_early<T>(p, rows_end_in_loop, rows, finished);
    attn_fwd_release_q_early(sm, q_stage);
    attn_fwd_release_deferred_v_slot<T>(sm, state, thread);
    return -1;
  }
  if constexpr (T::O_PASS0_IN_K_SLOT) state.k_slot_read_phase ^= 1u; /* this tile's phase is the one before */
  uint32_t q_fragments[T::Q_IN_REGISTERS ? T::QK_STEPS : 1][4];
  if constexpr (T::Q_IN_REGISTERS) {
    attn_fwd_load_q_fragments<T>(sm, q_stage, consumer, thread, q_fragments);
    attn_fwd_release_q_early(sm, q_stage); /* read once: the next tile's Q may load */
  }

  const int row0 = m0 + consumer * ATTN_FWD_ROWS_PER_CONSUMER; /* packed row of this warpgroup's first row */
  const uint32_t q_address = smem_u32(sm.q) + q_stage * T::Q_BYTES +
                             consumer * ATTN_FWD_ROWS_PER_CONSUMER * static_cast<uint32_t>(T::QK_SWIZZLE);
  /* Descriptors at k = 0 of this consumer's Q rows and of ring slot 0; a slot is a fixed
   * offset further (smem_desc_advance_low). Warp-uniform by shuffle (see
   * attn_fwd_uniform_stage). */
  const uint64_t desc_q_thread = smem_desc_k_major_at(q_address, T::QK_SWIZZLE, T::BLOCK_M, 0);
  const uint64_t desc_q = T::UNIFORM_Q_DESCRIPTOR ? uniform_u64(desc_q_thread) : uniform_desc_address(desc_q_thread);
  const uint64_t desc_k_slot0 = uniform_u64(smem_desc_k_major_at(smem_u32(sm.k), T::QK_SWIZZLE, T::BLOCK_N, 0));
  const uint64_t desc_v_slot0 = uniform_u64(smem_desc_mn_major_at(smem_u32(sm.v), T::V_SWIZZLE, T::BLOCK_N, 0));
  /* S_n into `scores` from K slot `k_stage`, Q from registers or shared memory. */
  auto issue_s = [&](auto& scores, int k_stage) {
    const uint64_t desc_k = smem_desc_advance_low(desc_k_slot0, k_stage * T::K_STAGE_BYTES);
    if constexpr (T::Q_IN_REGISTERS) attn_fwd_issue_qk<Input, T>(scores, q_fragments, desc_k);
    else attn_fwd_issue_qk<Input, T>(scores, desc_q, desc_k);
  };
  const int consumer_thread = consumer * ATTN_FWD_WARPGROUP_THREADS + thread;
  /* The last key block may need its V tail zeroed (see attn_fwd_params.zero_v_tail) — not with
   * narrow blocks (attn_fwd_key_map_of): the sequence's length is then exact, so no block is
   * padded or masked. */
  const attn_fwd_key_map<T> keys = attn_fwd_key_map_of<T>(p, seq.seqlen_k);
  const bool has_narrow = keys.wide != INT_MAX;
  const int tail_rows = seq.seqlen_k - (end - 1) * T::BLOCK_N;
  const bool zero_tail = p.zero_v_tail && tail_rows < T::BLOCK_N && !has_narrow;

  /* Which key blocks need masks, computed once per tile (attn_fwd_masked_blocks); an instance
   * without windows (attn_fwd_tile::WINDOWS) masks only the seqlen_k tail. */
  /* With narrow blocks nothing is masked and no override is needed: the length is
   * a · BLOCK_N + b · NARROW (b ≥ 1), the wide blocks are 0 .. a − 1, all below masked.from =
   * ⌊length / BLOCK_N⌋ ≥ a; narrow blocks never take the mask (their width is a compile-time
   * constant), and narrow_tail is set only without windows (docs/NOTES-attn-fwd.md, 27th). */
  const attn_fwd_masked_blocks masked = attn_fwd_masked_blocks_of<T::BLOCK_M, T::BLOCK_N, T::WINDOWS>(p, seq, m0);

  float s[T::S_ACCUMULATORS];
  uint32_t pfrag[T::PV_STEPS][4];
  float o_scale[2];
  bool o_rescale = false; /* O must be multiplied by o_scale before the next P·V */

  auto s_of = [&](auto width) -> decltype(auto) { return attn_fwd_block_scores<T>(s, width); };
  auto p_of = [&](auto width) -> decltype(auto) { return attn_fwd_block_p<T>(pfrag, width); };
  auto scores_to_p = [&](int n, auto width) {
    auto& scores = s_of(width);
    if (p.softcap > 0.0f) attn_softcap(scores, p.softcap_input_scale, p.softcap);
    if constexpr (!decltype(width)::value) {
      if (masked.contains(n))
        attn_fwd_apply_mask<T::BLOCK_N, T::WINDOWS>(s, p, seq, row0, n * T::BLOCK_N, thread);
    }
    o_rescale = attn_softmax_step<T::CONDITIONAL_RESCALE, T::SOFTMAX_MAX_TREE, T::SOFTMAX_SPLIT_SUM>(
        scores, rows, p.softmax_scale_log2, o_scale);
  };
  /* The blocks' widths as arguments of the sections below (only the NARROW_TAIL instance has
   * narrow blocks). */
  constexpr attn_fwd_narrow_tag<false> wide_block{};
  constexpr attn_fwd_narrow_tag<true> narrow_block{};

  attn_fwd_stamp(state.timeline, ATTN_EVENT_PROLOGUE);
  /* First block: S only. */
  auto first_block = [&](auto width) {
    const int stage = attn_fwd_uniform_stage(state.k_position);
    mbarrier_wait_parity(&sm.k_full[stage], state.k_position.phase);
    wgmma_fence_operand(s);
    attn_fwd_wait_turn<T>(consumer);
    attn_fwd_stamp(state.timeline, ATTN_EVENT_TURN);
    wgmma_fence();
    issue_s(s_of(width), stage);
    wgmma_commit_group();
    attn_fwd_pass_turn<T>(consumer);
    attn_fwd_stamp(state.timeline, ATTN_EVENT_ISSUED);
    attn_fwd_release_deferred_v_slot<T>(sm, state, thread);
    wgmma_wait_group<0>();
    wgmma_fence_operand(s);
    attn_fwd_stamp(state.timeline, ATTN_EVENT_S_READY);
    attn_fwd_release_k<T>(sm, stage, first == end - 1);
    if (!T::Q_IN_REGISTERS && first == end - 1) attn_fwd_release_q_early(sm, q_stage);
    ring_advance<T::STAGES>(state.k_position);
    scores_to_p(end - 1, width);
    /* O holds nothing until the tile's first P·V overwrites it (accumulate = 0): nothing to
     * rescale. */
    o_rescale = false;
    attn_fwd_stamp(state.timeline, ATTN_EVENT_SOFTMAX);
    attn_fwd_pack_p<Input>(p_of(width), s_of(width));
  };
  if constexpr (T::NARROW_TAIL) {
    if (keys.narrow(end - 1)) first_block(narrow_block);
    else first_block(wide_block);
  } else {
    first_block(wide_block);
  }

  /* Only the loop's first P·V (or the last-block section's) reads block end − 1's V: its tail
   * is zeroed here, before any turn (the zeroing meets the other consumers at a barrier), so the
   * loop waits for V between the S and the P·V issue (S does not wait for V; H200 +0.3–2.9 %)
   * with no per-block test. */
  if (zero_tail && end - 1 > first) {
    const int v_stage = attn_fwd_uniform_stage(state.v_position);
    mbarrier_wait_parity(&sm.v_full[v_stage], state.v_position.phase);
    attn_fwd_zero_v_tail<T>(sm.v + v_stage * T::V_STAGE_BYTES, tail_rows, consumer_thread);
  }

  /* S_n at block n's width, P_{n+1}·V_{n+1} at block n + 1's. */
  auto loop_block = [&](int n, auto s_width, auto pv_width) {
    const int k_stage = attn_fwd_uniform_stage(state.k_position), v_stage = attn_fwd_uniform_stage(state.v_position);
    mbarrier_wait_parity(&sm.k_full[k_stage], state.k_position.phase);
    wgmma_fence_operand(s);
    wgmma_fence_operand(o);
#pragma unroll
    for (int step = 0; step < T::PV_STEPS; ++step) wgmma_fence_operand(pfrag[step]);
    attn_fwd_wait_turn<T>(consumer);
    attn_fwd_stamp(state.timeline, ATTN_EVENT_TURN);
    wgmma_fence();
    issue_s(s_of(s_width), k_stage);
    wgmma_commit_group();
    mbarrier_wait_parity(&sm.v_full[v_stage], state.v_position.phase);
    /* While S_n computes: bring O to the row maxima of P_{n+1} (the factor the previous
     * softmax step returned), then add P_{n+1}·V_{n+1}. */
    if (o_rescale) attn_rescale_rows(o, o_scale);
    wgmma_fence_operand(o);
    wgmma_fence();
    attn_fwd_issue_pv<Input, T>(o, p_of(pv_width), smem_desc_advance_low(desc_v_slot0, v_stage * T::V_STAGE_BYTES),
                                n == end - 2 ? 0u : 1u);
    wgmma_commit_group();
    attn_fwd_pass_turn<T>(consumer);
    attn_fwd_stamp(state.timeline, ATTN_EVENT_ISSUED);
    wgmma_wait_group<1>(); /* S_n is ready; P·V may still run */
    wgmma_fence_operand(s);
    attn_fwd_stamp(state.timeline, ATTN_EVENT_S_READY);
    attn_fwd_release_k<T>(sm, k_stage, n == first);
    if (!T::Q_IN_REGISTERS && n == first) attn_fwd_release_q_early(sm, q_stage);
    ring_advance<T::STAGES>(state.k_position);
    scores_to_p(n, s_width);
    attn_fwd_pin_softmax(&sm.softmax_pins[consumer_thread / 32], rows);
    attn_fwd_stamp(state.timeline, ATTN_EVENT_SOFTMAX);
    wgmma_wait_group<0>();
    wgmma_fence_operand(o);
    attn_fwd_stamp(state.timeline, ATTN_EVENT_PV_READY);
    attn_fwd_release(&sm.v_empty[v_stage]);
    ring_advance<T::STAGES>(state.v_position);
    attn_fwd_pack_p<Input>(p_of(s_width), s_of(s_width)); /* o_scale waits for the next block, under its S */
  };
  int n = end - 2;
  if constexpr (T::NARROW_TAIL) {
    /* the narrow blocks are the last ones: (narrow, narrow) pairs, one (wide, narrow), then the
     * plain loop */
    for (; n >= first && keys.narrow(n); --n) loop_block(n, narrow_block, narrow_block);
    if (n >= first && keys.narrow(n + 1)) loop_block(n--, wide_block, narrow_block);
  }
  for (; n >= first; --n) loop_block(n, wide_block, wide_block);

  /* Last block: P·V only. */
  auto last_block = [&](auto width) {
    const int v_stage = attn_fwd_uniform_stage(state.v_position);
    mbarrier_wait_parity(&sm.v_full[v_stage], state.v_position.phase);
    if (zero_tail && first == end - 1) attn_fwd_zero_v_tail<T>(sm.v + v_stage * T::V_STAGE_BYTES, tail_rows, consumer_thread);
    if (o_rescale) attn_rescale_rows(o, o_scale);
    wgmma_fence_operand(o);
    attn_fwd_wait_turn<T>(consumer);
    attn_fwd_stamp(state.timeline, ATTN_EVENT_TURN);
    wgmma_fence();
    attn_fwd_issue_pv<Input, T>(o, p_of(width), smem_desc_advance_low(desc_v_slot0, v_stage * T::V_STAGE_BYTES),
                                first == end - 1 ? 0u : 1u);
    wgmma_commit_group();
    attn_fwd_pass_turn<T>(consumer);
    attn_fwd_stamp(state.timeline, ATTN_EVENT_ISSUED);
    attn_fwd_finish_rows_early<T>(p, rows_end_in_loop, rows, finished); /* the rows are final: under the last P·V */
    wgmma_wait_group<0>();
    wgmma_fence_operand(o);
    attn_fwd_stamp(state.timeline, ATTN_EVENT_PV_READY);
    if constexpr (!T::O_IN_V_SLOT) attn_fwd_release(&sm.v_empty[v_stage]);
    if constexpr (T::O_PASS0_IN_K_SLOT) { /* held for O's second pass: announce the read */
      if (lane_id() == 0) mbarrier_arrive(sm.v_slot_read);
    }
    ring_advance<T::STAGES>(state.v_position);
    return T::O_IN_V_SLOT ? v_stage : -1;
  };
  if constexpr (T::NARROW_TAIL) {
    if (keys.narrow(first)) return last_block(narrow_block);
  }
  return last_block(wide_block);
}

#endif
