/*
 * gemm_hopper_scheduler.cuh — the persistent work schedule of the Hopper GEMM.
 *
 * Tiles: a linear tile maps to (batch, tile_m, tile_n) in an L2-friendly grouped order: inside
 * a batch, group_m tile rows are swept column by column (down the group first), so the CTAs in
 * flight at one time share a few A row panels and a few B column panels instead of streaming
 * all of B per tile row. group_m is chosen per launch (gemm_hopper_launch.cu, group_m_for).
 *
 * Work units: CTA b of a grid of G CTAs first takes the whole tiles b, b + G, b + 2G, ... below
 * dp_tiles (data-parallel rounds), then its share of the stream-K tiles [dp_tiles, tile_count):
 * their k-tiles, laid end to end (tile after tile, k-tile after k-tile: I of them), are cut
 * into G runs as even as possible, run b = [⌊b·I/G⌋, ⌊(b+1)·I/G⌋). A run covers the end of one
 * tile and/or the start of the next (the host keeps the stream-K tiles below G, so a run is no
 * longer than a tile), so a CTA's run yields up to two units (tile, k_begin, k_end). Without
 * stream-K (dp_tiles = tile_count) this is the plain round robin of whole tiles; with it the
 * last, partial round of tiles is spread over every SM instead of leaving some idle.
 * Order inside a run: the start of the next tile first (k from 0), then the end of the tile
 * before. So every CTA begins its run at k-tile 0 of some tile, as in a data-parallel round,
 * and the CTAs stay within a few k-tiles of each other all the way through: the A and B panels
 * they read stay shared in L2. (Iteration order would put CTA b at k ≈ b·(1 − rest/G)·K, all
 * K offsets at once, and long-K problems then ran from HBM: up to 2× slower, H200.)
 * Who finishes a split tile: the CTA holding its last k-tile (the "tail", k_end = k_tiles),
 * which runs it last; the CTAs b − 1, b − 2, ... holding its earlier k-tiles publish fp32
 * partial tiles (gemm_hopper_stream_k.cuh). A published unit is the first unit of its CTA's
 * run (or the only one), so a CTA publishes at most one partial tile per launch (one workspace
 * slot per CTA), before it waits for anything itself.
 * The producer and the consumers of a CTA walk the same sequence independently (a pure
 * function of the CTA index), so no unit crosses a barrier.
 * Check: every output element is written exactly once, with every k-tile counted once —
 * tests/gpu/gpu_gemm.c (poisoned outputs; stream-K forced on a third of the cases).
 */
#ifndef FLASHC_KERNELS_GEMM_HOPPER_SCHEDULER_CUH
#define FLASHC_KERNELS_GEMM_HOPPER_SCHEDULER_CUH

#include <stddef.h>
#include <stdint.h>

#include "kernels/common/fast_divmod.cuh"

/* The tile decode by multiply-high divisions (fast_divmod.cuh) instead of integer divisions:
 * an experiment, off. After a CTA's K loop the decode runs cold from the instruction cache
 * (ncu at 2048³, 32nd session: 163 warp samples on it and the pack, against 118 for the four
 * chunk stores); its four 32-bit divisions are ~80 of its instructions. Measured on the H200
 * (35th session, bench/ab_gemm.sh against main, three rounds; gpu_gemm passes with it): 2048³ and
 * 2048 × 4096 × 4096 +0.2–0.4 %, but 4096 × 14336 × 4096 −0.7 % in bf16 and fp16 and 2048 × 28672
 * × 8192 bf16 −1.5 % (stream-K launches), geomean ±0 — so it stays off until the stream-K loss is
 * understood. Off, the kernels are the ones measured (the scheduler has no divisor fields). To
 * build it: -DGEMM_HOPPER_FAST_DIVMOD=1 (CMAKE_CUDA_FLAGS). tests/cpu_gemm_tile_order.cu checks
 * the decode either way. */
#ifndef GEMM_HOPPER_FAST_DIVMOD
#define GEMM_HOPPER_FAST_DIVMOD 0
#endif

struct gemm_hopper_tile_coord {
  int batch;
  int tile_m; /* in tiles of BLOCK_M rows */
  int tile_n; /* in tiles of BLOCK_N columns */
};

struct gemm_hopper_scheduler {
  int tiles_m, tiles_n;
  int tiles_per_batch; /* tiles_m · tiles_n */
  int tile_count;      /* tiles_per_batch · batch_count */
  int k_tiles;         /* k-tiles of a whole tile */
  int group_m;         /* tile rows per group of the tile order (≥ 1) */
  int dp_tiles;        /* tiles [0, dp_tiles) are whole units; [dp_tiles, tile_count) stream-K */
  /* The stream-K k-tiles I = (tile_count − dp_tiles) · k_tiles = run_length · G + run_rest
   * (G = the grid), so that run boundaries need no 64-bit division (a call in SASS, which made
   * ptxas spill around it); the host keeps tile_count + G + I and G² below 2^31. */
  int run_length, run_rest;
#if GEMM_HOPPER_FAST_DIVMOD
  /* tiles_per_batch, group_m · tiles_n, group_m and the last group's rows, as fast divisors
   * (gemm_hopper_scheduler_set_divisors) */
  fc_fast_divisor per_batch, per_group, group_rows, last_group_rows;
#endif
};

