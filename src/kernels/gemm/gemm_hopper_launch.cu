/*
 * gemm_hopper_launch.cu — the extern "C" side of the Hopper GEMM (src/kernels/launch.h):
 *   fc_gemm_hopper_check           can the TMA + WGMMA kernel run this problem? (else the reason)
 *   fc_gemm_hopper_workspace_size  0, or the stream-K partial tiles and flags
 *   fc_gemm_hopper_plan_info       the plan below, for tests (tests/cpu_gemm_plan.c)
 *   fc_gemm_hopper_run             the plan (plan_launch: tile width by choose_tile, stream-K by
 *                                  plan_stream_k, the persistent grid by persistent_grid, the
 *                                  256-wide tile's WGMMA chains by chains_for), tensor maps,
 *                                  launch (kernel attributes set once per handle)
 *
 * Tensor maps are 3-D: (contiguous extent, strided extent, batch) with the batch stride; an
 * operand with batch stride 0 (broadcast) or a single batch gets a batch extent of 1 and the
 * kernel loads it at batch coordinate 0.
 *   A row-major: (k, m) box (BLOCK_K, BLOCK_M)   A col-major: (m, k) box (64, BLOCK_K)
 *   B col-major: (k, n) box (BLOCK_K, BLOCK_N)   B row-major: (n, k) box (64, BLOCK_K)
 * What TMA cannot load is refused here so the dispatcher falls back: an A or B base address
 * that is not 16-byte aligned, a leading dimension or batch stride that is not a multiple of 16
 * bytes (e.g. k % 8 != 0 with row-major A), e4m3 operands that are not K-major. D is stored
 * with TMA (3-D map (n, m, batch), box 128 bytes × 64 rows, 128B-swizzled; 96, 112 or 64 bytes
 * unswizzled for the 144- and 112-wide e4m3 tiles) when it is 16-byte compatible, else
 * directly from registers (any alignment).
 * Check: tests/gpu/gpu_gemm.c runs AUTO and HOPPER on every layout and checks refusals.
 */
#include <algorithm>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime.h>

#include "flashc.h"
#include "host/error.h"
#include "host/problem.h"
#include "host/tensor_map.h"
#include "kernels/gemm/gemm_hopper_kernel.cuh"
#include "kernels/gemm/gemm_stream_k_plan.h"
#include "kernels/launch.h"

