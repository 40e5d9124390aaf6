/*
 * attn_fwd_config.cuh — compile-time shape of the Hopper attention forward (sm_90a): the one
 * table of tile sizes per head dimension, and every other constant derived from it (swizzle
 * and TMA boxes, WGMMA steps, accumulator counts, the shared-memory layout, roles and their
 * register budgets).
 *
 * Roles (attn_fwd_kernel.cuh): warpgroup 0 = producer (TMA), warpgroups 1..C = consumers; a
 * CTA tile is BLOCK_M = 64 C query rows of one (batch, query head), 64 rows per consumer, and
 * the key/value sequence is walked in blocks of BLOCK_N keys through a STAGES-deep ring.
 *
 * Instances (attn_fwd_instances.cuh: head dims and BLOCK_N, which registers bound):
 *   d    d_v   BLOCK_N     swizzle   smem (2 stages, Q + K + V)   O staging
 *   64   64    128, 192    128B       80, 112 KB                  + 16 KB of its own
 *   96   96    128          64B      120 KB                       + 24 KB of its own
 *   128  128   128, 160    128B      160, 192 KB                  + 32 KB of its own
 *   192  128   112         128B      188 KB                       + 32 KB of its own
 *   192  192   112         128B      216 KB                       last K slot, then last V slot
 *   256  256    80         128B      224 KB                       last K slot, then last V slot
 * Check: `nvcc -Xptxas -v` on src/kernels/inst/attn_fwd_*.cu shows no spills and no stack
 * frame; the static_asserts below hold the arithmetic.
 */
#ifndef FLASHC_KERNELS_ATTN_FWD_CONFIG_CUH
#define FLASHC_KERNELS_ATTN_FWD_CONFIG_CUH

#include <stdint.h>

#include "kernels/common/ptx_desc.cuh"

/* Input element kinds (a compile-time parameter; the output has the input's dtype). */
enum attn_input { ATTN_INPUT_F16 = 0, ATTN_INPUT_BF16 = 1 };

constexpr uint32_t ATTN_FWD_SMEM_BYTES_MAX = 227u * 1024u; /* opt-in maximum per block on sm_90 */
constexpr uint32_t ATTN_FWD_SMEM_BYTES_PER_SM = 228u * 1024u; /* an SM's whole shared memory on sm_90 */
constexpr uint32_t ATTN_FWD_SMEM_RESERVED_PER_CTA = 1024u;     /* the system's share of it per resident CTA */
constexpr uint32_t ATTN_FWD_SMEM_ALIGNMENT = 1024u;        /* the 128B swizzle pattern repeat */
constexpr uint32_t ATTN_FWD_SMEM_BARRIER_BYTES = 256u;

constexpr int ATTN_FWD_WARPGROUP_THREADS = 128;
constexpr int ATTN_FWD_ROWS_PER_CONSUMER = 64; /* one wgmma m64 */
constexpr int ATTN_FWD_MAX_CONSUMERS = 4;
constexpr int ATTN_FWD_REGISTER_FILE = 65536;  /* per SM, shared by its resident CTAs */
constexpr int ATTN_FWD_PRODUCER_REGISTERS = 24; /* setmaxnreg's minimum: the producer holds little */

/* Named barriers (0 is __syncthreads). */
enum attn_fwd_named_barrier {
  ATTN_FWD_BARRIER_EPILOGUE_0 = 1, /* + consumer index: one warpgroup's O staging is complete */
  ATTN_FWD_BARRIER_V_TAIL = ATTN_FWD_BARRIER_EPILOGUE_0 + ATTN_FWD_MAX_CONSUMERS, /* all consumers: zeroed V tail written */
  ATTN_FWD_BARRIER_TURN_0 = ATTN_FWD_BARRIER_V_TAIL + 1, /* + consumer index: its turn to issue wgmmas (ping-pong) */
  /* all consumers: every P·V of the tile has read the V slot that O is staged in next (a V-slot
   * instance with one pass; the two-pass ones wait on attn_fwd_smem::v_slot_read) */
  ATTN_FWD_BARRIER_O_SLOT = ATTN_FWD_BARRIER_TURN_0 + ATTN_FWD_MAX_CONSUMERS
};
static_assert(ATTN_FWD_BARRIER_O_SLOT < 16, "16 named barriers per CTA");