#if GEMM_HOPPER_FAST_DIVMOD
/* Host: the divisors of a scheduler whose tiles_m, tiles_n, tiles_per_batch and group_m are set. */
static inline __host__ void gemm_hopper_scheduler_set_divisors(gemm_hopper_scheduler& s) {
  const int groups = s.group_m > 0 ? (s.tiles_m + s.group_m - 1) / s.group_m : 1;
  s.per_batch = fc_fast_divisor_make(s.tiles_per_batch);
  s.per_group = fc_fast_divisor_make(s.group_m * s.tiles_n);
  s.group_rows = fc_fast_divisor_make(s.group_m);
  s.last_group_rows = fc_fast_divisor_make(s.tiles_m - (groups - 1) * s.group_m);
}
#endif

/* One unit of work: k-tiles [k_begin, k_end) of linear tile `linear`. */
struct gemm_hopper_work {
  int linear;
  int k_begin, k_end;
};

/* A CTA's stream-K units: a run is at most one tile long, so it touches at most two tiles. */
constexpr int GEMM_HOPPER_STREAM_K_UNITS_MAX = 2;
struct gemm_hopper_stream_k_units {
  int count;
  gemm_hopper_work unit[GEMM_HOPPER_STREAM_K_UNITS_MAX];
};

/* The first k-tile of CTA `cta`'s stream-K run (cta = G gives the end of the last run). */
static __device__ __forceinline__ int gemm_hopper_stream_k_run_begin(const gemm_hopper_scheduler& s, int cta) {
  return cta * s.run_length + static_cast<int>(static_cast<unsigned>(cta * s.run_rest) / gridDim.x);
}

/* This CTA's stream-K units in the order it runs them (the later piece of its run first),
 * decoded once at the kernel's start into shared memory, where the producer and the consumers
 * read them (computing them inside the consumers' tile loop cost registers that the epilogue
 * then spilled). */
static __device__ __forceinline__ void gemm_hopper_stream_k_units_of_cta(const gemm_hopper_scheduler& s,
                                                                         gemm_hopper_stream_k_units* units) {
  const int begin = gemm_hopper_stream_k_run_begin(s, blockIdx.x);
  const int end = gemm_hopper_stream_k_run_begin(s, blockIdx.x + 1);
  units->count = 0;
  if (begin >= end) return;
  /* In k-tile order the run is [begin, split) of one tile and [split, end) of the next. */
  const int tile = begin / s.k_tiles;
  const int split = min(end, (tile + 1) * s.k_tiles);
  gemm_hopper_work first;
  first.linear = s.dp_tiles + tile;
  first.k_begin = begin - tile * s.k_tiles;
  first.k_end = split - tile * s.k_tiles;
  if (split == end) {
    units->unit[0] = first;
    units->count = 1;
    return;
  }
  gemm_hopper_work second;
  second.linear = first.linear + 1;
  second.k_begin = 0;
  second.k_end = end - split;
  units->unit[0] = second; /* the later piece runs first (see the header) */
  units->unit[1] = first;
  units->count = 2;
}

/* Where a CTA is in its sequence of units, in one register: next >= 0 is the next
 * data-parallel tile to try (blockIdx.x, + G, ...; done once it reaches dp_tiles); next < 0
 * means the stream-K units, −next − 1 being the index of the next one. */
struct gemm_hopper_work_cursor {
  int next;
};

static __device__ __forceinline__ gemm_hopper_work_cursor gemm_hopper_work_begin() {
  return gemm_hopper_work_cursor{static_cast<int>(blockIdx.x)};
}

/* A word of the CTA's units table, at its shared-memory address (32 bits: a generic pointer
 * to it cost the consumers a second register, and the 256-wide kernels spilled). The
 * consumers (WarpUniform) take lane 0's value by shuffle, so ptxas sees it warp-uniform: a
 * branch on a shared-memory load is "divergent" to it, and a WGMMA issued under such a branch
 * serialized every WGMMA of the kernel (C7518). The producer is one thread and reads it
 * directly. Volatile, so that the reads stay where they are (not hoisted out of the tile loop
 * and kept live through it). */
template <bool WarpUniform>
static __device__ __forceinline__ int gemm_hopper_units_read(uint32_t address) {
  int value;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(value) : "r"(address));
  if constexpr (WarpUniform) return __shfl_sync(0xffffffffu, value, 0);
  else return value;
}