namespace {

constexpr int64_t TMA_ALIGNMENT_BYTES = 16;
constexpr int64_t TMA_MAX_STRIDE_BYTES = int64_t(1) << 40;

bool is_16bit_input(flashc_dtype dtype) { return dtype == FLASHC_DTYPE_FP16 || dtype == FLASHC_DTYPE_BF16; }

struct tile_dims {
  int block_m, block_n, block_k;
};

/* Stream-K (gemm_hopper_scheduler.cuh): when the tiles leave a partial last round of the
 * persistent grid, the k-tiles of that round's tiles are spread evenly over every SM instead,
 * and split tiles are summed through the workspace. The cost model is gemm_stream_k_plan.h's:
 * the spread round takes ceil(rest · k_tiles / SMs) k-tile times plus the hand-over (publish a
 * 128 × BLOCK_N fp32 tile to L2, wait, collect it) plus a collect per further partial, against
 * a whole last round that runs faster the more SMs it leaves idle. Stream-K runs where that
 * predicts a saving of at least the floor of the whole-rounds time.
 * History of the constants (H200, same process, bench_gemm stream-K forced on against off,
 * docs/PERF.md): the 14th session fit a hand-over of 10–13 k-tiles with a 0.5 % floor on the
 * sweep's shapes, all of them thick tails (rest ≥ 68 tiles of 132). The 39th session timed
 * thin ones — 55 points, 16-bit and e4m3, K 2048–16384, rest 4–100 tiles — and the fixed
 * hand-over did not fit them: e4m3 4096³ on the 144-wide tile (rest 4: 33 CTAs per split
 * tile) ran 15 % slower with stream-K, e4m3 8192 × 4096 × 4096 1.7 %, 4352 × 4096 × 4096 2–3.6 %,
 * while the model predicted gains. Two changes followed. The tail's CTA now waits for all its
 * tile's flags at once (gemm_hopper_stream_k_collect), not one after another: the hand-over a
 * tile spread over 33 CTAs pays fell from ~76 to ~51 k-tiles (stream-K forced on against off,
 * before → after: e4m3 4096³ on 144 0.85 → 0.93, bf16 2176 × 4096 × 2048 0.96 → 1.02). And the
 * model charges what is left: 12 k-tiles, 0.3 per partial beyond the first two contributors,
 * against a whole last round of k · (1 − 0.5 · idle³), with a 0.3 % floor. On the 36 points
 * timed after the collect change it makes 2 wrong calls (summed loss 0.02), the 14th session's
 * model 5 (0.26); on the old collect that model made 14 (0.83) of 55. On the sweep it changes two picks: e4m3 8192 / 16384 × 4096 ×
 * 4096 stop taking stream-K on the 128-wide tile, which then runs whole rounds, so choose_tile
 * gives them the 112-wide one — measured against the old plan in both roles (400-run calls, two
 * each): +1.5–1.6 % and +5.1–6.3 % (0.967 → 0.984 and 0.888 → 0.954 of cuBLASLt FP8; the new
 * collect made the 128-wide stream-K plan 0.8 % faster than without, still behind 112). It keeps
 * every 16-bit pick (8192 × 4096 × 4096 bf16, +0.6 % with stream-K; 2048 × 4096 × 14336, −1 %
 * forced, stays off), e4m3 8192³ (+0.4 to +0.9 % with stream-K) and e4m3 4096 × 14336 × 4096 on
 * the 144-wide tile (+0.9 %). The fit is of one device; the shapes near the floor are within
 * its noise. */
constexpr gemm_stream_k_model STREAM_K_MODEL = {
    12.0, /* handover_k_tiles */
    0.3,  /* extra_partial_k_tiles */
    0.5,  /* thin_round_speedup */
    0.003 /* min_gain */
};

gemm_stream_k_plan plan_stream_k(int64_t tiles, int64_t k_tiles, const fc_cuda_context* context) {
  return gemm_stream_k_plan_for(tiles, k_tiles, fc_sm_count(context), context->gemm_hopper_stream_k, STREAM_K_MODEL);
}

/* The workspace of a stream-K launch: a partial tile per CTA (one CTA per SM; each consumer
 * warpgroup publishes its half), then a flag per consumer warpgroup and CTA. */
gemm_stream_k_workspace stream_k_workspace_for(const gemm_stream_k_plan& plan, const tile_dims& tile,
                                               const fc_cuda_context* context) {
  const size_t sms = static_cast<size_t>(fc_sm_count(context));
  return gemm_stream_k_workspace_for(plan.on, sms, static_cast<size_t>(tile.block_m) * static_cast<size_t>(tile.block_n),
                                     sms * GEMM_HOPPER_CONSUMER_WARPGROUPS);
}

int64_t k_tiles_of(const fc_gemm_problem* p, int block_k) { return (p->k + block_k - 1) / block_k; }

/* The persistent grid. With stream-K, every SM (the split round's runs are cut for them).
 * Otherwise the fewest CTAs that take the tiles in the same number of rounds,
 * ceil(tiles / ceil(tiles / SMs)), so that every CTA runs the same number of whole tiles —
 * 4096³'s 512 tiles on 128 CTAs × 4 rather than 116 × 4 + 16 × 3 on 132. The makespan counted
 * in tiles is the same, yet on the H200 (33rd session, same process, alternating with the
 * 132-CTA grid) 4096³ ran +1.2–1.5 %, 2048 × 14336 × 4096 +1.6 %, 2048 × 4096 × {4096, 14336}
 * +0.3–0.9 %; one-round and stream-K launches are unchanged. Why: each round of 128 is one
 * group of the tile order (8 tile rows × 16), so the L2 hit rate rose 72.7 → 76.2 % and DRAM
 * traffic fell ~12 % (ncu, locked clock: cycles −0.2 % only) — power the clock gets back. */
int persistent_grid(int64_t tiles, int64_t sms, bool stream_k) {
  return static_cast<int>(stream_k ? sms : fc_round_robin_grid(tiles, sms));
}

/* Tile rows per group of the tile order (gemm_hopper_scheduler.cuh): the CTAs in flight sweep
 * a group's columns together, so its A row panels and the B column panels in use stay in L2.
 * Measured on the H200 (34th session, same process, alternating):
 * - 16-bit: 8. bench_gemm --ab-group-m 16 read B/A 0.995–1.007 per shape over the target's 17
 *   (geomean ±0.1 %) in bf16 and fp16, 4 lost 2.4 % where N = 14336, K = 4096 (the 14th and
 *   33rd sessions' compile-time 4 and 16 read the same).
 * - e4m3 on the 144-wide tile (8192³, stream-K): 16. Against torch._scaled_mm (bench_gemm.py,
 *   three rounds alternating with the group-8 build) 0.970–0.972 → 0.979–0.981; bench_gemm
 *   --ab-group-m 16 B/A 1.010–1.014 in four readings, 1.002 in a fifth (12: ±0 to +1.7 %, 24: −0.8
 *   to ±0, 32 and 2: −4 to −7 %).
 * - e4m3 on the 128-wide tile (4096³): 8. There 16 read B/A +0.5–0.7 % in bench_gemm's single
 *   launches but −0.3 % against torch._scaled_mm's chained calls (0.985–0.994 → 0.984–0.989).
 *   42nd session, 400 runs, both orders (A 8 / B 4 and A 4 / B 8, two processes each; B gains
 *   0.2–0.4 % from its place alone): 4 against 8 ±0 at 12288 × 4096 × 4096 and × 4096 × 14336,
 *   −0.65 % at 8192³ (forced 128), ±0 at N = 14336 / 28672 — 8 stays.
 * - e4m3 on the 112-wide tile (4096³, 8192 / 16384 × 4096 × 4096): 4. Against 8, both orders as
 *   above: +0.45 %, +0.5 %, +1.0 % (16384 × 4096 × 4096: 0.957 → 0.967 of cuBLASLt FP8); 2 and 3
 *   read as 4 (±0.1–0.2 %), 6 between 4 and 8.
 * Why e4m3 8192³ and not the 16-bit shapes is not known: a round's count of A and B panels
 * predicts neither (nor the 112-wide tile's 4: its groups of 4 × 37 tiles are about one round of
 * 132, but at 8192³ 144 wants 16). A handle may force another (tests, bench_gemm --group-m). */
constexpr int GEMM_HOPPER_GROUP_M = 8;
constexpr int GEMM_HOPPER_GROUP_M_E4M3_N144 = 16;
constexpr int GEMM_HOPPER_GROUP_M_E4M3_N112 = 4;

int group_m_for(const fc_gemm_problem* p, const tile_dims& tile, const fc_cuda_context* context) {
  if (context->gemm_hopper_group_m > 0) return context->gemm_hopper_group_m;
  if (p->ab_dtype == FLASHC_DTYPE_E4M3 && tile.block_n == 144) return GEMM_HOPPER_GROUP_M_E4M3_N144;
  if (p->ab_dtype == FLASHC_DTYPE_E4M3 && tile.block_n == 112) return GEMM_HOPPER_GROUP_M_E4M3_N112;
  return GEMM_HOPPER_GROUP_M;
}

/* WGMMA chains per k-step for a 16-bit 256-wide launch (gemm_hopper_config.cuh): two where every
 * CTA runs one whole tile (no stream-K, no more tiles than SMs) that is plain and stored by TMA
 * into a 16-bit D — there the tile's end is the launch's tail and its last k-tile in halves
 * hides half the stores (H200, 2048³: 0.986 → 1.005 of cuBLASLt bf16, 0.99 → 1.00 fp16); one
 * elsewhere, where reading A twice per k-step costs 0.3–0.5 % (4096³, 2048 × 4096 × 4096). */
int chains_for(const fc_gemm_problem* p, const fc_cuda_context* context, bool stream_k, int64_t tiles, bool d_tma) {
  if (context->gemm_hopper_chains == GEMM_HOPPER_ONE_CHAIN || context->gemm_hopper_chains == GEMM_HOPPER_TWO_CHAINS)
    return context->gemm_hopper_chains;
  const bool plain = !p->c && !p->bias && p->activation == FLASHC_ACTIVATION_NONE;
  const bool one_tile_per_cta = !stream_k && tiles <= fc_sm_count(context);
  return plain && d_tma && p->d_dtype != FLASHC_DTYPE_FP32 && one_tile_per_cta ? GEMM_HOPPER_TWO_CHAINS
                                                                              : GEMM_HOPPER_ONE_CHAIN;
}

/* Tile rows and columns of a problem at a tile shape, and its tile count (fc_gemm_hopper_check
 * refuses more than an int holds). */
int64_t tiles_m_of(const fc_gemm_problem* p, const tile_dims& tile) { return (p->m + tile.block_m - 1) / tile.block_m; }
int64_t tiles_n_of(const fc_gemm_problem* p, const tile_dims& tile) { return (p->n + tile.block_n - 1) / tile.block_n; }
int64_t tile_count_of(const fc_gemm_problem* p, const tile_dims& tile) {
  return tiles_m_of(p, tile) * tiles_n_of(p, tile) * p->batch_count;
}

/* The tile width for a problem. e4m3: 128, 144 or 112 columns (below). 16-bit: the width with the
 * least predicted time, where a tile's time is proportional to its width divided by the
 * relative rate of that width (narrower tiles read more shared memory per FLOP), and the
 * persistent grid takes ceil(tiles / SMs) rounds of tiles. Rates measured on the H200 with
 * forced widths (bench_gemm --tile-n, docs/PERF.md): 128 × 128 runs at 0.94 of the 128 × 256
 * rate on long-K shapes, 128 × 64 at 0.56–0.72; the table keeps a little margin (0.9, 0.6) so
 * near-ties stay on the wider tile. Ties go to the wider tile. On the H200 sweep this picks
 * 128 × 64 for 1024³, 128 × 128 for 512 × 4096 × K (64 wide tiles for 132 SMs) and for
 * 512 × 28672 and 1024 × 14336 (3.4 rounds of wide tiles → 6.8 rounds of narrow ones), and
 * keeps 128 × 256 for every shape with M ≥ 2048. */
struct tile_width {
  int block_n;
  double relative_rate;
};

/* The width of `widths` (the first is the reference, kept on ties) with the least predicted
 * time: rounds of the persistent grid × width / relative rate. (Whole rounds: with stream-K's
 * fractional last round in this model, 8192³ e4m3 moved to the 128-wide tile and lost 9 %.) */
int fastest_width(const fc_gemm_problem* p, const fc_cuda_context* context, int block_m, const tile_width* widths,
                  int count) {
  const int64_t sms = fc_sm_count(context);
  int best_n = widths[0].block_n;
  double best_time = 0.0;
  for (int i = 0; i < count; ++i) {
    const tile_width& w = widths[i];
    const int64_t tiles = tile_count_of(p, tile_dims{block_m, w.block_n, 0}); /* (block_k unused) */
    const double rounds = static_cast<double>((tiles + sms - 1) / sms);
    const double time = rounds * w.block_n / w.relative_rate;
    if (i == 0 || time < best_time) {
      best_n = w.block_n;
      best_time = time;
    }
  }
  return best_n;
}

tile_dims choose_tile(const fc_gemm_problem* p, const fc_cuda_context* context) {
  const int forced = context->gemm_hopper_block_n;
  if (p->ab_dtype == FLASHC_DTYPE_E4M3) {
    /* 128 × 144 does 12.5 % more work per k-tile; per FLOP it runs at 1.006 of the rate of
     * 128 × 128 (H200, bench_gemm --only e4m3 --tile-n 128 / 144 at 8192³: 1339.8 → 1369.0
     * TFLOP/s over 28 rounds of 144-wide tiles against 32 of 128-wide ones), so the width with
     * fewer rounds × columns wins: 8192³ takes 144; 4096³ not (8 rounds either way; forced 144
     * ran 6 % slower there). With that rate in the model the near-ties go to 144 (6144³, 4096 ×
     * 14336 × 4096, 8192 × 14336 × 4096, 4096 / 8192 × 28672 × 8192, where 128's rounds ×
     * columns are 0.2–0.8 % fewer): forced 144 against forced 128 read +1.0, +1.2, +0.4, −0.25
     * and +0.2 % there (H200, 38th session, two rounds of bench_gemm --full --only e4m3 --runs
     * 400 each, against cuBLASLt FP8). 128 × 112 is for the 128-wide tile's partial last
     * round: 4096³ has 1024 tiles of 128 × 128 on 132 SMs, 7.76 rounds, run as 8 on 128 SMs;
     * at 112 wide it has 1184 tiles, 8.97 rounds on all 132 — 9 × 112 = 1008 columns of time
     * against 8 × 128 = 1024 (H200, 36th session, bench_gemm two-player runs of 1500 launches
     * against cuBLASLt FP8: 128 wide 0.988 / 0.989, 112 wide 1.005 / 1.004 — the whole 1.6 %).
     * It is a candidate only where the 128-wide tile runs whole rounds: where stream-K splits
     * its last round the model's whole rounds overstate 128's time, and at 8192³ (28 rounds of
     * 144 with the stream-K tail, not picked) forced 112 ran 4.5 % slower (0.949 against
     * 0.994). Its rate is put at 0.99 of the 128-wide one so that ties stay wide. A 16-bit D
     * only: an fp32 row of 112 columns leaves in seven 64-byte chunks (gemm_hopper_config.cuh). */
    using T = gemm_hopper_tile<GEMM_INPUT_E4M3, 128>;
    if (forced == 128 || forced == 144 || forced == 112) return {T::BLOCK_M, forced, T::BLOCK_K};
    static const tile_width widths[] = {{128, 1.0}, {144, 1.006}, {112, 0.99}};
    const tile_dims tile_128 = {T::BLOCK_M, T::BLOCK_N, T::BLOCK_K};
    const bool whole_rounds_at_128 = !plan_stream_k(tile_count_of(p, tile_128), k_tiles_of(p, T::BLOCK_K), context).on;
    const int count = p->d_dtype != FLASHC_DTYPE_FP32 && whole_rounds_at_128 ? 3 : 2;
    return {T::BLOCK_M, fastest_width(p, context, T::BLOCK_M, widths, count), T::BLOCK_K};
  }
  using T = gemm_hopper_tile<GEMM_INPUT_BF16, 256>;
  if (forced == 256 || forced == 128 || forced == 64) return {T::BLOCK_M, forced, T::BLOCK_K};
  static const tile_width widths[] = {{256, 1.0}, {128, 0.9}, {64, 0.6}};
  return {T::BLOCK_M, fastest_width(p, context, T::BLOCK_M, widths, 3), T::BLOCK_K};
}

bool aligned(const void* pointer, int64_t bytes) { return reinterpret_cast<uintptr_t>(pointer) % bytes == 0; }

/* Rejects an operand TMA cannot address; *why gets the reason. */
bool tma_operand_ok(const char* name, const void* pointer, int64_t ld, int64_t batch_stride, int batch_count,
                    int64_t element_bytes, fc_reason* why) {
  if (!aligned(pointer, TMA_ALIGNMENT_BYTES)) {
    snprintf(why->text, sizeof why->text, "%s (%p) is not 16-byte aligned (TMA)", name, pointer);
    return false;
  }
  if ((ld * element_bytes) % TMA_ALIGNMENT_BYTES != 0 || ld * element_bytes >= TMA_MAX_STRIDE_BYTES) {
    snprintf(why->text, sizeof why->text,
             "the leading dimension of %s (%lld elements) is not a multiple of 16 bytes below 2^40 (TMA)", name,
             (long long)ld);
    return false;
  }
  if (batch_count > 1 && batch_stride != 0 &&
      ((batch_stride * element_bytes) % TMA_ALIGNMENT_BYTES != 0 || batch_stride * element_bytes >= TMA_MAX_STRIDE_BYTES)) {
    snprintf(why->text, sizeof why->text,
             "the batch stride of %s (%lld elements) is not a multiple of 16 bytes below 2^40 (TMA)", name,
             (long long)batch_stride);
    return false;
  }
  return true;
}

/* D through shared memory + TMA store: 16-byte aligned base, ldd and stride_d, and rows of
 * whole 16-byte granules. The last condition: a TMA store writes a row's last, partial 16-byte
 * granule whole, out-of-bounds bytes included (measured on the H200: tests/ptx/gpu_ptx_tma.cu,
 * "rows ending inside a 16-byte granule"; gpu_gemm seed 585389383772 saw the padding of D
 * clobbered that way), so such rows use direct stores. */
bool d_tma_ok(const fc_gemm_problem* p, int64_t element_bytes) {
  return aligned(p->d, TMA_ALIGNMENT_BYTES) && (p->n * element_bytes) % TMA_ALIGNMENT_BYTES == 0 &&
         (p->ldd * element_bytes) % TMA_ALIGNMENT_BYTES == 0 &&
         p->ldd * element_bytes < TMA_MAX_STRIDE_BYTES &&
         (p->batch_count == 1 || ((p->stride_d * element_bytes) % TMA_ALIGNMENT_BYTES == 0 &&
                                  p->stride_d * element_bytes < TMA_MAX_STRIDE_BYTES));
}

/* What a launch of a problem fc_gemm_hopper_check accepts runs, derived in one place for the
 * run, the workspace query and fc_gemm_hopper_plan_info (tests/cpu_gemm_plan.c). */
struct launch_plan {
  tile_dims tile;
  int64_t tiles;
  int k_tiles;
  gemm_stream_k_plan stream_k;
  int grid;
  bool d_tma;
  int chains; /* of the 256-wide 16-bit tile; GEMM_HOPPER_ONE_CHAIN for every other */
  int group_m; /* tile rows per group of the tile order */
};

launch_plan plan_launch(const fc_gemm_problem* p, const fc_cuda_context* context) {
  launch_plan plan;
  plan.tile = choose_tile(p, context);
  plan.tiles = tile_count_of(p, plan.tile);
  plan.k_tiles = static_cast<int>(k_tiles_of(p, plan.tile.block_k));
  /* At most the problem's tile rows, so that group_m · tiles_n stays within the tile count. */
  plan.group_m = static_cast<int>(
      std::min<int64_t>(group_m_for(p, plan.tile, context), std::max<int64_t>(tiles_m_of(p, plan.tile), 1)));
  plan.stream_k = plan_stream_k(plan.tiles, plan.k_tiles, context);
  plan.grid = persistent_grid(plan.tiles, fc_sm_count(context), plan.stream_k.on);
  plan.d_tma = d_tma_ok(p, static_cast<int64_t>(flashc_dtype_size(p->d_dtype)));
  plan.chains = p->ab_dtype != FLASHC_DTYPE_E4M3 && plan.tile.block_n == 256
                    ? chains_for(p, context, plan.stream_k.on, plan.tiles, plan.d_tma)
                    : GEMM_HOPPER_ONE_CHAIN;
  return plan;
}

/* A 3-D tensor map over (contiguous, strided, batch). */
flashc_status encode_operand(const fc_cuda_context* context, flashc_dtype dtype, const void* base,
                             int64_t contiguous_extent, int64_t strided_extent, int64_t ld, int64_t batch_stride,
                             int batch_count, int batched, uint32_t box_contiguous, uint32_t box_strided,
                             CUtensorMap* map, fc_tensor_map_swizzle swizzle = FC_TENSOR_MAP_SWIZZLE_128B) {
  fc_tensor_map_desc desc;
  fc_tensor_map_desc_init(&desc);
  desc.dtype = dtype;
  desc.rank = 3;
  desc.global_address = base;
  desc.global_dims[0] = static_cast<uint64_t>(contiguous_extent);
  desc.global_dims[1] = static_cast<uint64_t>(strided_extent);
  desc.global_dims[2] = batched ? static_cast<uint64_t>(batch_count) : 1u;
  desc.global_strides[0] = 1;
  desc.global_strides[1] = ld;
  /* Unbatched: any valid stride (never stepped), the matrix span keeps it 16-byte aligned. */
  desc.global_strides[2] = batched ? batch_stride : ld * strided_extent;
  desc.box_dims[0] = box_contiguous;
  desc.box_dims[1] = box_strided;
  desc.box_dims[2] = 1;
  desc.swizzle = swizzle;
  desc.l2_promotion = FC_TENSOR_MAP_L2_256B;
  desc.oob_fill = FC_TENSOR_MAP_OOB_ZERO;
  return fc_tensor_map_encode_tiled(&context->tensor_map_encoder, &desc, map);
}

}  // namespace