/* CTAs resident per SM for an instance of head dim d and `consumers` consumer warpgroups (host
 * and device). The one-consumer instances (64-row tiles, for masked problems whose rows see
 * few keys) run independent CTAs side by side, as many as the registers hold: three at d64
 * (256 threads × 80 registers at launch; the consumer takes 136 by setmaxnreg), two at wider
 * heads (232; d128 had such an instance until the 24th session). One CTA's tile boundary (Q
 * load, first S, last P·V, epilogue) then overlaps the others' key loops instead of idling the
 * SM. H200, bf16, against the 2-consumer instances (19th session): causal d64 512 / 1k / 2k / 4k
 * +21 / +13 / +8 / +1 %; causal d128 512–4k −3 to −17 % (each CTA loads every key block for
 * only 64 rows), and its windows lost to 2-consumer 128-key blocks (attn_fwd_launch.cu). Every
 * other instance is one CTA per SM. */
static __host__ __device__ constexpr int attn_fwd_ctas_per_sm(int head_dim, int consumers) {
  return consumers != 1 ? 1 : head_dim <= 64 ? 3 : 2;
}

/* The swizzle of a tile whose rows are `bytes` long: 128B when rows are whole 128-byte lines,
 * else 64B (d = 96: 192-byte rows are three 64-byte blocks). */
static __host__ __device__ constexpr smem_swizzle attn_fwd_swizzle(int row_bytes) {
  return row_bytes % 128 == 0 ? SMEM_SWIZZLE_128B : SMEM_SWIZZLE_64B;
}

/* The kernels an instance is built as (attn_fwd_instances.cuh): the plain persistent kernel, the
 * one with the stream-K tail (attn_fwd_stream_k.cuh), and, for the d128 160-key instance only, a
 * stream-K kernel whose key loop ends sequences in narrow blocks (attn_fwd_tile::NARROW_TAIL):
 * the narrow blocks' code cost the stream-K kernel 2 % on problems without them (H200, 25th
 * session), so those keep the stream-K kernel without it. */
enum attn_fwd_kind { ATTN_FWD_KIND_PLAIN = 0, ATTN_FWD_KIND_STREAM_K = 1, ATTN_FWD_KIND_STREAM_K_NARROW = 2 };

