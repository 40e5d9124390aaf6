/*
 * mma_rates.cu — the ceiling of the portable GEMM's instruction: mma.sync.m16n8k16 (HMMA.16816,
 * fp32 accumulation, bf16 or fp16 inputs) per clock per SM on the GPU at hand, by the number of
 * warps per SM, and the clock the SMs hold while every SM issues it back to back for a while
 * (the H200 runs dense tensor work at its power limit, so the clock is part of the ceiling).
 *
 *   ./build/bench/mma_rates   (built with the benchmarks; or nvcc -O3 -arch=sm_90a bench/mma_rates.cu)
 *
 * Method: one block per SM; each thread keeps CHAINS independent accumulators (4 fp32 each)
 * fed from registers (A and B fragments that never change, no shared memory), and issues
 * CHAINS mma.sync per round for ROUNDS rounds. Per block: clock64() span → HMMA per clock per
 * SM; %globaltimer span → the SM clock in MHz (cycles / ns). The median SM is printed, of the
 * best of 3 (short runs) or of one long run (about 0.3 s per SM, "sustained": that is the
 * power-limited regime a large GEMM lives in). Operands are random bits of the dtype's range
 * (toggling inputs cost energy) or zeros. Not a test: nothing is asserted.
 *
 * How to read it against the portable GEMM: TFLOP/s = HMMA/clk/SM × 4096 MAC × 2 × SMs × MHz.
 */
#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <vector>
#include <cuda_runtime.h>

#include "bench_kernel_util.cuh"

constexpr int CHAINS = 8; /* independent accumulators per thread (the GEMM warp has 32) */
constexpr int FLOPS_PER_HMMA = 16 * 8 * 16 * 2;

template <bool IsBf16>
static __device__ __forceinline__ void hmma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  if constexpr (IsBf16)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* One 16-bit value of magnitude in [0.5, 2) with a random sign and mantissa (bits from a hash),
 * packed in pairs; or zero. Small magnitudes keep the fp32 sums finite over any round count. */
template <bool IsBf16>
static __device__ __forceinline__ uint32_t operand_pair(uint32_t seed, bool random) {
  if (!random) return 0u;
  uint32_t h = seed * 0x9E3779B9u;
  h ^= h >> 15;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  /* bf16: exponent 126/127 (0x3F00/0x3F80) + 7 mantissa bits; fp16: exponent 14/15 + 10 bits. */
  const uint32_t lo = IsBf16 ? (0x3F00u | ((h >> 0) & 0x80FFu)) : (0x3800u | ((h >> 0) & 0x87FFu));
  const uint32_t hi = IsBf16 ? (0x3F00u | ((h >> 16) & 0x80FFu)) : (0x3800u | ((h >> 16) & 0x87FFu));
  return lo | (hi << 16);
}

template <bool IsBf16>
__global__ void hmma_rate_kernel(int rounds, int random, float* sink, long long* cycles, long long* nanoseconds) {
  uint32_t a[4], b[2];
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = operand_pair<IsBf16>(threadIdx.x * 8 + i, random);
#pragma unroll
  for (int i = 0; i < 2; ++i) b[i] = operand_pair<IsBf16>(threadIdx.x * 8 + 4 + i, random);
  float acc[CHAINS][4];
#pragma unroll
  for (int c = 0; c < CHAINS; ++c)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[c][e] = 0.0f;
  __syncthreads();
  const long long start = clock64();
  const uint64_t start_ns = globaltimer_ns();
  for (int r = 0; r < rounds; ++r) {
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) hmma<IsBf16>(acc[c], a, b);
  }
  __syncthreads();
  const long long stop = clock64();
  const uint64_t stop_ns = globaltimer_ns();
  float s = 0.0f;
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) s += acc[c][0] + acc[c][1] + acc[c][2] + acc[c][3];
  sink[blockIdx.x * blockDim.x + threadIdx.x] = s;
  if (threadIdx.x == 0) {
    cycles[blockIdx.x] = stop - start;
    nanoseconds[blockIdx.x] = static_cast<long long>(stop_ns - start_ns);
  }
}