extern "C" flashc_status fc_gemm_hopper_check(const fc_gemm_problem* p, const fc_cuda_context* context,
                                              fc_reason* why_not) {
  if (context->cc_major != 9 || context->cc_minor != 0) {
    snprintf(why_not->text, sizeof why_not->text,
             "the Hopper GEMM needs compute capability 9.0 (sm_90a); this device is %d.%d", context->cc_major,
             context->cc_minor);
    return FLASHC_STATUS_NOT_SUPPORTED_ARCH;
  }
  if (!context->tensor_map_encoder.encode_tiled) {
    snprintf(why_not->text, sizeof why_not->text, "the CUDA driver offers no cuTensorMapEncodeTiled (TMA)");
    return FLASHC_STATUS_NOT_SUPPORTED;
  }
  if (!is_16bit_input(p->ab_dtype) && p->ab_dtype != FLASHC_DTYPE_E4M3) {
    snprintf(why_not->text, sizeof why_not->text, "the Hopper GEMM takes fp16, bf16 or e4m3 inputs, not %s",
             flashc_dtype_name(p->ab_dtype));
    return FLASHC_STATUS_NOT_SUPPORTED_DTYPE;
  }
  if (p->d_dtype != FLASHC_DTYPE_FP16 && p->d_dtype != FLASHC_DTYPE_BF16 && p->d_dtype != FLASHC_DTYPE_FP32) {
    snprintf(why_not->text, sizeof why_not->text, "the Hopper GEMM writes fp16, bf16 or fp32, not %s",
             flashc_dtype_name(p->d_dtype));
    return FLASHC_STATUS_NOT_SUPPORTED_DTYPE;
  }
  if (p->ab_dtype == FLASHC_DTYPE_E4M3 && (p->a_layout != FLASHC_ROW_MAJOR || p->b_layout != FLASHC_COL_MAJOR)) {
    snprintf(why_not->text, sizeof why_not->text,
             "e4m3 on Hopper needs K-major operands (A row-major and B column-major after normalizing D to row-major)");
    return FLASHC_STATUS_NOT_SUPPORTED;
  }
  const int64_t ab_bytes = static_cast<int64_t>(flashc_dtype_size(p->ab_dtype));
  const int64_t d_bytes = static_cast<int64_t>(flashc_dtype_size(p->d_dtype));
  if (!tma_operand_ok("a", p->a, p->lda, p->stride_a, p->batch_count, ab_bytes, why_not) ||
      !tma_operand_ok("b", p->b, p->ldb, p->stride_b, p->batch_count, ab_bytes, why_not))
    return FLASHC_STATUS_NOT_SUPPORTED;
  const tile_dims tile = choose_tile(p, context);
  const int64_t tiles = tile_count_of(p, tile);
  if (tiles > 0x7fffffff) {
    snprintf(why_not->text, sizeof why_not->text, "%lld output tiles exceed the scheduler's int range",
             (long long)tiles);
    return FLASHC_STATUS_NOT_SUPPORTED;
  }
  return FLASHC_STATUS_SUCCESS;
}

