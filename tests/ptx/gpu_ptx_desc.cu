/*
 * gpu_ptx_desc.cu — descriptors, swizzle addressing and the small wrappers of ptx_misc.cuh.
 *
 *   descriptor bits   golden values checked at compile time (static_assert on the constexpr
 *                     helpers), then descriptors the device builds for real shared addresses
 *                     against an independent host formula (K-major and MN-major, every swizzle,
 *                     several k-steps)
 *   ldmatrix/stmatrix x4 and x2, plain and .trans: register contents against the documented
 *                     fragment, stmatrix round trip and transposed round trip (x2: matrices
 *                     0 and 1 only)
 *   cvt packing       bf16x2, f16x2, e4m3x2/x4 against src/host/numeric.h (round to nearest
 *                     even, e4m3 saturating)
 *   elect / ids       elect_one_sync elects exactly one lane per warp; lane/warp/warpgroup ids
 *   named barriers    producer/consumer hand-off through bar.arrive / bar.sync, 8 rounds
 *   setmaxnreg        3 warpgroups, 40 / 232 registers, each role computes its part
 *   cp.async + mma    16-byte cp.async (and its zero fill) feeding mma.sync m16n8k16 bf16/f16
 *
 * Build: part of the CMake build (tests/ptx); needs a compute capability 9.0 GPU (exit 77 =
 * skipped otherwise). Run: build/tests/ptx/gpu_ptx_desc
 */
#include "ptx_test_util.cuh"

#include <vector>

/* ---- golden descriptor values (bit layout in ptx_desc.cuh), checked when this compiles ---- */
static_assert(smem_desc_encode(0x1000, 16, 1024, SMEM_SWIZZLE_128B) == 0x4000004000010100ull, "128B encode");
static_assert(smem_desc_encode(0x100, 16, 256, SMEM_SWIZZLE_32B) == 0xC000001000010010ull, "32B encode");
static_assert(smem_desc_k_major_at(0x2400, SMEM_SWIZZLE_64B, 128, 32) == 0x8000002000010242ull, "64B K-major k-step");
static_assert(smem_desc_k_major_at(0x3000, SMEM_SWIZZLE_NONE, 64, 32) == 0x0000000800400380ull, "no-swizzle K-major");
static_assert(smem_desc_mn_major_at(0x4000, SMEM_SWIZZLE_128B, 64, 16) == 0x4000004002000480ull, "128B MN-major");
static_assert(smem_desc_mn_major_at(0x4000, SMEM_SWIZZLE_NONE, 64, 8) == 0x0000004000080408ull, "no-swizzle MN-major");
static_assert(smem_desc_advance_low(0x4000004000010100ull, 32) == 0x4000004000010102ull, "advance by 32 bytes");
static_assert(smem_desc_advance_low(0x40000040FFFFFFF0ull, 512) == 0x4000004000000010ull, "no carry into the high word");
static_assert(smem_swizzle_offset(SMEM_SWIZZLE_128B, 3 * 128 + 1 * 16 + 5) == 3 * 128 + 2 * 16 + 5, "128B: chunk ^= row % 8");
static_assert(smem_swizzle_offset(SMEM_SWIZZLE_64B, 5 * 64 + 2 * 16) == 5 * 64 + 0 * 16, "64B: chunk ^= (row / 2) % 4");
static_assert(smem_swizzle_offset(SMEM_SWIZZLE_32B, 4 * 32 + 1 * 16) == 4 * 32, "32B: chunk ^= (row / 4) % 2");
static_assert(smem_k_major_element_offset(SMEM_SWIZZLE_128B, 64, 9, 40, 2) == 1216, "element (9, 40) of a 128B tile");
static_assert(wgmma_acc_row(37, 6) == 16 + 1 + 8 && wgmma_acc_col(37, 6) == 8 + 2 + 0, "accumulator fragment");

/* ---------------------------------------------------------------------------------------- */
/* Descriptors built on the device                                                           */
/* ---------------------------------------------------------------------------------------- */

