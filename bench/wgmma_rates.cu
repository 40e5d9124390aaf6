/*
 * wgmma_rates.cu — how fast the tensor core runs attention's S = Q·Kᵀ shape (m64 nN k16, bf16,
 * K = 128 per batch, two warpgroups taking turns as the attention consumers do) with the A
 * operand read from shared memory (SS, as attention's S is issued today) against A from
 * registers (RS), and how much a stream of TMA writes into the same shared memory slows each.
 * The question it answers: is the SS form of S limited by shared-memory bandwidth? An SS
 * m64n128k16 reads 2 KB of A and 4 KB of B in its 64 tensor cycles, 96 of the SM's 128 bytes per
 * clock, and the K/V loads write ~28 more; RS reads only B.
 *
 *   ./build/bench/wgmma_rates   (built with the benchmarks; or nvcc -O3 -arch=sm_90a -I src ...)
 *
 * Method: one CTA per SM, three warpgroups: two issue batches of 8 wgmmas (K = 128) into their
 * own accumulators, wait for them and issue again, for ROUNDS batches; the third (one thread)
 * streams 16 KB bulk copies from an L2-resident buffer into a separate shared-memory area,
 * either not at all, one per TRAFFIC_PERIOD cycles (~28 B/clk, attention's K/V rate at d128)
 * or back to back. Per SM: tensor FLOP per clock over the consumers' clock64() span, and the
 * clock in MHz from %globaltimer. The median SM is printed. Operands are random bf16; the
 * results are not checked (the layout is the attention kernel's; gpu_ptx_wgmma tests the forms).
 * Not a test: nothing is asserted.
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "bench_kernel_util.cuh"
#include "kernels/common/ptx.cuh"

namespace {

constexpr int CONSUMERS = 2;
constexpr int THREADS = 128 * (CONSUMERS + 1);
constexpr int K_STEPS = 8; /* K = 128: d of attention's d128 */
constexpr int ROUNDS = 3000;
constexpr uint32_t A_BYTES = 64 * 128 * 2; /* one consumer's 64 rows of Q */
constexpr uint32_t MAX_N = 256;
constexpr uint32_t B_BYTES = MAX_N * 128 * 2;
constexpr uint32_t TRAFFIC_BYTES = 16384;
constexpr uint32_t TRAFFIC_BUFFERS = 2;
constexpr uint32_t SMEM_BYTES = 1024 + CONSUMERS * A_BYTES + B_BYTES + TRAFFIC_BUFFERS * TRAFFIC_BYTES + 64;
constexpr long long TRAFFIC_PERIOD = 585; /* cycles per 16 KB: ~28 B/clk */
enum traffic_mode { TRAFFIC_NONE = 0, TRAFFIC_PACED = 1, TRAFFIC_MAX = 2 };

template <bool Rs, int N>
__global__ void __launch_bounds__(THREADS, 1)
    wgmma_rate_kernel(const uint8_t* traffic_src, int traffic, long long* cycles, long long* nanoseconds,
                      float* check) {
  extern __shared__ uint8_t raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~static_cast<uintptr_t>(1023));
  uint8_t* a_tiles = smem;
  uint8_t* b_tile = a_tiles + CONSUMERS * A_BYTES;
  uint8_t* traffic_area = b_tile + B_BYTES;
  uint64_t* bar = reinterpret_cast<uint64_t*>(traffic_area + TRAFFIC_BUFFERS * TRAFFIC_BYTES);
  volatile int* stop = reinterpret_cast<volatile int*>(bar + 1);
  for (uint32_t i = threadIdx.x; i < (CONSUMERS * A_BYTES + B_BYTES) / 4; i += THREADS)
    reinterpret_cast<uint32_t*>(smem)[i] = bench_random_bf16x2(i * 2654435761u + blockIdx.x);
  if (threadIdx.x == 0) {
    mbarrier_init(bar, 1);
    *stop = 0;
    fence_mbarrier_init();
  }
  fence_proxy_async_shared_cta();
  __syncthreads();
  const int warpgroup = warpgroup_index_uniform();
  if (warpgroup == CONSUMERS) {
    setmaxnreg_dec<24>(); /* as attention's producer: the consumers take 240 (RS n256 needs them) */
    if (traffic == TRAFFIC_NONE || threadIdx.x != CONSUMERS * 128) return;
    uint32_t phase = 0;
    long long next = clock64();
    for (uint32_t i = 0; !*stop; ++i) {
      if (traffic == TRAFFIC_PACED) {
        while (clock64() < next) {
        }
        next += TRAFFIC_PERIOD;
      }
      mbarrier_arrive_expect_tx(bar, TRAFFIC_BYTES);
      bulk_load(traffic_area + (i % TRAFFIC_BUFFERS) * TRAFFIC_BYTES, traffic_src + (i % 8) * TRAFFIC_BYTES,
                TRAFFIC_BYTES, bar);
      mbarrier_wait_parity(bar, phase);
      phase ^= 1u;
    }
    return;
  }
  setmaxnreg_inc<240>();
  const int thread = threadIdx.x % 128;
  float acc[N / 2];
  uint32_t a[K_STEPS][4];