extern "C" size_t fc_gemm_hopper_workspace_size(const fc_gemm_problem* problem, const fc_cuda_context* context) {
  const launch_plan plan = plan_launch(problem, context);
  return stream_k_workspace_for(plan.stream_k, plan.tile, context).total;
}

extern "C" void fc_gemm_hopper_plan_info(const fc_gemm_problem* problem, const fc_cuda_context* context,
                                         fc_gemm_plan_info* info) {
  const launch_plan plan = plan_launch(problem, context);
  info->block_m = plan.tile.block_m;
  info->block_n = plan.tile.block_n;
  info->chains = plan.chains;
  info->stream_k = plan.stream_k.on;
  info->d_tma = plan.d_tma;
  info->tiles = plan.tiles;
  info->grid = plan.grid;
  info->group_m = plan.group_m;
}

extern "C" flashc_status fc_gemm_hopper_run(const fc_gemm_problem* p, const fc_cuda_context* context,
                                            void* workspace, void* stream) {
  fc_reason why_not = {{0}};
  flashc_status status = fc_gemm_hopper_check(p, context, &why_not);
  if (status != FLASHC_STATUS_SUCCESS) return fc_fail(status, "Hopper GEMM: %s", why_not.text);

  const launch_plan launch = plan_launch(p, context);
  const tile_dims tile = launch.tile;
  const int a_mn_major = p->a_layout == FLASHC_COL_MAJOR;
  const int b_mn_major = p->b_layout == FLASHC_ROW_MAJOR;
  const uint32_t mn_box = 64; /* one 128-byte swizzle span of a 16-bit MN-major tile */

  gemm_hopper_params params;
  memset(&params, 0, sizeof params);
  params.a_batched = p->batch_count > 1 && p->stride_a != 0;
  params.b_batched = p->batch_count > 1 && p->stride_b != 0;
  if (a_mn_major)
    status = encode_operand(context, p->ab_dtype, p->a, p->m, p->k, p->lda, p->stride_a, p->batch_count,
                            params.a_batched, mn_box, tile.block_k, &params.map_a);
  else
    status = encode_operand(context, p->ab_dtype, p->a, p->k, p->m, p->lda, p->stride_a, p->batch_count,
                            params.a_batched, tile.block_k, tile.block_m, &params.map_a);
  if (status != FLASHC_STATUS_SUCCESS) return status;
  if (b_mn_major)
    status = encode_operand(context, p->ab_dtype, p->b, p->n, p->k, p->ldb, p->stride_b, p->batch_count,
                            params.b_batched, mn_box, tile.block_k, &params.map_b);
  else
    status = encode_operand(context, p->ab_dtype, p->b, p->k, p->n, p->ldb, p->stride_b, p->batch_count,
                            params.b_batched, tile.block_k, tile.block_n, &params.map_b);
  if (status != FLASHC_STATUS_SUCCESS) return status;

  const int64_t d_bytes = static_cast<int64_t>(flashc_dtype_size(p->d_dtype));
  params.epilogue.d_tma = launch.d_tma;
  if (params.epilogue.d_tma) {
    /* One box per staging chunk: a 128-byte swizzle span, or for tile widths that are not whole
     * spans unswizzled whole rows (16-bit) or pieces of them (fp32; gemm_hopper_config.cuh). */
    const bool d_swizzled = gemm_hopper_d_swizzled(tile.block_n, static_cast<int>(d_bytes));
    const int64_t chunk_bytes = gemm_hopper_d_chunk_bytes(tile.block_n, static_cast<int>(d_bytes));
    status = encode_operand(context, p->d_dtype, p->d, p->n, p->m, p->ldd, p->stride_d, p->batch_count,
                            p->batch_count > 1, static_cast<uint32_t>(chunk_bytes / d_bytes), GEMM_HOPPER_EPILOGUE_ROWS,
                            &params.map_d, d_swizzled ? FC_TENSOR_MAP_SWIZZLE_128B : FC_TENSOR_MAP_SWIZZLE_NONE);
    if (status != FLASHC_STATUS_SUCCESS) return status;
  }
  params.epilogue.d_pairs = fc_gemm_vectors_ok(p->d, p->ldd, p->stride_d, d_bytes, 2);
  params.epilogue.quads = fc_gemm_epilogue_quads_ok(p, p->stride_d, p->stride_c);
  /* C, bias and the activation finished in registers (the overlapped loop): pairs of C and of a
   * per-column bias read as aligned 32-bit words. */
  params.epilogue.fused_pairs = params.epilogue.d_tma && d_bytes == 2 &&
                                (!p->c || fc_gemm_vectors_ok(p->c, p->ldc, p->stride_c, 2, 2)) &&
                                (!p->bias || p->bias_per_row || reinterpret_cast<uintptr_t>(p->bias) % 4 == 0);

  gemm_hopper_scheduler& s = params.scheduler;
  s.tiles_m = static_cast<int>(tiles_m_of(p, tile));
  s.tiles_n = static_cast<int>(tiles_n_of(p, tile));
  s.tiles_per_batch = s.tiles_m * s.tiles_n;
  s.tile_count = s.tiles_per_batch * p->batch_count;
  s.k_tiles = launch.k_tiles;
  s.group_m = launch.group_m;
#if GEMM_HOPPER_FAST_DIVMOD
  gemm_hopper_scheduler_set_divisors(s);
#endif
  const gemm_stream_k_plan& plan = launch.stream_k;
  s.dp_tiles = static_cast<int>(plan.dp_tiles);
  const int grid = launch.grid;
  s.run_length = static_cast<int>(plan.iterations / grid);
  s.run_rest = static_cast<int>(plan.iterations % grid);

  gemm_hopper_epilogue_args& e = params.epilogue; /* d_tma, d_pairs, quads set above */
  e.d = p->d;
  e.c = p->c;
  e.bias = p->bias;
  e.ldd = p->ldd;
  e.ldc = p->ldc;
  e.stride_d = p->stride_d;
  e.stride_c = p->stride_c;
  e.m = p->m;
  e.n = p->n;
  e.d_dtype = p->d_dtype;
  e.bias_per_row = p->bias_per_row;
  e.activation = p->activation;
  e.alpha = p->alpha;
  e.beta = p->beta;
  e.scale_a = p->scale_a;
  e.scale_b = p->scale_b;

  cudaStream_t cuda_stream = static_cast<cudaStream_t>(stream);
  cudaError_t error;
  if (plan.on) {
    const gemm_stream_k_workspace layout = stream_k_workspace_for(plan, tile, context);
    if (!workspace)
      return fc_fail(FLASHC_STATUS_INTERNAL_ERROR, "Hopper GEMM: no workspace (%zu bytes needed for stream-K)",
                     layout.total);
    gemm_stream_k_workspace_at(workspace, layout, &params.stream_k.partials, &params.stream_k.flags);
    params.stream_k.tag = fc_launch_tag(context);
  }
  const bool f16 = p->ab_dtype == FLASHC_DTYPE_FP16;
  if (p->ab_dtype == FLASHC_DTYPE_E4M3 && tile.block_n == 144)
    error = gemm_hopper_launch_e4m3_n144(params, context, a_mn_major, b_mn_major, grid, cuda_stream);
  else if (p->ab_dtype == FLASHC_DTYPE_E4M3 && tile.block_n == 112)
    error = gemm_hopper_launch_e4m3_n112(params, context, a_mn_major, b_mn_major, grid, cuda_stream);
  else if (p->ab_dtype == FLASHC_DTYPE_E4M3)
    error = gemm_hopper_launch_e4m3(params, context, a_mn_major, b_mn_major, grid, cuda_stream);
  else if (launch.chains == GEMM_HOPPER_TWO_CHAINS) /* only ever the 256-wide 16-bit tile */
    error = (f16 ? gemm_hopper_launch_f16_n256_two_chains : gemm_hopper_launch_bf16_n256_two_chains)(
        params, context, a_mn_major, b_mn_major, grid, cuda_stream);
  else if (tile.block_n == 256)
    error = (f16 ? gemm_hopper_launch_f16_n256 : gemm_hopper_launch_bf16_n256)(params, context, a_mn_major, b_mn_major,
                                                                              grid, cuda_stream);
  else if (tile.block_n == 128)
    error = (f16 ? gemm_hopper_launch_f16_n128 : gemm_hopper_launch_bf16_n128)(params, context, a_mn_major, b_mn_major,
                                                                              grid, cuda_stream);
  else
    error = (f16 ? gemm_hopper_launch_f16_n64 : gemm_hopper_launch_bf16_n64)(params, context, a_mn_major, b_mn_major,
                                                                            grid, cuda_stream);
  if (error != cudaSuccess)
    return fc_fail(FLASHC_STATUS_CUDA_ERROR, "launching the Hopper GEMM (%dx%d tile): %s", tile.block_m,
                   tile.block_n, cudaGetErrorString(error));
  return FLASHC_STATUS_SUCCESS;
}