/* Unit `index` of the table at `units` (its shared-memory address). */
template <bool WarpUniform>
static __device__ __forceinline__ gemm_hopper_work gemm_hopper_stream_k_unit(uint32_t units, int index) {
  const uint32_t unit = units + static_cast<uint32_t>(offsetof(gemm_hopper_stream_k_units, unit) +
                                                      index * sizeof(gemm_hopper_work));
  gemm_hopper_work work;
  work.linear = gemm_hopper_units_read<WarpUniform>(unit + offsetof(gemm_hopper_work, linear));
  work.k_begin = gemm_hopper_units_read<WarpUniform>(unit + offsetof(gemm_hopper_work, k_begin));
  work.k_end = gemm_hopper_units_read<WarpUniform>(unit + offsetof(gemm_hopper_work, k_end));
  return work;
}

template <bool WarpUniform>
static __device__ __forceinline__ int gemm_hopper_stream_k_unit_count(uint32_t units) {
  return gemm_hopper_units_read<WarpUniform>(units + offsetof(gemm_hopper_stream_k_units, count));
}

/* Where the cursor stands: -1 in the round robin of whole tiles (cursor.next < dp_tiles),
 * else the index of the stream-K unit it points at (which may be past the CTA's last). */
static __device__ __forceinline__ int gemm_hopper_cursor_unit(const gemm_hopper_scheduler& s,
                                                              const gemm_hopper_work_cursor& cursor) {
  if (cursor.next >= 0) return cursor.next < s.dp_tiles ? -1 : 0;
  return -cursor.next - 1;
}

/* Whether the CTA has a unit left (what gemm_hopper_next_work would return, without the unit). */
template <bool WarpUniform>
static __device__ __forceinline__ bool gemm_hopper_has_work(const gemm_hopper_scheduler& s, uint32_t units,
                                                            const gemm_hopper_work_cursor& cursor) {
  const int index = gemm_hopper_cursor_unit(s, cursor);
  return index < 0 || index < gemm_hopper_stream_k_unit_count<WarpUniform>(units);
}

/* The CTA's next unit into *work; false when it has none left (the cursor then stays).
 * `units`: the shared-memory address of the CTA's table (gemm_hopper_stream_k_units_of_cta).
 * Stream-K unit i leaves the cursor at -(i + 2), which gemm_hopper_last_work reads back. */
template <bool WarpUniform>
static __device__ __forceinline__ bool gemm_hopper_next_work(const gemm_hopper_scheduler& s, uint32_t units,
                                                             gemm_hopper_work_cursor& cursor, gemm_hopper_work& work) {
  const int index = gemm_hopper_cursor_unit(s, cursor);
  if (index < 0) {
    work.linear = cursor.next;
    work.k_begin = 0;
    work.k_end = s.k_tiles;
    cursor.next += gridDim.x;
    return true;
  }
  if (index >= gemm_hopper_stream_k_unit_count<WarpUniform>(units)) return false;
  work = gemm_hopper_stream_k_unit<WarpUniform>(units, index);
  cursor.next = -index - 2;
  return true;
}

/* The unit the last successful gemm_hopper_next_work returned, derived again from the cursor
 * (so a caller need not keep it live through a K loop). */
template <bool WarpUniform>
static __device__ __forceinline__ gemm_hopper_work gemm_hopper_last_work(const gemm_hopper_scheduler& s, uint32_t units,
                                                                         const gemm_hopper_work_cursor& cursor) {
  if (cursor.next >= 0) {
    gemm_hopper_work work;
    work.linear = cursor.next - static_cast<int>(gridDim.x);
    work.k_begin = 0;
    work.k_end = s.k_tiles;
    return work;
  }
  return gemm_hopper_stream_k_unit<WarpUniform>(units, -cursor.next - 2);
}

static __host__ __device__ __forceinline__ gemm_hopper_tile_coord gemm_hopper_tile_at(const gemm_hopper_scheduler& s,
                                                                                      int linear) {
  gemm_hopper_tile_coord coord;
#if GEMM_HOPPER_FAST_DIVMOD
  coord.batch = fc_fast_divide(linear, s.per_batch);
  const int local = linear - coord.batch * s.tiles_per_batch;
  const int group = fc_fast_divide(local, s.per_group);
  const int first_m = group * s.group_m;
  const fc_fast_divisor& rows = first_m + s.group_m <= s.tiles_m ? s.group_rows : s.last_group_rows;
  const int in_group = local - group * s.per_group.divisor;
  coord.tile_n = fc_fast_divide(in_group, rows);
  coord.tile_m = first_m + in_group - coord.tile_n * rows.divisor;
  return coord;
#else
  coord.batch = linear / s.tiles_per_batch;
  const int local = linear - coord.batch * s.tiles_per_batch;
  const int tiles_per_group = s.group_m * s.tiles_n;
  const int group = local / tiles_per_group;
  const int first_m = group * s.group_m;
  const int rows_in_group = min(s.tiles_m - first_m, s.group_m);
  const int in_group = local - group * tiles_per_group;
  coord.tile_m = first_m + in_group % rows_in_group;
  coord.tile_n = in_group / rows_in_group;
  return coord;
#endif
}

#endif
