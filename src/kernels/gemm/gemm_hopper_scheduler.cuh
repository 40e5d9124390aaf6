/*
 * gemm_hopper_scheduler.cuh — the persistent tile scheduler of the Hopper GEMM: CTA b of a
 * grid of G CTAs takes linear tiles b, b + G, b + 2G, ...; a linear tile maps to
 * (batch, tile_m, tile_n) in an L2-friendly grouped order: inside a batch, GROUP_M tile rows are
 * swept column by column (down the group first), so the CTAs in flight at one time share a few
 * A row panels and a few B column panels instead of streaming all of B per tile row.
 *
 * The producer and the consumers of a CTA walk the same sequence independently (it is a pure
 * function of the linear index), so no tile index crosses a barrier.
 * Check: every (batch, tile_m, tile_n) is produced exactly once for 0 <= linear < count —
 * tests/gpu/gpu_gemm.c writes every output element through this order (poisoned outputs).
 */
#ifndef FLASHC_KERNELS_GEMM_HOPPER_SCHEDULER_CUH
#define FLASHC_KERNELS_GEMM_HOPPER_SCHEDULER_CUH

struct gemm_hopper_tile_coord {
  int batch;
  int tile_m; /* in tiles of BLOCK_M rows */
  int tile_n; /* in tiles of BLOCK_N columns */
};

struct gemm_hopper_scheduler {
  int tiles_m, tiles_n;
  int tiles_per_batch; /* tiles_m · tiles_n */
  int tile_count;      /* tiles_per_batch · batch_count */
};

template <int GroupM>
static __device__ __forceinline__ gemm_hopper_tile_coord gemm_hopper_tile_at(const gemm_hopper_scheduler& s,
                                                                             int linear) {
  gemm_hopper_tile_coord coord;
  coord.batch = linear / s.tiles_per_batch;
  const int local = linear - coord.batch * s.tiles_per_batch;
  const int tiles_per_group = GroupM * s.tiles_n;
  const int group = local / tiles_per_group;
  const int first_m = group * GroupM;
  const int rows_in_group = min(s.tiles_m - first_m, GroupM);
  const int in_group = local - group * tiles_per_group;
  coord.tile_m = first_m + in_group % rows_in_group;
  coord.tile_n = in_group / rows_in_group;
  return coord;
}

#endif
