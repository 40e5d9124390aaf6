/*
 * pipe_rates.cu — per-SM throughput of the instructions the attention softmax is made of, on
 * the GPU at hand: exponentials (MUFU.EX2, f32 and the packed 16-bit forms), the f32 → 16-bit
 * pair conversion that packs P (F2FP), FFMA and FMNMX, alone and mixed in pairs. A mix whose
 * time is the sum of its parts' times shares a pipe; one whose time is the larger part's runs
 * on separate pipes. The attention forward's softmax budget (docs/NOTES-attn-fwd.md) is
 * reasoned from these numbers.
 *
 *   ./build/bench/pipe_rates   (built with the benchmarks; or nvcc -O3 -arch=sm_90a bench/pipe_rates.cu)
 *
 * Method: one 1024-thread block per SM (8 warps per scheduler), each thread runs CHAINS
 * independent dependent chains of the operation for ITERATIONS rounds; the block's clock64()
 * span gives results per clock per SM = threads · CHAINS · ITERATIONS · ops-per-round / cycles.
 * The median over the SMs is printed. Not a test: nothing is asserted (speed lives here).
 * H200, 2026-11-30: FFMA 122, FMNMX 64, MUFU.EX2 16, ex2 f16x2 / bf16x2 8 pairs (no faster
 * than f32), F2FP 64 (its own pipe beside the MUFU; shared with PRMT), per clock per SM.
 */
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#include "bench_kernel_util.cuh"

constexpr int THREADS = 1024;
constexpr int CHAINS = 8;
constexpr int ITERATIONS = 512;

/* Each op: `name` for the table and one step of a chain. The value stays a 32-bit register
 * (a float or a packed pair) so every op can feed itself (PTX lets an .f32 instruction take the
 * untyped 32-bit registers "r" gives). */
#define PIPE_RATE_OP(type, label, ptx)                                                          \
  struct type {                                                                                \
    static constexpr const char* name = label;                                                 \
    static __device__ __forceinline__ void step(uint32_t& x) { asm volatile(ptx : "+r"(x)); } \
  }
PIPE_RATE_OP(op_ffma, "FFMA (fma.rn.f32)", "fma.rn.f32 %0, %0, 0f3F7FFFFF, 0f3A800000;");
PIPE_RATE_OP(op_fmnmx, "FMNMX (max.f32)", "max.f32 %0, %0, 0f3F000000;");
PIPE_RATE_OP(op_ex2, "MUFU.EX2 (ex2.approx.ftz.f32)", "ex2.approx.ftz.f32 %0, %0;");
PIPE_RATE_OP(op_ex2_f16x2, "ex2.approx.f16x2 (2 results)", "ex2.approx.f16x2 %0, %0;");
PIPE_RATE_OP(op_ex2_bf16x2, "ex2.approx.ftz.bf16x2 (2 results)", "ex2.approx.ftz.bf16x2 %0, %0;");
PIPE_RATE_OP(op_cvt_bf16x2, "F2FP (cvt.rn.bf16x2.f32)", "cvt.rn.bf16x2.f32 %0, %0, %0;");
PIPE_RATE_OP(op_cvt_f16x2, "F2FP (cvt.rn.f16x2.f32)", "cvt.rn.f16x2.f32 %0, %0, %0;");
/* bf16 → f32 of a pair's halves: a byte permute on the integer pipe. */
PIPE_RATE_OP(op_bf16_to_f32, "PRMT (bf16 pair half -> f32 bits)", "prmt.b32 %0, %0, 0, 0x1054;");
PIPE_RATE_OP(op_hadd2, "HADD2 (add.rn.f16x2)", "add.rn.f16x2 %0, %0, %0;");
#undef PIPE_RATE_OP

/* One round: every chain takes one step of Op (a single-op rate) ... */
template <class Op>
struct round_of {
  static __device__ __forceinline__ void run(uint32_t (&v)[CHAINS]) {
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) Op::step(v[c]);
  }
};
/* ... or A and B on alternate chains (a mix: its time against A's and B's alone). */
template <class A, class B>
struct round_mixing {
  static __device__ __forceinline__ void run(uint32_t (&v)[CHAINS]) {
#pragma unroll
    for (int c = 0; c < CHAINS; c += 2) {
      A::step(v[c]);
      B::step(v[c + 1]);
    }
  }
};

