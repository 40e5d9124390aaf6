/*
 * gpu_ptx_tma.cu — unit tests of the TMA and mbarrier wrappers (src/kernels/common/ptx_tma.cuh,
 * ptx_mbarrier.cuh) and of the host tensor-map encoder (src/host/tensor_map.c).
 *
 *   2d round trip   a 200×136 bf16 matrix (row pitch 144) loaded as boxes with each swizzle
 *                   mode (128B: 64×64, 64B: 32×64, 32B: 16×64, none: 64×64), and loaded (only)
 *                   from a negative origin; shared memory compared with the expected swizzled
 *                   positions (16-byte chunk ^= line / (128 / span) mod (span / 16): for
 *                   128B, chunk ^= row % 8) and zeros out of bounds; stored back by TMA into a
 *                   poisoned buffer with pitch 152 and 256 rows: in-bounds equal to the
 *                   source, the pitch padding and the rows past 200 untouched.
 *   nd round trip   ranks 1, 3, 4, 5 (no swizzle), boxes hanging over the end of each dimension.
 *   partial granule TMA stores into rows that end inside a 16-byte granule (inner extent
 *                   13 or 77 bf16, row pitch a multiple of 16 bytes, poisoned padding), as the
 *                   GEMM's D map: in-bounds words right, nothing written past the row's last
 *                   16-byte granule; the H200 writes that granule whole (the padding in it is
 *                   overwritten, reported per case) — why d_tma_ok() refuses such rows.
 *   reduce-add      plain bulk load (cp.async.bulk) + bulk reduce-add f32 from 6 CTAs into one
 *                   buffer, and the tensor form (cp.reduce.async.bulk.tensor.2d) from tiles
 *                   written by ordinary stores (fence.proxy.async) with OOB parts dropped.
 *   multicast       2-CTA clusters: each CTA loads half a tile with multicast to both; both
 *                   see the whole tile; remote arrive (mapa) on the peer's barrier; cluster ids.
 *   host checks     tensor-map argument errors return the right status and name the field.
 *   --negative-store  (separate invocation, not in ctest) a PROBE: TMA stores of boxes that
 *                   start at negative coordinates. On the H200 it faults with an illegal
 *                   instruction — the reason ptx_tma.cuh requires store coordinates >= 0.
 *
 * TMA kernels that wait for a load report a barrier timeout (bytes that never arrived) as a
 * failed case and end normally, so one broken case does not take the others down.
 *
 * Build: part of the CMake build (tests/ptx); runs only on a compute capability 9.0 GPU
 * (exit 77 = skipped otherwise). Run: build/tests/ptx/gpu_ptx_tma  (FLASHC_TEST_SEED=... to
 * replay). Exit 0 when every case passes.
 */
#include "ptx_test_util.cuh"

#include <vector>

static const uint16_t POISON16 = 0xFFFFu; /* NaN in bf16 and fp16 */

/* ---------------------------------------------------------------------------------------- */
/* 2-D round trip                                                                             */
/* ---------------------------------------------------------------------------------------- */

/* One CTA per box: TMA load at (origin + box·blockIdx), dump the raw shared tile, TMA store
 * it back at the same coordinates. */
__global__ void __launch_bounds__(128) tma_roundtrip_2d_kernel(const __grid_constant__ CUtensorMap map_in,
                                                               const __grid_constant__ CUtensorMap map_out,
                                                               uint8_t* smem_dump, int box_cols, int box_rows,
                                                               int origin_col, int origin_row, int do_store,
                                                               int* timeouts) {
  extern __shared__ uint8_t smem_raw[];
  __shared__ uint64_t tile_full;
  uint8_t* tile = ptx_align_1024(smem_raw);
  const uint32_t tile_bytes = static_cast<uint32_t>(box_cols * box_rows * 2);
  const int col = origin_col + box_cols * static_cast<int>(blockIdx.x);
  const int row = origin_row + box_rows * static_cast<int>(blockIdx.y);

  if (threadIdx.x == 0) {
    tma_prefetch_map(&map_in);
    mbarrier_init(&tile_full, 1);
    fence_mbarrier_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    mbarrier_arrive_expect_tx(&tile_full, tile_bytes);
    tma_load_2d(tile, &map_in, &tile_full, col, row);
  }
  if (!ptx_test_wait_or_timeout(&tile_full, 0)) { /* the bytes never arrived: report, end the CTA */
    atomicAdd(timeouts, 1);
    return;
  }

  uint8_t* dump = smem_dump + static_cast<size_t>(blockIdx.y * gridDim.x + blockIdx.x) * tile_bytes;
  for (uint32_t i = threadIdx.x * 16; i < tile_bytes; i += blockDim.x * 16)
    *reinterpret_cast<uint4*>(dump + i) = *reinterpret_cast<const uint4*>(tile + i);
  __syncthreads();

  if (do_store && threadIdx.x == 0) {
    tma_store_2d(&map_out, tile, col, row);
    tma_commit_group();
    tma_wait_group_read<0>(); /* the tile must outlive the copy's reads */
  }
}

/* Expected physical byte offset of logical (line, byte) in a box whose lines are
 * `line_bytes` long, written independently of ptx_desc.cuh: the 16-byte chunk index is XORed
 * with bits 7.. of the linear offset, masked to the span's chunk count. */
static size_t expected_swizzled_offset(int swizzle, int line, int byte, int line_bytes) {
  size_t linear = static_cast<size_t>(line) * line_bytes + byte;
  if (swizzle == 0) return linear;
  int chunks = swizzle / 16;
  size_t chunk = (linear / 16) % chunks;
  size_t pattern = (linear / 128) % chunks;
  return linear - chunk * 16 + ((chunk ^ pattern) * 16);
}

/* negative_origin: boxes start at negative coordinates (col -box/2-8, row -13): part of
 * every left/top box lies before the tensor. do_store: also store the boxes back by TMA. */