#pragma unroll
  for (int step = 0; step < K_STEPS; ++step)
#pragma unroll
    for (int i = 0; i < 4; ++i) a[step][i] = bench_random_bf16x2((thread * K_STEPS + step) * 4 + i + 7919u * blockIdx.x);
  const uint64_t desc_a0 = smem_desc_k_major(a_tiles + warpgroup * A_BYTES, SMEM_SWIZZLE_128B, 64);
  const uint64_t desc_b0 = smem_desc_k_major(b_tile, SMEM_SWIZZLE_128B, N);
  named_barrier_sync(1, CONSUMERS * 128);
  const long long t0 = clock64();
  const uint64_t g0 = globaltimer_ns();
  /* Every batch accumulates into the last (only the first starts from zero): with a zeroing
   * first k-step per batch, ptxas proves the earlier batches of an unrolled group dead and
   * drops their wgmmas (a first version of this program measured 3-6x the peak that way). */
  for (int round = 0; round < ROUNDS; ++round) {
    wgmma_fence();
#pragma unroll
    for (int step = 0; step < K_STEPS; ++step) {
      /* each 64-column block of the 128B-swizzled K-major tiles holds 4 k-steps */
      const uint64_t desc_b = smem_desc_advance_low(desc_b0, smem_k_major_offset(SMEM_SWIZZLE_128B, N, step * 32u));
      if constexpr (Rs) {
        wgmma_rs_bf16<0>(acc, a[step], desc_b, round > 0 || step > 0 ? 1u : 0u);
      } else {
        const uint64_t desc_a = smem_desc_advance_low(desc_a0, smem_k_major_offset(SMEM_SWIZZLE_128B, 64, step * 32u));
        wgmma_ss_bf16<0, 0>(acc, desc_a, desc_b, round > 0 || step > 0 ? 1u : 0u);
      }
    }
    wgmma_commit_group();
    wgmma_wait_group<0>();
    wgmma_fence_operand(acc);
  }
  const long long t1 = clock64();
  const uint64_t g1 = globaltimer_ns();
  named_barrier_sync(1, CONSUMERS * 128);
  if (thread == 0 && warpgroup == 0) {
    *stop = 1;
    cycles[blockIdx.x] = t1 - t0;
    nanoseconds[blockIdx.x] = static_cast<long long>(g1 - g0);
  }
  if (blockIdx.x == 0 && warpgroup == 0)
#pragma unroll
    for (int i = 0; i < N / 2; ++i) check[thread * (N / 2) + i] = acc[i];
  float sum = 0.0f; /* keep the accumulators live */
#pragma unroll
  for (int i = 0; i < N / 2; ++i) sum += acc[i];
  if (sum == 12345.678f) cycles[blockIdx.x] = 0;
}

float host_bf16(float x) { /* round to nearest even, as cvt.rn.bf16 */
  uint32_t u;
  memcpy(&u, &x, 4);
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  float y;
  memcpy(&y, &u, 4);
  return y;
}

/* Element (row, k) of a 128B-swizzled K-major bf16 tile of `rows` rows at byte `base` of the
 * filled shared memory (block 0's fill: bench_random_bf16x2 of the word index). */
float host_element(uint32_t base, uint32_t rows, uint32_t row, uint32_t k) {
  const uint32_t within = (k % 64) * 2;
  const uint32_t byte = base + (k / 64) * rows * 128 + row * 128 + (((within / 16) ^ (row % 8)) * 16) + within % 16;
  const uint32_t h = bench_hash32((byte / 4) * 2654435761u);
  const float value = bench_unit((byte % 4) == 0 ? h : h >> 16);
  return host_bf16(value);
}

