/*
 * gemm_portable_stream_k.cuh — the portable GEMM's stream-K tail: which units of work a block
 * runs, and the hand-over of split tiles between blocks.
 *
 * Why: the portable kernel runs one 128 × 256 tile per block, one block per SM, so a problem
 * whose tiles are not a multiple of the SM count ends in a partial wave (8192³: 2048 tiles on
 * 132 SMs, 15.5 waves; the 16th wave half empty, ~3 % of the time). With stream-K the tiles
 * of that partial wave (the last `rest` tiles of the grid order) are laid end to end as
 * k-slices (BLOCK_K deep) and cut into one even run per SM, so the partial wave becomes a
 * full wave of rest/SMs of a tile's length (plus the hand-over).
 *
 * The grid (non-persistent): blocks [0, sk_ctas) are the stream-K blocks, one per SM, first
 * so that they all run in the first wave, side by side (every wait below is for a block of
 * that wave); blocks [sk_ctas, sk_ctas + dp_tiles) take whole tiles 0 .. dp_tiles − 1. The
 * stream-K tiles are [dp_tiles, dp_tiles + rest).
 *
 * Runs: I = rest · k_tiles slices, run b = [⌊b·I/G⌋, ⌊(b+1)·I/G⌋) with G = sk_ctas, computed
 * from run_length = I / G and run_rest = I % G in 32 bits (the host keeps I and G² below
 * 2^31). rest < G, so a run is at most one tile long and touches at most two tiles: the end
 * of tile t, then the start of tile t + 1. A block runs the later piece first (the start of
 * t + 1 from slice 0), as the Hopper path does (gemm_hopper_scheduler.cuh): every block then
 * begins at slice 0 of some tile, like a data-parallel wave, and the blocks stay near the
 * same k, sharing their A and B panels in L2.
 *
 * Hand-over: a piece that does not end its tile (k_end < k_tiles) is published — the block's
 * fp32 accumulators, before alpha, scales or any epilogue, into its workspace slot, then its
 * flag raised to the launch's tag (fc_launch_tag: stale flags never read as raised, nothing
 * is cleared). The block holding the tile's last slice (the tail, which runs that piece last)
 * waits for each earlier block's flag, adds its slot and runs the ordinary epilogue, so C,
 * bias, activations and every store path see a whole tile. A block publishes at most one
 * piece (its first, before it waits for anything), so one slot per block. Slots hold the
 * fragments as they sit in registers: float4 i of thread t at (i · THREADS + t), one
 * coalesced 16-byte access per thread and no index arithmetic.
 * Memory order: the block meets (bar.sync) after its slot stores and thread 0 releases the
 * flag at GPU scope (cumulative); the tail's thread 0 acquires it, the block meets, and the
 * slot is read through L2 (__ldcg). Deadlock freedom: a block publishes before it waits,
 * waits only for lower-numbered stream-K blocks, and those are all in the first wave.
 *
 * Check: tests/gpu/gpu_gemm_portable.c forces stream-K (fc_cuda_context.gemm_portable_stream_k
 * = 1) on problems whose tiles leave a partial wave, with runs from a fraction of a slice
 * (empty runs) to several tiles' pieces; D poisoned, every element checked.
 */
#ifndef FLASHC_KERNELS_GEMM_PORTABLE_STREAM_K_CUH
#define FLASHC_KERNELS_GEMM_PORTABLE_STREAM_K_CUH

#include "kernels/common/ptx_misc.cuh"
#include "kernels/gemm/gemm_portable_config.cuh"

/* One unit of work: slices [k_begin, k_end) of tile `tile` (in the grid order of
 * block_tile_origin). */
struct gemm_portable_work {
  int tile;
  int k_begin, k_end;
};

/* The first slice of stream-K block `cta`'s run (cta = sk_ctas gives the end of the last). */
static __device__ __forceinline__ int gemm_portable_run_begin(const gemm_portable_args& args, int cta) {
  return cta * args.run_length + static_cast<int>(static_cast<unsigned>(cta * args.run_rest) /
                                                  static_cast<unsigned>(args.sk_ctas));
}

/* How many units block `cta` runs: 1 for a whole-tile block, 0..2 for a stream-K block. */
static __device__ __forceinline__ int gemm_portable_unit_count(const gemm_portable_args& args, int cta, int k_tiles) {
  if (cta >= args.sk_ctas) return 1;
  const int begin = gemm_portable_run_begin(args, cta);
  const int end = gemm_portable_run_begin(args, cta + 1);
  if (begin >= end) return 0;
  const int first_tile_end = (begin / k_tiles + 1) * k_tiles;
  return end > first_tile_end ? 2 : 1;
}