struct desc_query {
  int mn_major;  /* 0: K-major, 1: MN-major */
  int swizzle;   /* span bytes or 0 */
  int lines;     /* K-major: rows; MN-major: K rows */
  int position;  /* K-major: K byte offset; MN-major: K row */
  int tile_offset; /* bytes from the 1024-aligned shared buffer */
};

__global__ void desc_kernel(const desc_query* queries, int count, uint64_t* descs, uint32_t* addresses) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* base = ptx_align_1024(smem_raw);
  for (int i = threadIdx.x; i < count; i += blockDim.x) {
    const desc_query q = queries[i];
    const void* tile = base + q.tile_offset;
    descs[i] = q.mn_major ? smem_desc_mn_major(tile, static_cast<smem_swizzle>(q.swizzle), q.lines, q.position)
                          : smem_desc_k_major(tile, static_cast<smem_swizzle>(q.swizzle), q.lines, q.position);
    addresses[i] = smem_u32(tile);
  }
}

/* The expected descriptor, from the PTX ISA's field definitions, written without the helpers. */
static uint64_t expected_desc(const desc_query& q, uint32_t tile_address) {
  const uint64_t line = q.swizzle ? q.swizzle : 16;
  uint64_t start, lbo, sbo;
  if (!q.mn_major) {
    start = tile_address + (q.position / line) * q.lines * line + q.position % line;
    lbo = q.swizzle ? 16 : q.lines * 16; /* swizzled: unused, 1 by convention */
    sbo = 8 * line;
  } else {
    start = tile_address + static_cast<uint64_t>(q.position) * line;
    lbo = q.swizzle ? q.lines * line : 128;
    sbo = q.swizzle ? 8 * line : q.lines * 16;
  }
  const uint64_t layout = q.swizzle == 128 ? 1 : q.swizzle == 64 ? 2 : q.swizzle == 32 ? 3 : 0;
  return (start >> 4) | ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (layout << 62);
}