template <int HeadDim, int HeadDimV, int BlockN, int Consumers, int Kind = ATTN_FWD_KIND_PLAIN>
struct attn_fwd_tile {
  /* The stream-K tail of uniform grids (attn_fwd_stream_k.cuh): a kernel of its own
   * (ATTN_FWD_STREAM_K_INSTANCES). */
  static constexpr bool STREAM_K = Kind != ATTN_FWD_KIND_PLAIN;
  static constexpr int HEAD_DIM = HeadDim;
  static constexpr int HEAD_DIM_V = HeadDimV;
  static constexpr int ELEMENT_BYTES = 2;
  /* Roles: one producer warpgroup and `Consumers` consumer warpgroups of 64 query rows each. */
  static constexpr int CONSUMERS = Consumers;
  static constexpr int CONSUMER_THREADS = Consumers * ATTN_FWD_WARPGROUP_THREADS;
  static constexpr int THREADS = ATTN_FWD_WARPGROUP_THREADS + CONSUMER_THREADS;
  static constexpr int BLOCK_M = Consumers * ATTN_FWD_ROWS_PER_CONSUMER;
  /* setmaxnreg: the producer needs few registers, consumers hold O, S and P. The CTA owns what
   * it was launched with, THREADS × LAUNCH_REGISTERS (the register file / THREADS rounded down
   * to a multiple of 8: 168 for 384 threads, 128 for 512; with CTAS_PER_SM CTAs sharing the
   * file, its share: 80 for d64's one-consumer instance's 3 × 256); a setmaxnreg.inc beyond that pool
   * never returns (a hang, not an error), so the split must fit it: 128·24 + 256·240 = 64512
   * with 2 consumers, 128·24 + 384·160 = 64512 with 3. */
  static constexpr int CTAS_PER_SM = attn_fwd_ctas_per_sm(HeadDim, Consumers);
  static constexpr int LAUNCH_REGISTERS = (ATTN_FWD_REGISTER_FILE / (THREADS * CTAS_PER_SM)) / 8 * 8;
  /* Shared memory one CTA may take with CTAS_PER_SM of them resident. */
  static constexpr uint32_t SMEM_BYTES_LIMIT =
      CTAS_PER_SM == 1 ? ATTN_FWD_SMEM_BYTES_MAX : ATTN_FWD_SMEM_BYTES_PER_SM / CTAS_PER_SM - ATTN_FWD_SMEM_RESERVED_PER_CTA;
  static constexpr int CONSUMER_REGISTERS_FIT =
      ((THREADS * LAUNCH_REGISTERS - ATTN_FWD_WARPGROUP_THREADS * ATTN_FWD_PRODUCER_REGISTERS) / CONSUMER_THREADS) /
      8 * 8;
  static constexpr int CONSUMER_REGISTERS = CONSUMER_REGISTERS_FIT < 240 ? CONSUMER_REGISTERS_FIT : 240;
  static_assert(Consumers >= 1 && Consumers <= ATTN_FWD_MAX_CONSUMERS, "consumer warpgroups");
  static_assert(ATTN_FWD_WARPGROUP_THREADS * ATTN_FWD_PRODUCER_REGISTERS + CONSUMER_THREADS * CONSUMER_REGISTERS <=
                    THREADS * LAUNCH_REGISTERS,
                "register budget: the setmaxnreg split must fit the registers the CTA was launched with");
  static constexpr int BLOCK_N = BlockN;
  /* K/V ring depth. Two everywhere but the 64-key instances, whose blocks come twice as often:
   * a third stage for the 4-consumer one +1.8 % at 512, +0.6 % at 1k, ±0 at 1536; a fourth no
   * better (H200, 14th session); for d64's one-consumer one (three such CTAs still fit an SM; the
   * 80-key one's would not, nor d128's two) causal 512 +1.1 %, 1k–4k ±0.1 % (19th session). Deeper rings for
   * the 2-consumer instances: d64 ±0 at 1k, −2 to −3 % at 4k/16k (5th session). */
  static constexpr int STAGES = Consumers == 4 || (Consumers == 1 && BlockN == 64 && HeadDim == 64) ? 3 : 2;
  /* Ping-pong of the consumer warpgroups' wgmma issues (attn_fwd_mainloop.cuh), as
   * FlashAttention-3 does for 16-bit inputs with d ≤ 128. Off: since the softmax runs under
   * P·V (the pin) and the per-block work shrank, the turns only delay issue (H200, same
   * process, 11th session: without them d128 +2.0–2.8 % at 1k–16k and causal, d64 +1.5–5.6 %
   * on top of that; 12th session: d96 −1.3 to −1.5 % with them). It won in the 3rd session,
   * when the exponentials still waited for P·V; the event timeline (attn_fwd_timeline.h)
   * showed each warpgroup holding its turn ~1000 cycles while its wgmmas queued behind the
   * other's. Turns for the softmax instead (the consumers' softmaxes one after another) lost
   * too: −1 to −9 %, −29 % with three consumers (12th session). */
  static constexpr bool PINGPONG = false;
  /* Skip O's rescale while the row maxima barely move (attn_fwd_softmax.cuh). Pays where O's
   * rescale is long (48+ multiplications per thread and block) and, at d_v 64, with wide key
   * blocks or three consumers; at d_v 64 with 128-key blocks the votes cost more than the 32
   * multiplications they skip (H200, same process, 11th session: 192-key blocks +4.6 % causal
   * 4k, the 3-consumer instance +2.5–3.6 %, 128-key blocks −3.5 % at 1k; 12th session, without
   * ping-pong: d_v 96 +5.8 % at 1k and +7.7 % at 4k, d_v 64 with 128-key blocks −1.6 % at 1k;
   * 14th session: the 4-consumer instance +5.9 % at 512, +6.8 % at 1k, +7.1 % at 1536; 23rd
   * session, d64's one-consumer instances, bf16 causal 512 / 1k / 2k / 4k +0.5 / +1.9 / +3.3 /
   * +4.3 %, growing with the keys a row sees; why it pays there and not in the 2-consumer
   * 128-key instance is not measured). */
  static constexpr bool CONDITIONAL_RESCALE = HeadDimV >= 96 || Consumers >= 3 || Consumers == 1 || BlockN >= 192;
  /* Q's wgmma descriptor made visibly warp-uniform (attn_fwd_uniform_stage), so ptxas keeps
   * the per-k-step Q descriptors in uniform registers across the key loop. At d256 its 16
   * loop-invariant descriptors cost 12–20 bytes of spill, so there only the address word is
   * shuffled (uniform_desc_address): no spill, and the key loop's R2UR moves fall from 36 to
   * 20 per block (SASS, 2026-11-30; +4–11 % at d256). Re-shuffling it in every key block
   * takes them to 5 and changed nothing measurable (H200, ±0.5 %), so it is not done. */
  /* Nor in the narrow-tail stream-K kernel (NARROW_TAIL below): with the narrow blocks' code
   * beside it, the loop held the eight descriptors in ordinary registers and the kernel lost
   * 2–3 % on d128 4k–16k; with the address word alone shuffled it gains what the narrow blocks
   * save (H200, 25th session, docs/PERF.md). */
  static constexpr bool UNIFORM_Q_DESCRIPTOR =
      HeadDim < 256 && Kind != ATTN_FWD_KIND_STREAM_K_NARROW;
  /* The epilogue stages O with stmatrix.x4 (two 8-column blocks per instruction,
   * attn_fwd_epilogue.cuh): +1.4–2.7 % at 1k keys. Not for the 3-consumer instance, whose
   * 128-register budget made ptxas spill 4 bytes (in the mask code) with it: it keeps one
   * 4-byte store per accumulator pair. */
  static constexpr bool STMATRIX_O_STAGING = Consumers != 3;
  /* Row maxima by a pairwise tree (attn_block_row_max): not for the 3-consumer instance,
   * where it lost (registers). The one-consumer instances take it and stmatrix above as the
   * 2-consumer ones do (not measured without). */
  static constexpr bool SOFTMAX_MAX_TREE = Consumers <= 2;
  /* Row sums in two interleaved partial sums (two dependent FADD chains of half the length):
   * the 3-consumer instance +1–2 % (H200, 11th session); the two-consumer ones lost 1–2 %. */
  static constexpr bool SOFTMAX_SPLIT_SUM = Consumers == 3;
  /* Whether the instance handles sliding windows and causal masks. The 3-consumer instance is
   * launched only for problems without them (consumers_for_problem), so its key loop tests and
   * masks only the seqlen_k tail (the per-block window test cost ~7 % of its consumers' samples,
   * ncu, d64 16k). The 4-consumer instance with windows spilled 28 bytes and ran causal d64
   * 4–8 % slower than the 2-consumer one at 512–1k (14th session). */
  static constexpr bool WINDOWS = Consumers <= 2;
  /* The epilogue reads its tile's coordinates from the job in shared memory again after the key
   * loop (attn_fwd_kernel.cuh) instead of holding them in registers through it: the 4-consumer
   * instance (112 registers) spilled 12 bytes without it; d128 with 128-key blocks spilled 4
   * with it, so the others keep them in registers. */
  static constexpr bool EPILOGUE_REREADS_JOB = Consumers == 4;
  /* The rows' full sums and 1/l (attn_softmax_normalizer) and their LSE (attn_softmax_lse)
   * computed while the tile's last P·V runs rather than after it: the rows are final once the
   * last softmax is done, and this is a chain of shuffles, a reciprocal and a logarithm that
   * queue behind the other consumer's softmax (~700 cycles of a consumer's tile boundary at
   * d128 1k, event timeline, 20th session). H200, ab_attn against the session's main, bf16:
   * d64 causal 1k / 2k +4.0 / +2.9 %, d96 1k +2.4 %, d128 1k +1.7 %, d256 ±0. The d128 128-key
   * consumer spilled 4 bytes with the LSE moved too, so only 1/l moves there (+1.3 % at 1k, the
   * LSE in the epilogue cost the others ~1 %). In the stream-K kernels whole tiles do the same;
   * pieces merge their rows after the loop (attn_fwd_rows_end_in_loop). */
  static constexpr bool EARLY_LSE = !(HeadDim == 128 && BlockN == 128);
  /* ... except the 4-consumer stream-K kernel, whose 112-register consumers spilled 28–40 bytes
   * with the runtime choice: it ends every tile's rows in the epilogue. */
  static constexpr bool WHOLE_TILE_ROWS_END_IN_LOOP = !(Consumers == 4 && STREAM_K);
  /* A tile's first P·V overwrites O (wgmma accumulate = 0) instead of O being zeroed in the
   * key loop's set-up, one move per accumulator; the 3-consumer stream-K kernel (128 registers)
   * spilled 16 bytes without the zeroing, so it keeps it. */
  static constexpr bool ZERO_O_AT_TILE_START = Consumers == 3 && STREAM_K;
  /* S = Q·Kᵀ with Q in registers (RS wgmma; A fragments loaded by ldmatrix once per tile,
   * attn_fwd_load_q_fragments) instead of read from shared memory by every S (SS), and Q's
   * buffer freed as soon as they are loaded: +d / 4 registers per consumer thread, for less
   * shared-memory traffic (bench/wgmma_rates.cu ran SS and RS at the same rate, the clock
   * 0.2–0.8 % higher with RS, 22nd session; the kernels run at the power limit). H200, ab_attn
   * against the switch off on every 2-consumer instance of d ≤ 128 but d128's 160-key one (100
   * bytes of spill there), 36th session, bests of 8–12 rounds: d64 192-key (causal 16k) +1.1 /
   * +1.0 / +0.3 % (bf16, bf16, fp16), d96 1k–4k −0.4 to +0.9 %, d128 128-key causal 2k–8k −0.2
   * to +0.4 %, but d128 128-key at 512–1k −0.5 to −1.3 % (short tiles: the fragments' loads at
   * each tile start are not paid back). So on where tiles are long and the instance is not
   * d128's: d64's 192-key instance (long masked problems) and d96. Also d64's one-consumer
   * 64-key instance (three CTAs per SM, short masked rows; causal 512 / 1k, medians: 37th
   * session, 10 rounds, +0.5 / +2.2 % bf16, +0.5 / +0.7 % fp16; 38th, 12 rounds, +0.6 / +0.6 %
   * bf16, +0.6 / +0.7 % fp16; why short tiles gain here and lose at d128 is not measured —
   * three CTAs per SM share its shared memory's bandwidth). Its 80-key sibling and the 3- and
   * 4-consumer instances spill with it (24–96 bytes; the 4-consumer one C7512). */
  static constexpr bool Q_IN_REGISTERS =
      (Consumers == 1 && BlockN == 64) || (Consumers == 2 && ((HeadDim == 64 && BlockN == 192) || HeadDim == 96));
  static_assert(!PINGPONG || Consumers >= 2, "ping-pong needs a second consumer");