static void test_roundtrip_2d(ptx_report* report, ptx_rng* rng, const fc_tensor_map_encoder* encoder,
                              int negative_origin, int do_store, int only_128b) {
  const int rows = 200, cols = 136, in_pitch = 144, out_pitch = 152, out_rows = 256;
  std::vector<uint16_t> host_in(static_cast<size_t>(rows) * in_pitch);
  for (auto& v : host_in) v = ptx_random_16bit(rng, FLASHC_DTYPE_BF16, 4.0);

  uint16_t *in = nullptr, *out = nullptr;
  CUDA_CHECK(cudaMalloc(&in, host_in.size() * 2));
  CUDA_CHECK(cudaMalloc(&out, static_cast<size_t>(out_rows) * out_pitch * 2));
  CUDA_CHECK(cudaMemcpy(in, host_in.data(), host_in.size() * 2, cudaMemcpyHostToDevice));

  struct {
    fc_tensor_map_swizzle swizzle;
    int box_cols, box_rows;
  } modes[] = {{FC_TENSOR_MAP_SWIZZLE_128B, 64, 64},
               {FC_TENSOR_MAP_SWIZZLE_64B, 32, 64},
               {FC_TENSOR_MAP_SWIZZLE_32B, 16, 64},
               {FC_TENSOR_MAP_SWIZZLE_NONE, 64, 64}};
  int* timeouts = nullptr;
  CUDA_CHECK(cudaMalloc(&timeouts, sizeof(int)));
  for (const auto& mode : modes) {
    if (only_128b && mode.swizzle != FC_TENSOR_MAP_SWIZZLE_128B) continue;
    {
      const int origin_col = negative_origin ? -mode.box_cols / 2 - 8 : 0;
      const int origin_row = negative_origin ? -13 : 0;
      const int tiles_x = (cols - origin_col + mode.box_cols - 1) / mode.box_cols;
      const int tiles_y = (rows - origin_row + mode.box_rows - 1) / mode.box_rows;
      const int tile_bytes = mode.box_cols * mode.box_rows * 2;
      const int line_bytes = mode.box_cols * 2;

      fc_tensor_map map_in = ptx_make_map_2d(encoder, FLASHC_DTYPE_BF16, in, cols, rows, in_pitch, mode.box_cols,
                                             mode.box_rows, mode.swizzle);
      fc_tensor_map map_out = ptx_make_map_2d(encoder, FLASHC_DTYPE_BF16, out, cols, rows, out_pitch, mode.box_cols,
                                              mode.box_rows, mode.swizzle);
      uint8_t* dump = nullptr;
      const size_t dump_bytes = static_cast<size_t>(tiles_x) * tiles_y * tile_bytes;
      CUDA_CHECK(cudaMalloc(&dump, dump_bytes));
      CUDA_CHECK(cudaMemset(dump, 0xA5, dump_bytes));
      CUDA_CHECK(cudaMemset(out, 0xFF, static_cast<size_t>(out_rows) * out_pitch * 2));
      CUDA_CHECK(cudaMemset(timeouts, 0, sizeof(int)));

      const int smem = tile_bytes + 1024;
      CUDA_CHECK(cudaFuncSetAttribute(tma_roundtrip_2d_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      tma_roundtrip_2d_kernel<<<dim3(tiles_x, tiles_y), 128, smem>>>(map_in, map_out, dump, mode.box_cols,
                                                                     mode.box_rows, origin_col, origin_row, do_store,
                                                                     timeouts);
      CUDA_CHECK(cudaGetLastError());
      CUDA_CHECK(cudaDeviceSynchronize());

      std::vector<uint8_t> host_dump(dump_bytes);
      std::vector<uint16_t> host_out(static_cast<size_t>(out_rows) * out_pitch);
      CUDA_CHECK(cudaMemcpy(host_dump.data(), dump, dump_bytes, cudaMemcpyDeviceToHost));
      CUDA_CHECK(cudaMemcpy(host_out.data(), out, host_out.size() * 2, cudaMemcpyDeviceToHost));
      CUDA_CHECK(cudaFree(dump));
      int timed_out = 0;
      CUDA_CHECK(cudaMemcpy(&timed_out, timeouts, sizeof(int), cudaMemcpyDeviceToHost));

      /* Shared memory: every box element at its swizzled position; zeros out of bounds. */
      long smem_errors = 0, zero_fill_checked = 0;
      char first[160] = "";
      for (int ty = 0; ty < tiles_y; ++ty)
        for (int tx = 0; tx < tiles_x; ++tx)
          for (int r = 0; r < mode.box_rows; ++r)
            for (int c = 0; c < mode.box_cols; ++c) {
              const int grow = origin_row + ty * mode.box_rows + r, gcol = origin_col + tx * mode.box_cols + c;
              const bool inside = grow >= 0 && grow < rows && gcol >= 0 && gcol < cols;
              const uint16_t want = inside ? host_in[static_cast<size_t>(grow) * in_pitch + gcol] : 0;
              zero_fill_checked += inside ? 0 : 1;
              const size_t at = static_cast<size_t>(ty * tiles_x + tx) * tile_bytes +
                                expected_swizzled_offset(mode.swizzle, r, c * 2, line_bytes);
              uint16_t got;
              memcpy(&got, &host_dump[at], 2);
              if (got != want && smem_errors++ == 0)
                snprintf(first, sizeof first, "tile (%d,%d) elem (%d,%d): smem 0x%04x, want 0x%04x", tx, ty, r, c, got,
                         want);
            }
      /* Global: in-bounds copied, padding columns and rows past the end untouched. */
      long out_errors = 0, guard_checked = 0;
      for (int r = 0; r < out_rows; ++r)
        for (int c = 0; c < out_pitch; ++c) {
          const bool inside = do_store && r < rows && c < cols;
          const uint16_t want = inside ? host_in[static_cast<size_t>(r) * in_pitch + c] : POISON16;
          guard_checked += inside ? 0 : 1;
          const uint16_t got = host_out[static_cast<size_t>(r) * out_pitch + c];
          if (got != want && out_errors++ == 0 && !first[0])
            snprintf(first, sizeof first, "out (%d,%d): 0x%04x, want 0x%04x", r, c, got, want);
        }
      char name[128], detail[360];
      snprintf(name, sizeof name, "tma 2d bf16 %s swizzle %dB box %dx%d origin (%d,%d)",
               do_store ? "load+store" : "load", (int)mode.swizzle, mode.box_cols, mode.box_rows, origin_col, origin_row);
      snprintf(detail, sizeof detail, "%d tiles, %d barrier timeouts, %ld smem mismatches (%ld zero-filled elems "
               "checked), %ld global mismatches (%ld guard elems) %s",
               tiles_x * tiles_y, timed_out, smem_errors, zero_fill_checked, out_errors, guard_checked, first);
      ptx_report_case(report, timed_out == 0 && smem_errors == 0 && out_errors == 0 && zero_fill_checked > 0, name,
                      detail);
    }
  }
  CUDA_CHECK(cudaFree(timeouts));
  CUDA_CHECK(cudaFree(in));
  CUDA_CHECK(cudaFree(out));
}

/* ---------------------------------------------------------------------------------------- */
/* Ranks 1, 3, 4, 5                                                                           */
/* ---------------------------------------------------------------------------------------- */

struct nd_coords {
  int c[5];
};

__global__ void __launch_bounds__(128) tma_roundtrip_nd_kernel(const __grid_constant__ CUtensorMap map_in,
                                                               const __grid_constant__ CUtensorMap map_out, int rank,
                                                               nd_coords at, int box_bytes, uint8_t* smem_dump) {
  extern __shared__ uint8_t smem_raw[];
  __shared__ uint64_t box_full;
  uint8_t* box = ptx_align_1024(smem_raw);
  if (threadIdx.x == 0) {
    mbarrier_init(&box_full, 1);
    fence_mbarrier_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    mbarrier_arrive_expect_tx(&box_full, static_cast<uint32_t>(box_bytes));
    const int* c = at.c;
    switch (rank) {
      case 1: tma_load_1d(box, &map_in, &box_full, c[0]); break;
      case 3: tma_load_3d(box, &map_in, &box_full, c[0], c[1], c[2]); break;
      case 4: tma_load_4d(box, &map_in, &box_full, c[0], c[1], c[2], c[3]); break;
      default: tma_load_5d(box, &map_in, &box_full, c[0], c[1], c[2], c[3], c[4]); break;
    }
  }
  ptx_test_wait(&box_full, 0);
  for (int i = threadIdx.x * 16; i < box_bytes; i += blockDim.x * 16)
    *reinterpret_cast<uint4*>(smem_dump + i) = *reinterpret_cast<const uint4*>(box + i);
  __syncthreads();
  if (threadIdx.x == 0) {
    const int* c = at.c;
    switch (rank) {
      case 1: tma_store_1d(&map_out, box, c[0]); break;
      case 3: tma_store_3d(&map_out, box, c[0], c[1], c[2]); break;
      case 4: tma_store_4d(&map_out, box, c[0], c[1], c[2], c[3]); break;
      default: tma_store_5d(&map_out, box, c[0], c[1], c[2], c[3], c[4]); break;
    }
    tma_commit_group();
    tma_wait_group<0>();
  }
}

static void test_roundtrip_nd(ptx_report* report, ptx_rng* rng, const fc_tensor_map_encoder* encoder) {
  const uint64_t dims[5] = {24, 5, 4, 3, 2};
  const int64_t pitch0 = 32; /* 64-byte rows */
  const uint32_t box[5] = {16, 4, 3, 2, 2};
  const nd_coords at = {{16, 2, 2, 2, 1}}; /* every dimension runs past its end */
  const int ranks[] = {1, 3, 4, 5};
  for (int rank : ranks) {
    int64_t strides[5] = {1, pitch0, 0, 0, 0};
    for (int i = 2; i < 5; ++i) strides[i] = strides[i - 1] * static_cast<int64_t>(dims[i - 1]);
    size_t elements = 1;
    for (int i = 0; i < rank; ++i) elements = i == 0 ? pitch0 : elements * dims[i];
    if (rank == 1) elements = pitch0;
    size_t box_elements = 1;
    for (int i = 0; i < rank; ++i) box_elements *= box[i];
    const int box_bytes = static_cast<int>(box_elements * 2);

    std::vector<uint16_t> host_in(elements);
    for (auto& v : host_in) v = ptx_random_16bit(rng, FLASHC_DTYPE_FP16, 8.0);
    uint16_t *in = nullptr, *out = nullptr;
    uint8_t* dump = nullptr;
    CUDA_CHECK(cudaMalloc(&in, elements * 2));
    CUDA_CHECK(cudaMalloc(&out, elements * 2));
    CUDA_CHECK(cudaMalloc(&dump, box_bytes));
    CUDA_CHECK(cudaMemcpy(in, host_in.data(), elements * 2, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(out, 0xFF, elements * 2));
    fc_tensor_map map_in = ptx_make_map(encoder, FLASHC_DTYPE_FP16, in, rank, dims, strides, box, FC_TENSOR_MAP_SWIZZLE_NONE);
    fc_tensor_map map_out = ptx_make_map(encoder, FLASHC_DTYPE_FP16, out, rank, dims, strides, box, FC_TENSOR_MAP_SWIZZLE_NONE);
    tma_roundtrip_nd_kernel<<<1, 128, box_bytes + 1024>>>(map_in, map_out, rank, at, box_bytes, dump);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<uint16_t> host_dump(box_elements), host_out(elements);
    CUDA_CHECK(cudaMemcpy(host_dump.data(), dump, box_bytes, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(host_out.data(), out, elements * 2, cudaMemcpyDeviceToHost));

    long errors = 0, oob = 0;
    char first[160] = "";
    std::vector<char> written(elements, 0);
    for (size_t e = 0; e < box_elements; ++e) {
      size_t rest = e, offset = 0;
      bool inside = true;
      for (int i = 0; i < rank; ++i) {
        const uint64_t coordinate = static_cast<uint64_t>(at.c[i]) + rest % box[i];
        rest /= box[i];
        inside = inside && coordinate < dims[i];
        offset += coordinate * static_cast<uint64_t>(strides[i]);
      }
      const uint16_t want = inside ? host_in[offset] : 0;
      oob += inside ? 0 : 1;
      if (inside) written[offset] = 1;
      if (host_dump[e] != want && errors++ == 0)
        snprintf(first, sizeof first, "box elem %zu: 0x%04x, want 0x%04x", e, host_dump[e], want);
    }
    for (size_t i = 0; i < elements; ++i) {
      const uint16_t want = written[i] ? host_in[i] : POISON16;
      if (host_out[i] != want && errors++ == 0)
        snprintf(first, sizeof first, "out elem %zu: 0x%04x, want 0x%04x", i, host_out[i], want);
    }
    char name[64], detail[256];
    snprintf(name, sizeof name, "tma %dd fp16 round trip", rank);
    snprintf(detail, sizeof detail, "box %zu elems (%ld out of bounds), %ld mismatches %s", box_elements, oob, errors,
             first);
    ptx_report_case(report, errors == 0 && oob > 0, name, detail);
    CUDA_CHECK(cudaFree(in));
    CUDA_CHECK(cudaFree(out));
    CUDA_CHECK(cudaFree(dump));
  }
}

/* ---------------------------------------------------------------------------------------- */
/* Stores whose rows end inside a 16-byte granule                                             */
/* ---------------------------------------------------------------------------------------- */

/* The GEMM's TMA-store epilogue writes D through a map whose inner extent is D's column
 * count; with a padded row stride (a column-major D normalized to row-major, ld = m + 3) a row
 * can end inside a 16-byte granule, and the padding after it belongs to the caller. One CTA per
 * box (blockIdx.x, .y: box column/row, .z: batch) fills its box in shared memory with ordinary
 * stores — nonzero words that depend on the byte offset and the CTA — publishes them to the
 * async proxy and TMA-stores the whole box.
 * Measured on the H200 (2026-11-29, every case below): the in-bounds words are right, nothing
 * past the row's last 16-byte granule is touched, but the store writes that granule WHOLE: the
 * padding words that share it with the row's last elements receive the box's out-of-bounds
 * values (all of them, every row, with and without swizzle, 2-D and 3-D, fp16/bf16/fp32). So
 * out-of-bounds elements are dropped at 16-byte granularity only, and a TMA store may be used
 * on rows whose byte length is not a multiple of 16 only when the bytes after them up to the
 * next 16-byte boundary may be overwritten: the GEMM's d_tma_ok() refuses such rows. The case
 * fails on a wrong in-bounds word or any write beyond that granule; the partial-granule count
 * is reported, not asserted. */
__global__ void __launch_bounds__(128) tma_store_partial_kernel(const __grid_constant__ CUtensorMap map, int rank,
                                                                int box_bytes, int box_cols, int box_rows) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* box = ptx_align_1024(smem_raw);
  const int cta = static_cast<int>((blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x);
  for (int word = threadIdx.x; word < box_bytes / 2; word += blockDim.x)
    reinterpret_cast<uint16_t*>(box)[word] = static_cast<uint16_t>((word * 5 + cta * 977) % 0x7FFF + 1);
  fence_proxy_async_shared_cta(); /* generic-proxy stores → the TMA store's reads */
  __syncthreads();
  if (threadIdx.x == 0) {
    const int col = box_cols * static_cast<int>(blockIdx.x), row = box_rows * static_cast<int>(blockIdx.y);
    if (rank == 3) tma_store_3d(&map, box, col, row, static_cast<int>(blockIdx.z));
    else tma_store_2d(&map, box, col, row);
    tma_commit_group();
    tma_wait_group<0>();
  }
}

struct partial_store_case {
  const char* what;
  flashc_dtype dtype;
  int cols, rows, pitch, batches; /* elements; matrices `pitch · rows` apart */
  int box_cols, box_rows;
  fc_tensor_map_swizzle swizzle;
  int rank; /* 3 = the GEMM's (columns, rows, batch) map */
};

static void test_store_partial_granule(ptx_report* report, const fc_tensor_map_encoder* encoder,
                                       const partial_store_case& t) {
  const int element_bytes = static_cast<int>(flashc_dtype_size(t.dtype));
  const int words_per_row = t.pitch * element_bytes / 2;
  const int rows_allocated = t.rows + 8; /* rows past the end: must stay poisoned too */
  const size_t matrix_words = static_cast<size_t>(words_per_row) * t.rows;
  const size_t total_words = matrix_words * t.batches + static_cast<size_t>(words_per_row) * (rows_allocated - t.rows);
  const int line_bytes = t.box_cols * element_bytes, box_bytes = line_bytes * t.box_rows;
  const int tiles_x = (t.cols + t.box_cols - 1) / t.box_cols, tiles_y = (t.rows + t.box_rows - 1) / t.box_rows;

  uint16_t* out = nullptr;
  CUDA_CHECK(cudaMalloc(&out, total_words * 2));
  CUDA_CHECK(cudaMemset(out, 0xFF, total_words * 2));
  fc_tensor_map_desc desc; /* the GEMM's D map settings (gemm_hopper_launch.cu) */
  fc_tensor_map_desc_init(&desc);
  desc.dtype = t.dtype;
  desc.rank = t.rank;
  desc.global_address = out;
  desc.global_dims[0] = static_cast<uint64_t>(t.cols);
  desc.global_dims[1] = static_cast<uint64_t>(t.rows);
  desc.global_strides[0] = 1;
  desc.global_strides[1] = t.pitch;
  desc.box_dims[0] = static_cast<uint32_t>(t.box_cols);
  desc.box_dims[1] = static_cast<uint32_t>(t.box_rows);
  if (t.rank == 3) {
    desc.global_dims[2] = static_cast<uint64_t>(t.batches);
    desc.global_strides[2] = static_cast<int64_t>(t.pitch) * t.rows;
    desc.box_dims[2] = 1;
  }
  desc.swizzle = t.swizzle;
  desc.l2_promotion = FC_TENSOR_MAP_L2_256B;
  desc.oob_fill = FC_TENSOR_MAP_OOB_ZERO;
  fc_tensor_map map;
  FLASHC_CHECK(fc_tensor_map_encode_tiled(encoder, &desc, &map));
  CUDA_CHECK(cudaFuncSetAttribute(tma_store_partial_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  box_bytes + 1024));
  tma_store_partial_kernel<<<dim3(tiles_x, tiles_y, t.rank == 3 ? t.batches : 1), 128, box_bytes + 1024>>>(
      map, t.rank, box_bytes, t.box_cols, t.box_rows);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<uint16_t> host(total_words);
  CUDA_CHECK(cudaMemcpy(host.data(), out, total_words * 2, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaFree(out));

  /* Words of each row: in bounds (columns < cols) = the box word TMA read; padding in the
   * row's last, partial 16-byte granule; padding in whole granules after it; rows past the end. */
  const int row_bytes = t.cols * element_bytes;
  const int partial_granule_end = (row_bytes + 15) / 16 * 16;
  long wrong = 0, clobbered_partial = 0, clobbered_beyond = 0, partial_words = 0, guard_words = 0;
  char first[200] = "";
  const int batches = t.rank == 3 ? t.batches : 1;
  for (size_t w = 0; w < total_words; ++w) {
    const int batch = static_cast<int>(w / matrix_words);
    const int row = static_cast<int>((w % matrix_words) / words_per_row);
    const int byte = static_cast<int>(w % words_per_row) * 2;
    const bool inside = batch < batches && byte < row_bytes;
    uint16_t want = POISON16;
    if (inside) {
      const int tx = byte / line_bytes, ty = row / t.box_rows;
      const int cta = (batch * tiles_y + ty) * tiles_x + tx;
      const size_t at = expected_swizzled_offset(static_cast<int>(t.swizzle), row % t.box_rows, byte % line_bytes,
                                                 line_bytes);
      want = static_cast<uint16_t>((static_cast<int>(at / 2) * 5 + cta * 977) % 0x7FFF + 1);
    }
    const bool in_partial = !inside && batch < batches && byte < partial_granule_end;
    partial_words += in_partial ? 1 : 0;
    guard_words += inside ? 0 : 1;
    if (host[w] == want) continue;
    if (inside) ++wrong;
    else if (in_partial) ++clobbered_partial;
    else ++clobbered_beyond;
    if (!first[0] && !in_partial) /* the first failing word */
      snprintf(first, sizeof first, "first at batch %d row %d byte %d: 0x%04x, want 0x%04x", batch, row, byte, host[w],
               want);
  }
  char name[160], detail[512];
  snprintf(name, sizeof name, "tma store, rows ending inside a 16-byte granule: %s", t.what);
  snprintf(detail, sizeof detail,
           "%s %dx%d pitch %d x%d, box %dx%d swizzle %dB rank %d: %ld in-bounds mismatches, %ld of %ld guard words "
           "beyond the row's last granule written; padding inside that granule written: %ld of %ld words%s %s",
           flashc_dtype_name(t.dtype), t.rows, t.cols, t.pitch, batches, t.box_rows, t.box_cols, (int)t.swizzle, t.rank,
           wrong, clobbered_beyond, guard_words - partial_words, clobbered_partial, partial_words,
           clobbered_partial == partial_words ? " (the whole granule, as measured on the H200)" : "", first);
  ptx_report_case(report, wrong == 0 && clobbered_beyond == 0 && partial_words > 0, name, detail);
}

static void test_store_partial_granules(ptx_report* report, const fc_tensor_map_encoder* encoder) {
  const partial_store_case cases[] = {
      /* the two gpu_gemm failures of seed 585389383772 (bf16 D, ld = m + 3) */
      {"gemm seed case 1", FLASHC_DTYPE_BF16, 13, 13, 16, 1, 64, 64, FC_TENSOR_MAP_SWIZZLE_128B, 3},
      {"gemm seed case 2", FLASHC_DTYPE_BF16, 77, 127, 80, 3, 64, 64, FC_TENSOR_MAP_SWIZZLE_128B, 3},
      /* the e4m3 case that passed with the same kind of row (189 bf16 = 378 bytes) */
      {"e4m3 passing case", FLASHC_DTYPE_BF16, 189, 100, 192, 1, 64, 64, FC_TENSOR_MAP_SWIZZLE_128B, 3},
      {"fp32", FLASHC_DTYPE_FP32, 13, 40, 16, 2, 32, 64, FC_TENSOR_MAP_SWIZZLE_128B, 3},
      {"no swizzle 2d", FLASHC_DTYPE_FP16, 13, 21, 16, 1, 16, 8, FC_TENSOR_MAP_SWIZZLE_NONE, 2},
      {"one partial granule", FLASHC_DTYPE_FP16, 5, 9, 8, 1, 8, 8, FC_TENSOR_MAP_SWIZZLE_NONE, 2},
  };
  for (const auto& t : cases) test_store_partial_granule(report, encoder, t);
}

/* ---------------------------------------------------------------------------------------- */
/* Reduce-add                                                                                 */
/* ---------------------------------------------------------------------------------------- */

/* Each CTA bulk-loads its own addend slice and reduce-adds it into the shared accumulator. */
__global__ void __launch_bounds__(128) bulk_reduce_kernel(const float* addends, float* accumulator, int floats) {
  extern __shared__ uint8_t smem_raw[];
  __shared__ uint64_t slice_full;
  float* slice = reinterpret_cast<float*>(ptx_align_1024(smem_raw));
  const uint32_t bytes = static_cast<uint32_t>(floats * 4);
  if (threadIdx.x == 0) {
    mbarrier_init(&slice_full, 1);
    fence_mbarrier_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    mbarrier_arrive_expect_tx(&slice_full, bytes);
    bulk_load(slice, addends + static_cast<size_t>(blockIdx.x) * floats, bytes, &slice_full);
  }
  ptx_test_wait(&slice_full, 0);
  if (threadIdx.x == 0) {
    bulk_reduce_add_f32(accumulator, slice, bytes);
    tma_commit_group();
    tma_wait_group<0>();
  }
}

/* Tiles written by ordinary stores, then reduce-added through a tensor map (blockIdx.z
 * repeats the addition with different values). */
__global__ void __launch_bounds__(128) tensor_reduce_kernel(const __grid_constant__ CUtensorMap map, int box_cols,
                                                            int box_rows) {
  extern __shared__ uint8_t smem_raw[];
  float* tile = reinterpret_cast<float*>(ptx_align_1024(smem_raw));
  const int col0 = box_cols * blockIdx.x, row0 = box_rows * blockIdx.y;
  for (int i = threadIdx.x; i < box_cols * box_rows; i += blockDim.x) {
    const int r = row0 + i / box_cols, c = col0 + i % box_cols;
    tile[i] = static_cast<float>((r * 7 + c * 3 + static_cast<int>(blockIdx.z) * 5) % 17 - 8);
  }
  fence_proxy_async_shared_cta(); /* generic-proxy stores → async-proxy reads */
  __syncthreads();
  if (threadIdx.x == 0) {
    tma_reduce_add_2d(&map, tile, col0, row0);
    tma_commit_group();
    tma_wait_group<0>();
  }
}

static void test_reduce_add(ptx_report* report, ptx_rng* rng, const fc_tensor_map_encoder* encoder) {
  { /* plain bulk: 6 CTAs × 2048 floats into one buffer */
    const int ctas = 6, floats = 2048;
    std::vector<float> host_acc(floats), host_add(static_cast<size_t>(ctas) * floats);
    for (auto& v : host_acc) v = static_cast<float>(static_cast<int>(ptx_rng_uniform(rng, -1000, 1000)));
    for (auto& v : host_add) v = static_cast<float>(static_cast<int>(ptx_rng_uniform(rng, -100, 100)) | 1);
    float *acc = nullptr, *add = nullptr;
    CUDA_CHECK(cudaMalloc(&acc, floats * 4));
    CUDA_CHECK(cudaMalloc(&add, host_add.size() * 4));
    CUDA_CHECK(cudaMemcpy(acc, host_acc.data(), floats * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(add, host_add.data(), host_add.size() * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaFuncSetAttribute(bulk_reduce_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, floats * 4 + 1024));
    bulk_reduce_kernel<<<ctas, 128, floats * 4 + 1024>>>(add, acc, floats);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> got(floats);
    CUDA_CHECK(cudaMemcpy(got.data(), acc, floats * 4, cudaMemcpyDeviceToHost));
    long errors = 0;
    char first[128] = "";
    for (int i = 0; i < floats; ++i) {
      float want = host_acc[i];
      for (int c = 0; c < ctas; ++c) want += host_add[static_cast<size_t>(c) * floats + i];
      if (got[i] != want && errors++ == 0) snprintf(first, sizeof first, "elem %d: %g, want %g", i, got[i], want);
    }
    char detail[192];
    snprintf(detail, sizeof detail, "%d CTAs x %d floats, %ld mismatches %s", ctas, floats, errors, first);
    ptx_report_case(report, errors == 0, "bulk load + bulk reduce-add f32", detail);
    CUDA_CHECK(cudaFree(acc));
    CUDA_CHECK(cudaFree(add));
  }
  { /* tensor form: a 40×48 fp32 matrix (pitch 56) in 32×16 boxes, 3 additions each */
    const int rows = 40, cols = 48, pitch = 56, box_cols = 32, box_rows = 16, repeats = 3;
    const int tiles_x = (cols + box_cols - 1) / box_cols, tiles_y = (rows + box_rows - 1) / box_rows;
    std::vector<float> host_acc(static_cast<size_t>(rows) * pitch);
    for (auto& v : host_acc) v = static_cast<float>(static_cast<int>(ptx_rng_uniform(rng, -1000, 1000)));
    float* acc = nullptr;
    CUDA_CHECK(cudaMalloc(&acc, host_acc.size() * 4));
    CUDA_CHECK(cudaMemcpy(acc, host_acc.data(), host_acc.size() * 4, cudaMemcpyHostToDevice));
    fc_tensor_map map = ptx_make_map_2d(encoder, FLASHC_DTYPE_FP32, acc, cols, rows, pitch, box_cols, box_rows,
                                        FC_TENSOR_MAP_SWIZZLE_NONE);
    tensor_reduce_kernel<<<dim3(tiles_x, tiles_y, repeats), 128, box_cols * box_rows * 4 + 1024>>>(map, box_cols,
                                                                                                   box_rows);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> got(host_acc.size());
    CUDA_CHECK(cudaMemcpy(got.data(), acc, got.size() * 4, cudaMemcpyDeviceToHost));
    long errors = 0;
    char first[128] = "";
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < pitch; ++c) {
        float want = host_acc[static_cast<size_t>(r) * pitch + c];
        if (c < cols)
          for (int z = 0; z < repeats; ++z) want += static_cast<float>((r * 7 + c * 3 + z * 5) % 17 - 8);
        const float value = got[static_cast<size_t>(r) * pitch + c];
        if (value != want && errors++ == 0) snprintf(first, sizeof first, "(%d,%d): %g, want %g", r, c, value, want);
      }
    char detail[192];
    snprintf(detail, sizeof detail, "%dx%d fp32 in %dx%d boxes x%d, %ld mismatches (padding must stay) %s", rows, cols,
             box_cols, box_rows, repeats, errors, first);
    ptx_report_case(report, errors == 0, "tensor reduce-add 2d f32", detail);
    CUDA_CHECK(cudaFree(acc));
  }
}

/* ---------------------------------------------------------------------------------------- */
/* Multicast in 2-CTA clusters                                                                */
/* ---------------------------------------------------------------------------------------- */

/* Cluster c covers rows [64c, 64c + 64) of a bf16 matrix with 64 columns. CTA rank r loads
 * rows 32r..32r+31 of that block and multicasts them to both CTAs at smem offset r·4096; each
 * CTA expects the whole 8 KB. Then each CTA signals its peer's `peer_done` barrier remotely
 * and waits for its own, so both dumps are taken before either CTA moves on. */
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(128)
    tma_multicast_kernel(const __grid_constant__ CUtensorMap map, uint8_t* smem_dump, int* cluster_info) {
  extern __shared__ uint8_t smem_raw[];
  __shared__ uint64_t tile_full, peer_done;
  uint8_t* tile = ptx_align_1024(smem_raw);
  const uint32_t half_bytes = 32 * 64 * 2;
  const uint32_t rank = cluster_cta_rank();
  if (threadIdx.x == 0) {
    mbarrier_init(&tile_full, 1);
    mbarrier_init(&peer_done, 1);
    fence_mbarrier_init();
  }
  cluster_sync(); /* the peer's barriers exist before our multicast or arrive reaches them */
  if (threadIdx.x == 0) {
    mbarrier_arrive_expect_tx(&tile_full, 2 * half_bytes);
    tma_load_2d_multicast(tile + rank * half_bytes, &map, &tile_full, 0x3, 0,
                          static_cast<int>(cluster_id_x()) * 64 + static_cast<int>(rank) * 32);
  }
  ptx_test_wait(&tile_full, 0);
  uint8_t* dump = smem_dump + static_cast<size_t>(blockIdx.x) * 2 * half_bytes;
  for (uint32_t i = threadIdx.x * 16; i < 2 * half_bytes; i += blockDim.x * 16)
    *reinterpret_cast<uint4*>(dump + i) = *reinterpret_cast<const uint4*>(tile + i);
  __syncthreads();
  if (threadIdx.x == 0) {
    mbarrier_arrive_cluster(&peer_done, rank ^ 1u);
    cluster_info[blockIdx.x * 4 + 0] = static_cast<int>(rank);
    cluster_info[blockIdx.x * 4 + 1] = static_cast<int>(cluster_cta_count());
    cluster_info[blockIdx.x * 4 + 2] = static_cast<int>(cluster_id_x());
    cluster_info[blockIdx.x * 4 + 3] = static_cast<int>(mapa_shared_cluster(&peer_done, rank ^ 1u) != smem_u32(&peer_done));
  }
  while (!mbarrier_try_wait_parity_cluster(&peer_done, 0)) {
  }
  cluster_sync(); /* no CTA leaves while its peer may still address its shared memory */
}

static void test_multicast(ptx_report* report, ptx_rng* rng, const fc_tensor_map_encoder* encoder) {
  const int rows = 180, cols = 64, clusters = 3; /* the last cluster's block runs past row 180 */
  std::vector<uint16_t> host_in(static_cast<size_t>(rows) * cols);
  for (auto& v : host_in) v = ptx_random_16bit(rng, FLASHC_DTYPE_BF16, 2.0);
  uint16_t* in = nullptr;
  uint8_t* dump = nullptr;
  int* info = nullptr;
  const size_t tile_bytes = 64 * 64 * 2;
  CUDA_CHECK(cudaMalloc(&in, host_in.size() * 2));
  CUDA_CHECK(cudaMalloc(&dump, tile_bytes * 2 * clusters));
  CUDA_CHECK(cudaMalloc(&info, sizeof(int) * 4 * 2 * clusters));
  CUDA_CHECK(cudaMemcpy(in, host_in.data(), host_in.size() * 2, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(dump, 0xA5, tile_bytes * 2 * clusters));
  CUDA_CHECK(cudaMemset(info, 0xFF, sizeof(int) * 4 * 2 * clusters));
  fc_tensor_map map = ptx_make_map_2d(encoder, FLASHC_DTYPE_BF16, in, cols, rows, cols, 64, 32, FC_TENSOR_MAP_SWIZZLE_128B);
  tma_multicast_kernel<<<2 * clusters, 128, tile_bytes + 1024>>>(map, dump, info);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<uint8_t> host_dump(tile_bytes * 2 * clusters);
  std::vector<int> host_info(4 * 2 * clusters);
  CUDA_CHECK(cudaMemcpy(host_dump.data(), dump, host_dump.size(), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(host_info.data(), info, host_info.size() * sizeof(int), cudaMemcpyDeviceToHost));

  long errors = 0;
  char first[160] = "";
  for (int block = 0; block < 2 * clusters; ++block) {
    const int cluster = block / 2;
    const int* bi = &host_info[block * 4];
    if ((bi[0] != block % 2 || bi[1] != 2 || bi[2] != cluster || bi[3] != 1) && errors++ == 0)
      snprintf(first, sizeof first, "block %d: rank %d, size %d, cluster %d, mapa differs %d", block, bi[0], bi[1], bi[2],
               bi[3]);
    for (int r = 0; r < 64; ++r)
      for (int c = 0; c < 64; ++c) {
        const int grow = cluster * 64 + r;
        const uint16_t want = grow < rows ? host_in[static_cast<size_t>(grow) * cols + c] : 0;
        uint16_t got;
        memcpy(&got, &host_dump[block * tile_bytes + expected_swizzled_offset(128, r, c * 2, 128)], 2);
        if (got != want && errors++ == 0)
          snprintf(first, sizeof first, "block %d elem (%d,%d): 0x%04x, want 0x%04x", block, r, c, got, want);
      }
  }
  char detail[224];
  snprintf(detail, sizeof detail, "%d clusters of 2, %ld mismatches %s", clusters, errors, first);
  ptx_report_case(report, errors == 0, "tma multicast 2d + remote mbarrier arrive + cluster ids", detail);
  CUDA_CHECK(cudaFree(in));
  CUDA_CHECK(cudaFree(dump));
  CUDA_CHECK(cudaFree(info));
}

/* ---------------------------------------------------------------------------------------- */
/* Host-side argument checks of the encoder                                                  */
/* ---------------------------------------------------------------------------------------- */

static void test_encoder_errors(ptx_report* report, const fc_tensor_map_encoder* encoder, void* device_buffer) {
  struct {
    const char* what;
    flashc_status want;
    const char* message_has;
  } cases[] = {
      {"misaligned address", FLASHC_STATUS_MISALIGNED, "global_address"},
      {"stride not 16-byte multiple", FLASHC_STATUS_MISALIGNED, "global_strides[1]"},
      {"box over 256", FLASHC_STATUS_INVALID_VALUE, "box_dims[1]"},
      {"inner box wider than swizzle", FLASHC_STATUS_INVALID_VALUE, "swizzle span"},
      {"inner box not 16 bytes", FLASHC_STATUS_INVALID_VALUE, "box_dims[0]"},
      {"rank 6", FLASHC_STATUS_INVALID_VALUE, "rank"},
      {"innermost stride not 1", FLASHC_STATUS_BAD_LAYOUT, "global_strides[0]"},
      {"dtype", FLASHC_STATUS_NOT_SUPPORTED_DTYPE, "dtype"},
  };
  for (int i = 0; i < static_cast<int>(sizeof cases / sizeof cases[0]); ++i) {
    fc_tensor_map_desc d;
    fc_tensor_map_desc_init(&d);
    d.dtype = FLASHC_DTYPE_BF16;
    d.rank = 2;
    d.global_address = device_buffer;
    d.global_dims[0] = 136;
    d.global_dims[1] = 200;
    d.global_strides[1] = 144;
    d.box_dims[0] = 64;
    d.box_dims[1] = 64;
    switch (i) {
      case 0: d.global_address = static_cast<char*>(device_buffer) + 8; break;
      case 1: d.global_strides[1] = 140; break;
      case 2: d.box_dims[1] = 300; break;
      case 3: d.box_dims[0] = 128; break;
      case 4: d.box_dims[0] = 4; d.swizzle = FC_TENSOR_MAP_SWIZZLE_NONE; break;
      case 5: d.rank = 6; break;
      case 6: d.global_strides[0] = 2; break;
      case 7: d.dtype = FLASHC_DTYPE_AUTO; break;
    }
    fc_tensor_map map;
    memset(&map, 0x5A, sizeof map);
    const flashc_status got = fc_tensor_map_encode_tiled(encoder, &d, &map);
    const char* message = flashc_last_error();
    bool untouched = true;
    for (size_t b = 0; b < sizeof map; ++b) untouched = untouched && reinterpret_cast<unsigned char*>(&map)[b] == 0x5A;
    char name[96], detail[400];
    snprintf(name, sizeof name, "tensor map rejects %s", cases[i].what);
    snprintf(detail, sizeof detail, "%s \"%s\"", flashc_status_name(got), message);
    ptx_report_case(report, got == cases[i].want && strstr(message, cases[i].message_has) != nullptr && untouched, name,
                    detail);
  }
  { /* resolving per call (NULL encoder) works too */
    fc_tensor_map_desc d;
    fc_tensor_map_desc_init(&d);
    d.rank = 2;
    d.global_address = device_buffer;
    d.global_dims[0] = 64;
    d.global_dims[1] = 64;
    d.global_strides[1] = 64;
    d.box_dims[0] = 64;
    d.box_dims[1] = 64;
    fc_tensor_map map;
    const flashc_status got = fc_tensor_map_encode_tiled(nullptr, &d, &map);
    ptx_report_case(report, got == FLASHC_STATUS_SUCCESS, "tensor map with a NULL encoder (resolved per call)",
                    flashc_status_name(got));
  }
}

int main(int argc, char** argv) {
  const int skip = ptx_test_require_sm90("gpu_ptx_tma");
  if (skip) return skip;
  ptx_rng rng = {ptx_test_seed()};
  fc_tensor_map_encoder encoder;
  FLASHC_CHECK(fc_tensor_map_encoder_init(&encoder));
  ptx_report report = {0, 0};

  /* --negative-store: TMA stores at negative coordinates, alone (a probe: if the hardware
   * rejects them the context dies, so it is kept out of the default run). */
  if (argc > 1 && strcmp(argv[1], "--negative-store") == 0) {
    test_roundtrip_2d(&report, &rng, &encoder, 1, 1, 1);
    return ptx_report_finish(&report, "gpu_ptx_tma --negative-store");
  }

  void* scratch = nullptr;
  CUDA_CHECK(cudaMalloc(&scratch, 1 << 20));
  test_encoder_errors(&report, &encoder, scratch);
  CUDA_CHECK(cudaFree(scratch));
  test_roundtrip_2d(&report, &rng, &encoder, 0, 1, 0);
  test_roundtrip_nd(&report, &rng, &encoder);
  test_reduce_add(&report, &rng, &encoder);
  test_store_partial_granules(&report, &encoder);
  test_roundtrip_2d(&report, &rng, &encoder, 1, 0, 0); /* loads at negative coordinates */
  test_multicast(&report, &rng, &encoder);             /* last: a hang there traps (clusters) */
  return ptx_report_finish(&report, "gpu_ptx_tma");
}