template <bool Rs, int N>
void run(const uint8_t* src, int traffic, int sms, long long* d_cycles, long long* d_ns) {
  float* d_check = nullptr;
  cudaMalloc(&d_check, sizeof(float) * 128 * (N / 2));
  auto kernel = wgmma_rate_kernel<Rs, N>;
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(SMEM_BYTES));
  std::vector<double> rates, mhz;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  float ms = 0.0f;
  for (int rep = 0; rep < 3; ++rep) {
    cudaEventRecord(start);
    kernel<<<sms, THREADS, SMEM_BYTES>>>(src, traffic, d_cycles, d_ns, d_check);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    cudaEventElapsedTime(&ms, start, stop);
    if (cudaDeviceSynchronize() != cudaSuccess) {
      printf("launch failed: %s\n", cudaGetErrorString(cudaGetLastError()));
      return;
    }
    std::vector<long long> c(sms), ns(sms);
    cudaMemcpy(c.data(), d_cycles, sizeof(long long) * sms, cudaMemcpyDeviceToHost);
    cudaMemcpy(ns.data(), d_ns, sizeof(long long) * sms, cudaMemcpyDeviceToHost);
    std::vector<double> r(sms), m(sms);
    const double flop = 2.0 * 64 * N * 16 * K_STEPS * ROUNDS * CONSUMERS;
    for (int i = 0; i < sms; ++i) r[i] = flop / static_cast<double>(c[i]), m[i] = 1e3 * c[i] / static_cast<double>(ns[i]);
    std::sort(r.begin(), r.end());
    std::sort(m.begin(), m.end());
    rates.push_back(r[sms / 2]);
    mhz.push_back(m[sms / 2]);
  }
  double max_error = 0.0;
  if (!Rs) { /* the SS product of warpgroup 0 in block 0 against the host */
    std::vector<float> got(128 * (N / 2));
    cudaMemcpy(got.data(), d_check, sizeof(float) * got.size(), cudaMemcpyDeviceToHost);
    for (int t = 0; t < 128; ++t)
      for (int i = 0; i < N / 2; ++i) {
        const int w = t / 32, g = (t % 32) / 4, q = t % 4, j = i / 4;
        const int row = 16 * w + g + ((i % 4) >= 2 ? 8 : 0), col = 8 * j + 2 * q + (i % 2);
        double want = 0.0;
        for (int k = 0; k < 128; ++k)
          want += static_cast<double>(host_element(0, 64, row, k)) * host_element(CONSUMERS * A_BYTES, N, col, k);
        max_error = std::max(max_error, std::fabs(want * ROUNDS - got[t * (N / 2) + i]) / ROUNDS);
      }
  }
  cudaFree(d_check);
  std::sort(rates.begin(), rates.end());
  std::sort(mhz.begin(), mhz.end());
  static const char* const traffic_names[] = {"none", "28 B/clk", "max"};
  const double wall_tflops = 2.0 * 64 * N * 16 * K_STEPS * ROUNDS * CONSUMERS * sms / (ms * 1e-3) / 1e12;
  printf("%s n%-3d traffic %-9s %7.1f FLOP/clk/SM (%5.1f %% of 4096)  %6.0f MHz  %4.1f B/clk of smem reads; "
         "last launch %.3f ms = %.0f TFLOP/s; SS check max |error| %.2g\n",
         Rs ? "RS" : "SS", N, traffic_names[traffic], rates[2], 100.0 * rates[2] / 4096.0, mhz[1],
         rates[2] / (2.0 * 64 * N * 16) * ((Rs ? 0 : 2048) + 32.0 * N), ms, wall_tflops, max_error);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

}  // namespace

int main() {
  const int sms = bench_print_device("wgmma_rates");
  if (sms == 0) return 77;
  printf("2 warpgroups x batches of 8 wgmma m64nNk16 bf16, %d batches each\n", ROUNDS);
  uint8_t* src = nullptr;
  long long *d_cycles = nullptr, *d_ns = nullptr;
  cudaMalloc(&src, 8 * TRAFFIC_BYTES);
  cudaMemset(src, 0x3c, 8 * TRAFFIC_BYTES);
  cudaMalloc(&d_cycles, sizeof(long long) * sms);
  cudaMalloc(&d_ns, sizeof(long long) * sms);
  for (int traffic = TRAFFIC_NONE; traffic <= TRAFFIC_MAX; ++traffic) {
    run<false, 128>(src, traffic, sms, d_cycles, d_ns);
    run<true, 128>(src, traffic, sms, d_cycles, d_ns);
    run<false, 160>(src, traffic, sms, d_cycles, d_ns);
    run<true, 160>(src, traffic, sms, d_cycles, d_ns);
    run<false, 256>(src, traffic, sms, d_cycles, d_ns);
    run<true, 256>(src, traffic, sms, d_cycles, d_ns);
  }
  cudaFree(src);
  cudaFree(d_cycles);
  cudaFree(d_ns);
  return 0;
}