  /* Q and K are K-major operands (contiguous along d); V is the MN-major B operand of P·V
   * (contiguous along d_v). Each is stored as blocks of one swizzle span of columns. */
  static constexpr smem_swizzle QK_SWIZZLE = attn_fwd_swizzle(HeadDim * ELEMENT_BYTES);
  static constexpr smem_swizzle V_SWIZZLE = attn_fwd_swizzle(HeadDimV * ELEMENT_BYTES);
  static constexpr int QK_BOX_INNER = static_cast<int>(QK_SWIZZLE) / ELEMENT_BYTES; /* columns per block */
  static constexpr int V_BOX_INNER = static_cast<int>(V_SWIZZLE) / ELEMENT_BYTES;
  static constexpr int QK_BLOCKS = HeadDim / QK_BOX_INNER;
  static constexpr int V_BLOCKS = HeadDimV / V_BOX_INNER;

  static constexpr int K_PER_WGMMA = 16;
  static constexpr int QK_STEPS = HeadDim / K_PER_WGMMA;  /* S = Q·Kᵀ: k-steps over d */
  static constexpr int PV_STEPS = BLOCK_N / K_PER_WGMMA;  /* O += P·V: k-steps over the keys */
  static constexpr int S_ACCUMULATORS = BLOCK_N / 2;      /* fp32 per thread of a 64 × BLOCK_N wgmma */
  static constexpr int O_ACCUMULATORS = HeadDimV / 2;
  /* Mixed-width key loop (attn_fwd_narrow_blocks): the d128 160-key instance runs the last b
   * blocks of a sequence of L = a · BLOCK_N + b · NARROW_N keys NARROW_N wide (b < BLOCK_N /
   * NARROW_STEP), so a length that is a multiple of NARROW_STEP (with a ≥ 0) needs neither a
   * padded nor a masked last block: 4096 = 24 · 160 + 2 · 128, 8192 = 48 · 160 + 4 · 128. The
   * producer still loads BLOCK_N rows per slot (at the narrow blocks' key offsets); the narrow
   * S wgmma reads the slot's first NARROW_N rows, the narrow P·V its first NARROW_PV_STEPS. */
  /* (its plain kernel and its narrow stream-K kernel; the other stream-K kernel has none) */
  static constexpr bool NARROW_TAIL =
      HeadDim == 128 && HeadDimV == 128 && BlockN == 160 && Consumers == 2 && Kind != ATTN_FWD_KIND_STREAM_K;
  static_assert(Kind != ATTN_FWD_KIND_STREAM_K_NARROW || NARROW_TAIL, "a narrow stream-K kernel of the d128 160-key instance only");
  static constexpr int NARROW_N = 128;
  static constexpr int NARROW_STEP = NARROW_TAIL ? BLOCK_N - NARROW_N : 1; /* 32 */
  static constexpr int NARROW_S_ACCUMULATORS = NARROW_N / 2;
  static constexpr int NARROW_PV_STEPS = NARROW_N / K_PER_WGMMA;
  /* The narrow blocks b a sequence of seqlen_k keys ends in, 0 when it has none: L = a · BLOCK_N
   * + b · NARROW_N with b = ((BLOCK_N − L mod BLOCK_N) mod BLOCK_N) / NARROW_STEP for L a
   * multiple of NARROW_STEP and a ≥ 0 (a + b = ⌈L / BLOCK_N⌉ blocks). One rule for the kernel's
   * key map (attn_fwd_key_map_of) and the launcher's kernel choice (kind_for). */
  static __host__ __device__ constexpr int narrow_blocks(int seqlen_k) {
    if (!NARROW_TAIL || seqlen_k % NARROW_STEP != 0) return 0;
    const int blocks = (seqlen_k + BLOCK_N - 1) / BLOCK_N;
    const int narrow = (BLOCK_N - seqlen_k % BLOCK_N) % BLOCK_N / NARROW_STEP;
    return narrow <= blocks ? narrow : 0;
  }