/* Unit `unit` of block `cta`, in the order the block runs them (a pure function of its
 * arguments, so the kernel derives it again after the K loop instead of keeping it live). */
static __device__ __forceinline__ gemm_portable_work gemm_portable_unit(const gemm_portable_args& args, int cta,
                                                                        int unit, int k_tiles) {
  gemm_portable_work work;
  if (cta >= args.sk_ctas) {
    work.tile = cta - args.sk_ctas;
    work.k_begin = 0;
    work.k_end = k_tiles;
    return work;
  }
  const int begin = gemm_portable_run_begin(args, cta);
  const int end = gemm_portable_run_begin(args, cta + 1);
  const int first = begin / k_tiles; /* the run's first tile, among the stream-K tiles */
  const int split = min(end, (first + 1) * k_tiles);
  /* Two pieces: unit 0 is the later one (the start of tile first + 1), unit 1 the end of
   * tile `first`; one piece: unit 0. */
  const bool later = split < end && unit == 0;
  const int tile = later ? first + 1 : first;
  work.tile = args.dp_tiles + tile;
  work.k_begin = later ? 0 : begin - first * k_tiles;
  work.k_end = later ? end - split : split - first * k_tiles;
  return work;
}

/* The accumulators of one thread, as the kernel holds them: one float4 per m16 × n8 MMA tile. */
template <class Tile>
using gemm_portable_accumulators = float[Tile::MMA_TILES_M][Tile::MMA_TILES_N][4];

/* Float4 0 of this thread in block `cta`'s slot (float4 i is THREADS further on per i). */
template <class Tile>
static __device__ __forceinline__ float4* gemm_portable_slot(const gemm_portable_args& args, int cta) {
  constexpr int FLOAT4_PER_THREAD = Tile::MMA_TILES_M * Tile::MMA_TILES_N;
  return reinterpret_cast<float4*>(args.partials) + static_cast<size_t>(cta) * FLOAT4_PER_THREAD * Tile::THREADS +
         threadIdx.x;
}

/* A piece that does not end its tile → this block's slot, then its flag. */
template <class Tile>
static __device__ __forceinline__ void gemm_portable_publish(const gemm_portable_args& args, int cta,
                                                             const gemm_portable_accumulators<Tile>& acc) {
  float4* slot = gemm_portable_slot<Tile>(args, cta);
#pragma unroll
  for (int mi = 0; mi < Tile::MMA_TILES_M; ++mi)
#pragma unroll
    for (int ni = 0; ni < Tile::MMA_TILES_N; ++ni)
      __stcg(slot + (mi * Tile::MMA_TILES_N + ni) * Tile::THREADS,
             make_float4(acc[mi][ni][0], acc[mi][ni][1], acc[mi][ni][2], acc[mi][ni][3]));
  /* Barrier 0 with every thread: the barrier __syncthreads uses. */
  group_flag_raise(&args.flags[cta], args.tag, 0, Tile::THREADS, static_cast<int>(threadIdx.x));
}

/* The tail of a split tile (its piece began at slice k_begin > 0): adds the published pieces
 * of the earlier blocks whose runs reach into the tile into acc. */
template <class Tile>
static __device__ __forceinline__ void gemm_portable_collect(const gemm_portable_args& args, int cta,
                                                             const gemm_portable_work& work, int k_tiles,
                                                             gemm_portable_accumulators<Tile>& acc) {
  const int tile_begin = (work.tile - args.dp_tiles) * k_tiles; /* the tile's first slice in the runs */
  int end = gemm_portable_run_begin(args, cta);
  for (int other = cta - 1; other >= 0 && end > tile_begin; --other) {
    const int begin = gemm_portable_run_begin(args, other);
    const bool published = end > begin; /* an empty run (fewer slices than blocks) has nothing */
    end = begin;
    if (!published) continue;
    group_flag_wait(&args.flags[other], args.tag, 0, Tile::THREADS, static_cast<int>(threadIdx.x));
    const float4* slot = gemm_portable_slot<Tile>(args, other);
#pragma unroll
    for (int mi = 0; mi < Tile::MMA_TILES_M; ++mi)
#pragma unroll
      for (int ni = 0; ni < Tile::MMA_TILES_N; ++ni) {
        const float4 v = __ldcg(slot + (mi * Tile::MMA_TILES_N + ni) * Tile::THREADS);
        acc[mi][ni][0] += v.x;
        acc[mi][ni][1] += v.y;
        acc[mi][ni][2] += v.z;
        acc[mi][ni][3] += v.w;
      }
  }
}

#endif