struct rate {
  double hmma_per_clock_sm;
  double mhz;
};

/* The median SM's rate (of the best of `reps` launches) and its clock. */
static rate measure(void (*kernel)(int, int, float*, long long*, long long*), int sms, int warps, int rounds,
                    bool random, int reps, float* sink, long long* cycles, long long* ns) {
  std::vector<long long> c(sms), t(sms);
  rate best{0.0, 0.0};
  for (int rep = 0; rep < reps; ++rep) {
    kernel<<<sms, warps * 32>>>(rounds, random ? 1 : 0, sink, cycles, ns);
    cudaDeviceSynchronize();
    cudaMemcpy(c.data(), cycles, sms * sizeof(long long), cudaMemcpyDeviceToHost);
    cudaMemcpy(t.data(), ns, sms * sizeof(long long), cudaMemcpyDeviceToHost);
    std::vector<long long> cs = c;
    std::sort(cs.begin(), cs.end());
    const double median_cycles = static_cast<double>(cs[sms / 2]);
    const double per_clock = static_cast<double>(warps) * CHAINS * rounds / median_cycles;
    /* The clock of the SM with the median cycle count. */
    int median_sm = 0;
    for (int i = 0; i < sms; ++i)
      if (c[i] == cs[sms / 2]) median_sm = i;
    const double mhz = static_cast<double>(c[median_sm]) / static_cast<double>(t[median_sm]) * 1e3;
    if (per_clock > best.hmma_per_clock_sm) best = {per_clock, mhz};
  }
  return best;
}

int main() {
  const int sms = bench_print_device("mma_rates");
  if (sms == 0) return 77;
  float* sink;
  long long *cycles, *ns;
  cudaMalloc(&sink, sizeof(float) * sms * 1024);
  cudaMalloc(&cycles, sizeof(long long) * sms);
  cudaMalloc(&ns, sizeof(long long) * sms);
  std::printf("mma.sync.m16n8k16 fp32-accumulate, %d independent accumulators per thread\n", CHAINS);
  std::printf("%-6s %-7s %5s %-9s %10s %7s %9s\n", "dtype", "inputs", "warps", "run", "HMMA/clk/SM", "MHz",
              "TFLOP/s");
  struct dtype_case {
    const char* name;
    void (*kernel)(int, int, float*, long long*, long long*);
  };
  const dtype_case dtypes[] = {{"bf16", hmma_rate_kernel<true>}, {"fp16", hmma_rate_kernel<false>}};
  const int warp_counts[] = {4, 8, 12, 16};
  for (const dtype_case& d : dtypes) {
    for (int warps : warp_counts) {
      const rate r = measure(d.kernel, sms, warps, 4096, true, 3, sink, cycles, ns);
      std::printf("%-6s %-7s %5d %-9s %10.3f %7.0f %9.1f\n", d.name, "random", warps, "short", r.hmma_per_clock_sm,
                  r.mhz, r.hmma_per_clock_sm * FLOPS_PER_HMMA * sms * r.mhz * 1e-6);
    }
    /* Sustained, at the GEMM's occupancy (8 warps): long enough to reach the power limit. */
    for (int random = 1; random >= 0; --random) {
      const rate r = measure(d.kernel, sms, 8, 1 << 23, random != 0, 1, sink, cycles, ns);
      std::printf("%-6s %-7s %5d %-9s %10.3f %7.0f %9.1f\n", d.name, random ? "random" : "zeros", 8, "sustained",
                  r.hmma_per_clock_sm, r.mhz, r.hmma_per_clock_sm * FLOPS_PER_HMMA * sms * r.mhz * 1e-6);
    }
  }
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) std::printf("CUDA error: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