  static constexpr uint32_t Q_BYTES = BLOCK_M * HeadDim * ELEMENT_BYTES;
  static constexpr uint32_t K_STAGE_BYTES = BLOCK_N * HeadDim * ELEMENT_BYTES;
  static constexpr uint32_t V_STAGE_BYTES = BLOCK_N * HeadDimV * ELEMENT_BYTES;
  static constexpr uint32_t Q_BLOCK_BYTES = BLOCK_M * static_cast<uint32_t>(QK_SWIZZLE);
  static constexpr uint32_t K_BLOCK_BYTES = BLOCK_N * static_cast<uint32_t>(QK_SWIZZLE);
  static constexpr uint32_t V_BLOCK_BYTES = BLOCK_N * static_cast<uint32_t>(V_SWIZZLE);
  static constexpr uint32_t O_BLOCK_BYTES = BLOCK_M * static_cast<uint32_t>(V_SWIZZLE); /* O staging, per V_BOX_INNER columns */

  /* Layout: [Q buffers | K stages | V stages | O | barriers], from a 1024-aligned base. The epilogue
   * stages O (each consumer in its own 64 rows, in the swizzled block layout of V's rows) in a
   * buffer of its own where shared memory allows (d ≤ 128 and (192, 128)). Otherwise (d = 192,
   * 256) in the slots of the tile's last S and last P·V (O_IN_V_SLOT, O_PASS0_IN_K_SLOT), which
   * the consumers release only after the epilogue's stores have read them, O_PASS_BLOCKS column
   * blocks at a time (a slot holds BLOCK_N rows, fewer than O's). Either way Q is free as soon
   * as a tile's last S = Q·Kᵀ has run, and the next tile's Q loads under the last P·V and the
   * epilogue. (Until
   * the 16th session O took Q's place there, and the next Q loaded only after both epilogues:
   * ncu, d256 full 512, 11.7 % of the warp samples waited for it.) */
  static constexpr uint32_t O_BYTES = BLOCK_M * HeadDimV * ELEMENT_BYTES;
  /* Q buffers: two for d128 where shared memory holds them beside the K/V rings and O's own
   * buffer (the 128-key instance), so the next tile's Q (and its job) loads while this tile's
   * key loop runs instead of after its last S: the consumers waited ~310 cycles for it at every
   * tile boundary (d128 1k, event timeline, 20th session). H200, ab_attn against one buffer,
   * bf16 / fp16, two calls: d128 causal 512 / 1k +0.9–1.1 / +0.9–1.2 %, full 512 / 1k ±0.3 %
   * (predicted +2 %: the wait moved rather than vanished). d64 (one-consumer causal instances:
   * −0.5 to −0.9 % in both dtypes) and d96 (±0.4 %) keep one. Not in the stream-K kernels, nor
   * where the epilogue reads its job again after the key loop (the job slots follow the Q
   * buffers, and the producer rewrites a slot as soon as its Q is released). */
  static constexpr uint32_t TWO_Q_BARRIER_BYTES = 2u * ATTN_FWD_SMEM_BARRIER_BYTES;
  static constexpr unsigned Q_STAGES =
      !STREAM_K && !EPILOGUE_REREADS_JOB && HeadDim >= 128 &&
              ATTN_FWD_SMEM_ALIGNMENT + 2u * Q_BYTES + STAGES * (K_STAGE_BYTES + V_STAGE_BYTES) + O_BYTES +
                      TWO_Q_BARRIER_BYTES <=
                  SMEM_BYTES_LIMIT
          ? 2u
          : 1u;
  /* The barrier area: the ring's 4 · STAGES barriers and Q's 2 · Q_STAGES, the jobs and the
   * softmax pins (static_assert in attn_fwd_kernel.cuh); 256 bytes hold a two-stage ring's with
   * one Q buffer. */
  static constexpr uint32_t BARRIER_BYTES =
      STAGES > 2 || Q_STAGES > 1 ? 2u * ATTN_FWD_SMEM_BARRIER_BYTES : ATTN_FWD_SMEM_BARRIER_BYTES;
  /* Job slots in shared memory (attn_fwd_mainloop.cuh), indexed by the count of tiles taken: one
   * per Q buffer, or two alternating where the epilogue reads its job again after the key loop;
   * one elsewhere (two cost the other instances up to 0.9 % in the 14th session's A/B, through
   * a count-dependent job address). */
  static constexpr unsigned JOB_SLOTS = EPILOGUE_REREADS_JOB || Q_STAGES > 1 ? 2u : 1u;
  static_assert(!(EPILOGUE_REREADS_JOB && Q_STAGES > 1), "a re-read job needs more slots than Q buffers");
  /* Tile number `count` of this CTA (0, 1, ...): its Q buffer, the parity of that buffer's
   * q_full / q_empty phase, and its job slot. */
  static __device__ __forceinline__ unsigned q_stage(unsigned count) { return count & (Q_STAGES - 1u); }
  static __device__ __forceinline__ unsigned q_parity(unsigned count) { return (count / Q_STAGES) & 1u; }
  static __device__ __forceinline__ unsigned job_slot(unsigned count) { return count & (JOB_SLOTS - 1u); }
  static constexpr uint32_t Q_OFFSET = 0;
  static constexpr uint32_t K_OFFSET = Q_OFFSET + Q_STAGES * Q_BYTES;
  static constexpr uint32_t V_OFFSET = K_OFFSET + STAGES * K_STAGE_BYTES;
  static constexpr uint32_t KV_END = V_OFFSET + STAGES * V_STAGE_BYTES;
  static constexpr bool O_SEPARATE =
      ATTN_FWD_SMEM_ALIGNMENT + KV_END + O_BYTES + BARRIER_BYTES <= SMEM_BYTES_LIMIT;
  static constexpr bool O_IN_V_SLOT = !O_SEPARATE;
  static constexpr int O_PASS_BLOCKS = O_SEPARATE ? V_BLOCKS : static_cast<int>(V_STAGE_BYTES / O_BLOCK_BYTES);
  static constexpr int O_PASSES = (V_BLOCKS + O_PASS_BLOCKS - 1) / O_PASS_BLOCKS;
  /* With O in a V slot, its first pass goes through the K slot of the tile's last S instead:
   * the other consumer finished reading that one a block earlier than the V slot, so the first
   * pass waits only for the other's last S (attn_fwd_smem::k_slot_read), the second for its last
   * P·V (v_slot_read). The K slot is then held like the V slot, until the epilogue's stores read
   * it. Until the 17th session both passes used the V slot behind a barrier of all consumers,
   * which cost half of the racy build's gain (the consumers' skew); H200, against that: d256
   * 512 / 1k / 4k +4.3 / +3.1 / +2.2 %, causal 512 / 1k +7.5 / +6.0 %, d192 1k +7.1 %. */
  static constexpr bool O_PASS0_IN_K_SLOT = O_IN_V_SLOT && O_PASSES > 1;
  /* A consumer with no row of its tile inside the sequence follows the key loop without
   * computing (attn_fwd_follow_key_loop, attn_fwd_consumer_idle): the last tile of a sequence
   * that leaves it empty, every tile of a decode step. H200, ab_attn against main, bf16 / fp16
   * (43rd session): d128 causal 1088 (8.5 tiles a head) +3.4 / +3.3 %, a pack-GQA decode step
   * (8192 keys, 8 query heads a KV head) +2.5 / +1.2 %; d128 full and causal 512–8k (no idle
   * consumer) 0.999–1.004 / 0.998–1.001, main against itself 0.998–1.006. Not with O in the
   * ring's slots (the epilogue's slot hand-over counts on every consumer) nor with ping-pong
   * turns; only on the 2-consumer instances whose key loops ptxas builds as before
   * (bench/sass_loops.sh): the 3-consumer plain kernel spilled 4 bytes with it, the 4-consumer
   * ones 32–40, and the instances with Q in registers (d64 192-key, d96) took 6–14 more uniform
   * moves per key block (d64 causal 16k −4 to −5 %; a d64 decode step on the 192-key instance
   * read +13 % all the same). */
  static constexpr bool IDLE_CONSUMERS_FOLLOW = Consumers == 2 && !PINGPONG && !O_IN_V_SLOT && !Q_IN_REGISTERS;
  static_assert(!(IDLE_CONSUMERS_FOLLOW && EPILOGUE_REREADS_JOB), "the kernel's idle path is in its job-in-registers branch");
  static constexpr uint32_t O_OFFSET = O_SEPARATE ? KV_END : V_OFFSET; /* (V slot: the epilogue picks the slot) */
  static constexpr uint32_t BARRIER_OFFSET = KV_END + (O_SEPARATE ? O_BYTES : 0u);
  static constexpr uint32_t SMEM_BYTES = ATTN_FWD_SMEM_ALIGNMENT + BARRIER_OFFSET + BARRIER_BYTES;