template <class Round>
__global__ void __launch_bounds__(THREADS, 1) rate_kernel(uint32_t* sink, long long* cycles) {
  uint32_t v[CHAINS];
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) v[c] = 0x3F000000u + threadIdx.x + c;
  __syncthreads();
  const long long start = clock64();
  for (int it = 0; it < ITERATIONS; ++it) Round::run(v);
  __syncthreads();
  const long long stop = clock64();
  uint32_t acc = 0;
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) acc ^= v[c];
  sink[blockIdx.x * THREADS + threadIdx.x] = acc;
  if (threadIdx.x == 0) cycles[blockIdx.x] = stop - start;
}

static double median_cycles(void (*kernel)(uint32_t*, long long*), int sms, uint32_t* sink, long long* cycles) {
  std::vector<long long> host(sms);
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    kernel<<<sms, THREADS>>>(sink, cycles);
    cudaDeviceSynchronize();
    cudaMemcpy(host.data(), cycles, sms * sizeof(long long), cudaMemcpyDeviceToHost);
    std::sort(host.begin(), host.end());
    best = std::min(best, static_cast<double>(host[sms / 2]));
  }
  return best;
}

int main() {
  const int sms = bench_print_device("pipe_rates");
  if (sms == 0) return 77;
  uint32_t* sink;
  long long* cycles;
  cudaMalloc(&sink, sizeof(uint32_t) * sms * THREADS);
  cudaMalloc(&cycles, sizeof(long long) * sms);
  const double ops = static_cast<double>(THREADS) * CHAINS * ITERATIONS;
  std::printf("results per clock per SM (thread-level ops), median SM of the best of 3\n");
  struct rate_case {
    const char* name;
    void (*kernel)(uint32_t*, long long*);
    bool mix;
  };
  const rate_case cases[] = {
      {op_ffma::name, rate_kernel<round_of<op_ffma>>, false},
      {op_fmnmx::name, rate_kernel<round_of<op_fmnmx>>, false},
      {op_ex2::name, rate_kernel<round_of<op_ex2>>, false},
      {op_ex2_f16x2::name, rate_kernel<round_of<op_ex2_f16x2>>, false},
      {op_ex2_bf16x2::name, rate_kernel<round_of<op_ex2_bf16x2>>, false},
      {op_cvt_bf16x2::name, rate_kernel<round_of<op_cvt_bf16x2>>, false},
      {op_cvt_f16x2::name, rate_kernel<round_of<op_cvt_f16x2>>, false},
      {op_bf16_to_f32::name, rate_kernel<round_of<op_bf16_to_f32>>, false},
      {op_hadd2::name, rate_kernel<round_of<op_hadd2>>, false},
      {"mix EX2 + F2FP.bf16 (1:1)", rate_kernel<round_mixing<op_ex2, op_cvt_bf16x2>>, true},
      {"mix EX2 + FFMA (1:1)", rate_kernel<round_mixing<op_ex2, op_ffma>>, true},
      {"mix F2FP.bf16 + FFMA (1:1)", rate_kernel<round_mixing<op_cvt_bf16x2, op_ffma>>, true},
      {"mix EX2 + ex2.f16x2 (1:1)", rate_kernel<round_mixing<op_ex2, op_ex2_f16x2>>, true},
      {"mix F2FP.bf16 + PRMT (1:1)", rate_kernel<round_mixing<op_cvt_bf16x2, op_bf16_to_f32>>, true},
  };
  for (const rate_case& r : cases) {
    const double c = median_cycles(r.kernel, sms, sink, cycles);
    if (r.mix)
      std::printf("%-40s %7.1f ops per clk per SM (%.0f cycles for %g of each)\n", r.name, ops / c, c, ops / 2);
    else
      std::printf("%-40s %7.1f per clk per SM  (%.0f cycles)\n", r.name, ops / c, c);
  }
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) std::printf("CUDA error: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