static void test_descriptors(ptx_report* report) {
  std::vector<desc_query> queries;
  const int swizzles[] = {128, 64, 32, 0};
  for (int mn = 0; mn < 2; ++mn)
    for (int swizzle : swizzles)
      for (int step = 0; step < 4; ++step) {
        desc_query q;
        q.mn_major = mn;
        q.swizzle = swizzle;
        q.lines = mn ? 64 : 128;
        q.position = mn ? step * 16 : step * 32;
        q.tile_offset = 1024 * (1 + step);
        queries.push_back(q);
      }
  const int count = static_cast<int>(queries.size());
  desc_query* d_queries = nullptr;
  uint64_t* d_descs = nullptr;
  uint32_t* d_addresses = nullptr;
  CUDA_CHECK(cudaMalloc(&d_queries, count * sizeof(desc_query)));
  CUDA_CHECK(cudaMalloc(&d_descs, count * sizeof(uint64_t)));
  CUDA_CHECK(cudaMalloc(&d_addresses, count * sizeof(uint32_t)));
  CUDA_CHECK(cudaMemcpy(d_queries, queries.data(), count * sizeof(desc_query), cudaMemcpyHostToDevice));
  desc_kernel<<<1, 64, 8 * 1024>>>(d_queries, count, d_descs, d_addresses);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<uint64_t> descs(count);
  std::vector<uint32_t> addresses(count);
  CUDA_CHECK(cudaMemcpy(descs.data(), d_descs, count * sizeof(uint64_t), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(addresses.data(), d_addresses, count * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  long errors = 0;
  char first[200] = "";
  for (int i = 0; i < count; ++i) {
    const uint64_t want = expected_desc(queries[i], addresses[i]);
    if (descs[i] != want && errors++ == 0)
      snprintf(first, sizeof first, "%s swizzle %d position %d at 0x%x: 0x%016llx, want 0x%016llx",
               queries[i].mn_major ? "MN-major" : "K-major", queries[i].swizzle, queries[i].position, addresses[i],
               (unsigned long long)descs[i], (unsigned long long)want);
  }
  char detail[300];
  snprintf(detail, sizeof detail, "%d descriptors, %ld differ %s", count, errors, first);
  ptx_report_case(report, errors == 0, "device descriptors = host formula", detail);
  CUDA_CHECK(cudaFree(d_queries));
  CUDA_CHECK(cudaFree(d_descs));
  CUDA_CHECK(cudaFree(d_addresses));
}

/* ---------------------------------------------------------------------------------------- */
/* ldmatrix / stmatrix                                                                        */
/* ---------------------------------------------------------------------------------------- */

/* A 16×16 tile of 16-bit values (row pitch 32 bytes) viewed as four 8×8 matrices:
 * matrix i covers rows 8·(i&1).., columns 8·(i>>1)..; lane l addresses row l%8 of matrix l/8. */
static __device__ __forceinline__ int ldm_index(int lane) {
  const int i = lane / 8;
  return (8 * (i & 1) + lane % 8) * 16 + 8 * (i >> 1);
}

/* Marks what stmatrix.x2 must not write (matrices 2 and 3). */
constexpr uint16_t STMATRIX_UNTOUCHED = 0xDEAD;

__global__ void ldmatrix_kernel(const uint16_t* tile_in, uint32_t* registers_out, uint16_t* round_trip,
                                uint16_t* transposed, uint16_t* round_trip_x2) {
  __shared__ alignas(128) uint16_t tile[256], store_plain[256], store_trans[256], store_x2[256];
  const int lane = threadIdx.x;
  for (int i = lane; i < 256; i += 32) {
    tile[i] = tile_in[i];
    store_x2[i] = STMATRIX_UNTOUCHED;
  }
  __syncwarp();
  uint32_t plain[4], trans[4], plain2[2], trans2[2];
  ldmatrix_x4(plain, &tile[ldm_index(lane)]);
  ldmatrix_x4_trans(trans, &tile[ldm_index(lane)]);
  ldmatrix_x2(plain2, &tile[ldm_index(lane % 16)]);
  ldmatrix_x2_trans(trans2, &tile[ldm_index(lane % 16)]);
  stmatrix_x4(&store_plain[ldm_index(lane)], plain);
  stmatrix_x4_trans(&store_trans[ldm_index(lane)], plain);
  stmatrix_x2_shared(smem_u32(&store_x2[ldm_index(lane % 16)]), plain2);
  for (int r = 0; r < 4; ++r) {
    registers_out[lane * 12 + r] = plain[r];
    registers_out[lane * 12 + 4 + r] = trans[r];
  }
  registers_out[lane * 12 + 8] = plain2[0];
  registers_out[lane * 12 + 9] = plain2[1];
  registers_out[lane * 12 + 10] = trans2[0];
  registers_out[lane * 12 + 11] = trans2[1];
  __syncwarp();
  for (int i = lane; i < 256; i += 32) {
    round_trip[i] = store_plain[i];
    transposed[i] = store_trans[i];
    round_trip_x2[i] = store_x2[i];
  }
}

static void test_ldmatrix(ptx_report* report, ptx_rng* rng) {
  std::vector<uint16_t> tile(256);
  for (auto& v : tile) v = static_cast<uint16_t>(ptx_rng_next(rng));
  uint16_t *d_tile = nullptr, *d_round = nullptr, *d_trans = nullptr, *d_round_x2 = nullptr;
  uint32_t* d_regs = nullptr;
  CUDA_CHECK(cudaMalloc(&d_tile, 512));
  CUDA_CHECK(cudaMalloc(&d_round, 512));
  CUDA_CHECK(cudaMalloc(&d_trans, 512));
  CUDA_CHECK(cudaMalloc(&d_round_x2, 512));
  CUDA_CHECK(cudaMalloc(&d_regs, 32 * 12 * 4));
  CUDA_CHECK(cudaMemcpy(d_tile, tile.data(), 512, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(d_round, 0xFF, 512));
  CUDA_CHECK(cudaMemset(d_trans, 0xFF, 512));
  CUDA_CHECK(cudaMemset(d_regs, 0xFF, 32 * 12 * 4));
  ldmatrix_kernel<<<1, 32>>>(d_tile, d_regs, d_round, d_trans, d_round_x2);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<uint16_t> round(256), trans(256), round_x2(256);
  std::vector<uint32_t> regs(32 * 12);
  CUDA_CHECK(cudaMemcpy(round.data(), d_round, 512, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(trans.data(), d_trans, 512, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(round_x2.data(), d_round_x2, 512, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(regs.data(), d_regs, 32 * 12 * 4, cudaMemcpyDeviceToHost));

  auto at = [&](int matrix, int row, int col) { return tile[(8 * (matrix & 1) + row) * 16 + 8 * (matrix >> 1) + col]; };
  auto pair = [](uint16_t low, uint16_t high) { return static_cast<uint32_t>(low) | (static_cast<uint32_t>(high) << 16); };
  long load_errors = 0, store_errors = 0;
  char first[160] = "";
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, q = lane % 4;
    for (int i = 0; i < 4; ++i) {
      const uint32_t want_plain = pair(at(i, g, 2 * q), at(i, g, 2 * q + 1));
      const uint32_t want_trans = pair(at(i, 2 * q, g), at(i, 2 * q + 1, g));
      const uint32_t got_plain = regs[lane * 12 + i], got_trans = regs[lane * 12 + 4 + i];
      if (got_plain != want_plain && load_errors++ == 0)
        snprintf(first, sizeof first, "ldmatrix x4 lane %d reg %d: 0x%08x, want 0x%08x", lane, i, got_plain, want_plain);
      if (got_trans != want_trans && load_errors++ == 0)
        snprintf(first, sizeof first, "ldmatrix x4.trans lane %d reg %d: 0x%08x, want 0x%08x", lane, i, got_trans,
                 want_trans);
      if (i < 2) {
        if (regs[lane * 12 + 8 + i] != want_plain && load_errors++ == 0)
          snprintf(first, sizeof first, "ldmatrix x2 lane %d reg %d", lane, i);
        if (regs[lane * 12 + 10 + i] != want_trans && load_errors++ == 0)
          snprintf(first, sizeof first, "ldmatrix x2.trans lane %d reg %d", lane, i);
      }
    }
  }
  for (int m = 0; m < 4; ++m)
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c) {
        const int index = (8 * (m & 1) + r) * 16 + 8 * (m >> 1) + c;
        if (round[index] != at(m, r, c) && store_errors++ == 0)
          snprintf(first, sizeof first, "stmatrix matrix %d (%d,%d)", m, r, c);
        if (trans[index] != at(m, c, r) && store_errors++ == 0)
          snprintf(first, sizeof first, "stmatrix.trans matrix %d (%d,%d)", m, r, c);
        /* x2 stores ldmatrix.x2's two matrices (0 and 1) back, and nothing else */
        if (round_x2[index] != (m < 2 ? at(m, r, c) : STMATRIX_UNTOUCHED) && store_errors++ == 0)
          snprintf(first, sizeof first, "stmatrix x2 matrix %d (%d,%d)", m, r, c);
      }
  char detail[240];
  snprintf(detail, sizeof detail, "%ld register mismatches, %ld stored mismatches %s", load_errors, store_errors, first);
  ptx_report_case(report, load_errors == 0 && store_errors == 0, "ldmatrix x4/x2 (+trans), stmatrix x4 (+trans) and x2",
                  detail);
  CUDA_CHECK(cudaFree(d_tile));
  CUDA_CHECK(cudaFree(d_round));
  CUDA_CHECK(cudaFree(d_trans));
  CUDA_CHECK(cudaFree(d_round_x2));
  CUDA_CHECK(cudaFree(d_regs));
}

/* ---------------------------------------------------------------------------------------- */
/* Float packing                                                                              */
/* ---------------------------------------------------------------------------------------- */

__global__ void pack_kernel(const float* values, int pairs, uint32_t* bf16x2, uint32_t* f16x2, uint16_t* e4m3x2,
                            uint32_t* e4m3x4) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= pairs) return;
  const float low = values[2 * i], high = values[2 * i + 1];
  bf16x2[i] = pack_bf16x2(low, high);
  f16x2[i] = pack_f16x2(low, high);
  e4m3x2[i] = pack_e4m3x2(low, high);
  if (i % 2 == 0 && i + 1 < pairs) e4m3x4[i / 2] = pack_e4m3x4(low, high, values[2 * i + 2], values[2 * i + 3]);
}

static void test_packing(ptx_report* report, ptx_rng* rng) {
  const int pairs = 1 << 14;
  std::vector<float> values(2 * pairs);
  for (auto& v : values) {
    const double magnitude = ldexp(1.0 + ptx_rng_uniform(rng, 0.0, 1.0), static_cast<int>(ptx_rng_uniform(rng, -22, 10)));
    v = static_cast<float>(ptx_rng_next(rng) & 1 ? -magnitude : magnitude);
  }
  float* d_values = nullptr;
  uint32_t *d_bf16 = nullptr, *d_f16 = nullptr, *d_e4m3x4 = nullptr;
  uint16_t* d_e4m3 = nullptr;
  CUDA_CHECK(cudaMalloc(&d_values, values.size() * 4));
  CUDA_CHECK(cudaMalloc(&d_bf16, pairs * 4));
  CUDA_CHECK(cudaMalloc(&d_f16, pairs * 4));
  CUDA_CHECK(cudaMalloc(&d_e4m3, pairs * 2));
  CUDA_CHECK(cudaMalloc(&d_e4m3x4, pairs * 2));
  CUDA_CHECK(cudaMemcpy(d_values, values.data(), values.size() * 4, cudaMemcpyHostToDevice));
  pack_kernel<<<(pairs + 255) / 256, 256>>>(d_values, pairs, d_bf16, d_f16, d_e4m3, d_e4m3x4);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<uint32_t> bf16(pairs), f16(pairs), e4m3x4(pairs / 2);
  std::vector<uint16_t> e4m3(pairs);
  CUDA_CHECK(cudaMemcpy(bf16.data(), d_bf16, pairs * 4, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(f16.data(), d_f16, pairs * 4, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(e4m3.data(), d_e4m3, pairs * 2, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(e4m3x4.data(), d_e4m3x4, pairs * 2, cudaMemcpyDeviceToHost));
  long errors[3] = {0, 0, 0};
  char first[160] = "";
  for (int i = 0; i < pairs; ++i) {
    const float low = values[2 * i], high = values[2 * i + 1];
    const uint32_t want_bf16 = fc_f32_to_bf16(low) | (static_cast<uint32_t>(fc_f32_to_bf16(high)) << 16);
    const uint32_t want_f16 = fc_f32_to_fp16(low) | (static_cast<uint32_t>(fc_f32_to_fp16(high)) << 16);
    const uint16_t want_e4m3 = static_cast<uint16_t>(fc_f32_to_e4m3(low) | (fc_f32_to_e4m3(high) << 8));
    if (bf16[i] != want_bf16 && errors[0]++ == 0)
      snprintf(first, sizeof first, "bf16x2 (%.9g, %.9g): 0x%08x, want 0x%08x", low, high, bf16[i], want_bf16);
    if (f16[i] != want_f16 && errors[1]++ == 0)
      snprintf(first, sizeof first, "f16x2 (%.9g, %.9g): 0x%08x, want 0x%08x", low, high, f16[i], want_f16);
    if (e4m3[i] != want_e4m3 && errors[2]++ == 0)
      snprintf(first, sizeof first, "e4m3x2 (%.9g, %.9g): 0x%04x, want 0x%04x", low, high, e4m3[i], want_e4m3);
    if (i % 2 == 0 && i + 1 < pairs) {
      const uint32_t want4 = want_e4m3 | (static_cast<uint32_t>(fc_f32_to_e4m3(values[2 * i + 2])) << 16) |
                             (static_cast<uint32_t>(fc_f32_to_e4m3(values[2 * i + 3])) << 24);
      if (e4m3x4[i / 2] != want4 && errors[2]++ == 0) snprintf(first, sizeof first, "e4m3x4 group %d", i / 2);
    }
  }
  char detail[300];
  snprintf(detail, sizeof detail, "%d pairs over 2^-22..2^11 (e4m3 saturates): %ld bf16, %ld f16, %ld e4m3 mismatches %s",
           pairs, errors[0], errors[1], errors[2], first);
  ptx_report_case(report, errors[0] + errors[1] + errors[2] == 0, "cvt pack bf16x2 / f16x2 / e4m3x2 / e4m3x4", detail);
  CUDA_CHECK(cudaFree(d_values));
  CUDA_CHECK(cudaFree(d_bf16));
  CUDA_CHECK(cudaFree(d_f16));
  CUDA_CHECK(cudaFree(d_e4m3));
  CUDA_CHECK(cudaFree(d_e4m3x4));
}

/* ---------------------------------------------------------------------------------------- */
/* elect, ids, named barriers, setmaxnreg                                                     */
/* ---------------------------------------------------------------------------------------- */

__global__ void elect_kernel(int* elected_per_warp, int* id_errors) {
  const int warp = warp_index_uniform();
  if (elect_one_sync()) atomicAdd(&elected_per_warp[warp], 1);
  if (static_cast<int>(lane_id()) != static_cast<int>(threadIdx.x % 32) || warp != static_cast<int>(threadIdx.x / 32) ||
      warpgroup_index_uniform() != static_cast<int>(threadIdx.x / 128))
    atomicAdd(id_errors, 1);
}

/* Barrier ids, named by what they protect. */
enum { BARRIER_SLOT_FULL = 1, BARRIER_SLOT_FREE = 2 };

__global__ void named_barrier_kernel(int* out, int rounds) {
  __shared__ int slot[64];
  const int t = threadIdx.x;
  for (int round = 0; round < rounds; ++round) {
    if (t < 64) { /* producer warps 0-1 */
      if (round > 0) named_barrier_sync(BARRIER_SLOT_FREE, 128);
      slot[t] = round * 1000 + t;
      named_barrier_arrive(BARRIER_SLOT_FULL, 128);
    } else { /* consumer warps 2-3 */
      named_barrier_sync(BARRIER_SLOT_FULL, 128);
      out[round * 64 + (t - 64)] = slot[63 - (t - 64)];
      if (round + 1 < rounds) named_barrier_arrive(BARRIER_SLOT_FREE, 128);
    }
  }
}

__global__ void __launch_bounds__(384, 1) setmaxnreg_kernel(int* out) {
  if (warpgroup_index_uniform() == 0) {
    setmaxnreg_dec<40>();
    out[threadIdx.x] = static_cast<int>(threadIdx.x) + 7;
  } else {
    setmaxnreg_inc<232>();
    out[threadIdx.x] = static_cast<int>(threadIdx.x) * 3;
  }
}

static void test_sync_helpers(ptx_report* report) {
  int *d_elected = nullptr, *d_errors = nullptr, *d_out = nullptr;
  const int warps = 8, rounds = 8;
  CUDA_CHECK(cudaMalloc(&d_elected, warps * sizeof(int)));
  CUDA_CHECK(cudaMalloc(&d_errors, sizeof(int)));
  CUDA_CHECK(cudaMalloc(&d_out, 64 * rounds * sizeof(int)));
  CUDA_CHECK(cudaMemset(d_elected, 0, warps * sizeof(int)));
  CUDA_CHECK(cudaMemset(d_errors, 0, sizeof(int)));
  elect_kernel<<<1, warps * 32>>>(d_elected, d_errors);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  int elected[warps], id_errors = 0;
  CUDA_CHECK(cudaMemcpy(elected, d_elected, sizeof elected, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(&id_errors, d_errors, sizeof(int), cudaMemcpyDeviceToHost));
  bool ok = id_errors == 0;
  for (int w = 0; w < warps; ++w) ok = ok && elected[w] == 1;
  char detail[160];
  snprintf(detail, sizeof detail, "elected per warp %d %d %d %d %d %d %d %d, id errors %d", elected[0], elected[1],
           elected[2], elected[3], elected[4], elected[5], elected[6], elected[7], id_errors);
  ptx_report_case(report, ok, "elect_one_sync, lane/warp/warpgroup ids", detail);

  CUDA_CHECK(cudaMemset(d_out, 0xFF, 64 * rounds * sizeof(int)));
  named_barrier_kernel<<<1, 128>>>(d_out, rounds);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<int> out(64 * rounds);
  CUDA_CHECK(cudaMemcpy(out.data(), d_out, out.size() * sizeof(int), cudaMemcpyDeviceToHost));
  long errors = 0;
  for (int round = 0; round < rounds; ++round)
    for (int i = 0; i < 64; ++i) errors += out[round * 64 + i] != round * 1000 + (63 - i);
  snprintf(detail, sizeof detail, "%d rounds, %ld wrong hand-offs", rounds, errors);
  ptx_report_case(report, errors == 0, "named barriers bar.arrive / bar.sync producer-consumer", detail);

  int* d_regs = nullptr;
  CUDA_CHECK(cudaMalloc(&d_regs, 384 * sizeof(int)));
  CUDA_CHECK(cudaMemset(d_regs, 0xFF, 384 * sizeof(int)));
  setmaxnreg_kernel<<<1, 384>>>(d_regs);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<int> regs_out(384);
  CUDA_CHECK(cudaMemcpy(regs_out.data(), d_regs, 384 * sizeof(int), cudaMemcpyDeviceToHost));
  errors = 0;
  for (int t = 0; t < 384; ++t) errors += regs_out[t] != (t < 128 ? t + 7 : t * 3);
  snprintf(detail, sizeof detail, "%ld wrong outputs", errors);
  ptx_report_case(report, errors == 0, "setmaxnreg dec 40 / inc 232 across 3 warpgroups", detail);
  CUDA_CHECK(cudaFree(d_elected));
  CUDA_CHECK(cudaFree(d_errors));
  CUDA_CHECK(cudaFree(d_out));
  CUDA_CHECK(cudaFree(d_regs));
}

/* ---------------------------------------------------------------------------------------- */
/* cp.async + mma.sync m16n8k16                                                               */
/* ---------------------------------------------------------------------------------------- */

/* A: 16×16 row-major; B given as Bᵀ (8×16 row-major, i.e. "col" B); D: 16×8. The last 16 bytes
 * of the shared buffer are copied with valid = false and must read as zeros. */
template <bool Bf16>
__global__ void mma_sync_kernel(const uint16_t* a, const uint16_t* b_t, float* d, uint32_t* zero_fill) {
  __shared__ alignas(128) uint16_t sa[256], sb[128], sz[8];
  const int lane = threadIdx.x;
  for (int i = lane; i < 8; i += 32) sz[i] = 0xABCD;
  __syncwarp();
  cp_async_16(&sa[lane * 8], a + lane * 8, true);
  if (lane < 16) cp_async_16(&sb[lane * 8], b_t + lane * 8, true);
  if (lane == 0) cp_async_16(sz, a, false);
  cp_async_commit_group();
  cp_async_wait_group<0>();
  __syncwarp();
  const int g = lane / 4, q = lane % 4;
  auto pair = [](const uint16_t* p) { return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 16); };
  const uint32_t fa[4] = {pair(&sa[g * 16 + 2 * q]), pair(&sa[(g + 8) * 16 + 2 * q]), pair(&sa[g * 16 + 8 + 2 * q]),
                          pair(&sa[(g + 8) * 16 + 8 + 2 * q])};
  const uint32_t fb[2] = {pair(&sb[g * 16 + 2 * q]), pair(&sb[g * 16 + 8 + 2 * q])};
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  if constexpr (Bf16)
    mma_m16n8k16_bf16(acc, fa, fb);
  else
    mma_m16n8k16_f16(acc, fa, fb);
  d[g * 8 + 2 * q] = acc[0];
  d[g * 8 + 2 * q + 1] = acc[1];
  d[(g + 8) * 8 + 2 * q] = acc[2];
  d[(g + 8) * 8 + 2 * q + 1] = acc[3];
  if (lane < 4) zero_fill[lane] = reinterpret_cast<const uint32_t*>(sz)[lane];
}

static void test_mma_sync(ptx_report* report, ptx_rng* rng) {
  for (int use_bf16 = 0; use_bf16 < 2; ++use_bf16) {
    const flashc_dtype dtype = use_bf16 ? FLASHC_DTYPE_BF16 : FLASHC_DTYPE_FP16;
    std::vector<uint16_t> a(256), b_t(128);
    for (auto& v : a) v = ptx_random_16bit(rng, dtype, 2.0);
    for (auto& v : b_t) v = ptx_random_16bit(rng, dtype, 2.0);
    uint16_t *d_a = nullptr, *d_b = nullptr;
    float* d_d = nullptr;
    uint32_t* d_zero = nullptr;
    CUDA_CHECK(cudaMalloc(&d_a, 512));
    CUDA_CHECK(cudaMalloc(&d_b, 256));
    CUDA_CHECK(cudaMalloc(&d_d, 128 * 4));
    CUDA_CHECK(cudaMalloc(&d_zero, 16));
    CUDA_CHECK(cudaMemcpy(d_a, a.data(), 512, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_b, b_t.data(), 256, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(d_d, 0xFF, 128 * 4));
    CUDA_CHECK(cudaMemset(d_zero, 0xFF, 16));
    if (use_bf16)
      mma_sync_kernel<true><<<1, 32>>>(d_a, d_b, d_d, d_zero);
    else
      mma_sync_kernel<false><<<1, 32>>>(d_a, d_b, d_d, d_zero);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> d(128);
    uint32_t zero[4];
    CUDA_CHECK(cudaMemcpy(d.data(), d_d, 128 * 4, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(zero, d_zero, 16, cudaMemcpyDeviceToHost));
    long bad = 0;
    char first[128] = "";
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 8; ++j) {
        double ref = 0.0, magnitude = 0.0;
        for (int k = 0; k < 16; ++k) {
          const double p = static_cast<double>(ptx_16bit_to_f32(a[i * 16 + k], dtype)) * ptx_16bit_to_f32(b_t[j * 16 + k], dtype);
          ref += p;
          magnitude += fabs(p);
        }
        const double error = fabs(d[i * 8 + j] - ref);
        if (!(error <= 1e-5 * magnitude + 1e-6) && bad++ == 0)
          snprintf(first, sizeof first, "D(%d,%d) = %g, reference %g", i, j, d[i * 8 + j], ref);
      }
    const bool zero_ok = zero[0] == 0 && zero[1] == 0 && zero[2] == 0 && zero[3] == 0;
    char detail[224];
    snprintf(detail, sizeof detail, "%ld of 128 off, zero fill %s %s", bad, zero_ok ? "ok" : "BROKEN", first);
    ptx_report_case(report, bad == 0 && zero_ok,
                    use_bf16 ? "cp.async 16B (+zero fill) + mma.sync m16n8k16 bf16"
                             : "cp.async 16B (+zero fill) + mma.sync m16n8k16 f16",
                    detail);
    CUDA_CHECK(cudaFree(d_a));
    CUDA_CHECK(cudaFree(d_b));
    CUDA_CHECK(cudaFree(d_d));
    CUDA_CHECK(cudaFree(d_zero));
  }
}

int main() {
  const int skip = ptx_test_require_sm90("gpu_ptx_desc");
  if (skip) return skip;
  ptx_rng rng = {ptx_test_seed()};
  ptx_report report = {0, 0};
  test_descriptors(&report);
  test_ldmatrix(&report, &rng);
  test_packing(&report, &rng);
  test_sync_helpers(&report);
  test_mma_sync(&report, &rng);
  return ptx_report_finish(&report, "gpu_ptx_desc");
}