  static_assert(HeadDim % QK_BOX_INNER == 0 && HeadDimV % V_BOX_INNER == 0, "head dims are whole swizzle blocks");
  static_assert(!O_PASS0_IN_K_SLOT ||
                    (K_STAGE_BYTES >= O_PASS_BLOCKS * O_BLOCK_BYTES && K_STAGE_BYTES % ATTN_FWD_SMEM_ALIGNMENT == 0),
                "O's first pass fits a K slot, on a swizzle-pattern boundary");
  static_assert(O_PASS_BLOCKS >= 1 && V_STAGE_BYTES % ATTN_FWD_SMEM_ALIGNMENT == 0,
                "O is staged in a V slot a whole number of column blocks at a time, on swizzle-pattern boundaries");
  static_assert(BLOCK_N % K_PER_WGMMA == 0 && BLOCK_N <= 256 && HeadDimV <= 256, "wgmma shapes");
  static_assert(Q_BLOCK_BYTES % ATTN_FWD_SMEM_ALIGNMENT == 0 && K_BLOCK_BYTES % ATTN_FWD_SMEM_ALIGNMENT == 0 &&
                    V_BLOCK_BYTES % ATTN_FWD_SMEM_ALIGNMENT == 0,
                "every TMA box lands on a swizzle-pattern boundary");
  static_assert(SMEM_BYTES <= SMEM_BYTES_LIMIT, "shared memory budget");
};

#endif
