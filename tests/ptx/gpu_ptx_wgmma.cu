/*
 * gpu_ptx_wgmma.cu — one warpgroup tile D(64×N) = A(64×K)·B(K×N) per case, through the
 * WGMMA wrappers (ptx_wgmma.cuh), the descriptors (ptx_desc.cuh) and TMA loads, against a
 * CPU reference in double on the same rounded inputs.
 *
 * Cases: bf16 and f16 SS (m64nNk16) for N = 24, 64, 128, 176, 256; one k-step (K = 16) and
 * four (K = 64, descriptor advanced per step); K-major operands with every swizzle mode
 * (128B, 64B, 32B, none); MN-major B (imm-trans-b = 1) and MN-major A and B, each swizzle;
 * RS forms (A from registers, built from an accumulator-layout fragment with
 * wgmma_a_from_acc_*); e4m3 SS (m64nNk32, K = 64/128) and e4m3 RS.
 *
 * Every case starts from NaN accumulators and issues its first k-step with accumulate = 0, so
 * a broken scale-d shows as NaN. The output is written through the documented fragment
 * layout (wgmma_acc_row/col) into a NaN-poisoned buffer; every element is compared with the
 * reference: |d − ref| ≤ 1e-3 · Σ|a·b| + 1e-6 (fp32 accumulation; a layout or descriptor
 * error moves whole products and fails by orders of magnitude). When an MN-major or
 * no-swizzle case fails, it is rerun with LBO and SBO exchanged and the result printed, to
 * tell a convention error from a broken instruction.
 *
 * Build: part of the CMake build (tests/ptx); needs a compute capability 9.0 GPU (exit 77 =
 * skipped otherwise). Run: build/tests/ptx/gpu_ptx_wgmma  (FLASHC_TEST_SEED=... replays).
 */
#include "ptx_test_util.cuh"

#include <cuda_fp16.h>

#include <vector>

enum wgmma_test_dtype { TEST_BF16 = 0, TEST_F16 = 1, TEST_E4M3 = 2 };

struct wgmma_case_params {
  int k;                         /* K of the whole tile */
  int swizzle_a, swizzle_b;      /* smem_swizzle values (span bytes or 0) */
  int tile_bytes_a, tile_bytes_b; /* shared bytes of each operand (= TMA bytes) */
  int swap_lbo_sbo;              /* diagnostic: bit 0 swaps A's LBO/SBO, bit 1 B's */
  const void* a_global;          /* RS forms: A row-major 64×K (K contiguous) */
};

static __device__ __forceinline__ uint64_t swap_lbo_sbo(uint64_t desc) {
  const uint64_t lbo = (desc >> 16) & 0x3FFF, sbo = (desc >> 32) & 0x3FFF;
  return (desc & ~((0x3FFFull << 16) | (0x3FFFull << 32))) | (sbo << 16) | (lbo << 32);
}

/* Loads one operand tile as blocks of `row_bytes`-wide boxes (see ptx_desc.cuh). */
static __device__ void load_operand(uint8_t* tile, const CUtensorMap* map, uint64_t* bar, int tile_bytes,
                                    int swizzle, int lines, int element_bytes) {
  const int row_bytes = static_cast<int>(smem_swizzle_row_bytes(static_cast<smem_swizzle>(swizzle)));
  const int blocks = tile_bytes / (row_bytes * lines);
  for (int b = 0; b < blocks; ++b) tma_load_2d(tile + b * lines * row_bytes, map, bar, b * row_bytes / element_bytes, 0);
}

template <int Dtype>
static __device__ __forceinline__ float element_to_float(const void* base, int index) {
  if constexpr (Dtype == TEST_BF16)
    return __uint_as_float(static_cast<uint32_t>(static_cast<const uint16_t*>(base)[index]) << 16);
  else
    return __half2float(__ushort_as_half(static_cast<const uint16_t*>(base)[index]));
}

/* KSteps is compile-time: data-dependent branches around wgmmas make ptxas inject extra
 * warpgroup.arrive fences (C7519); a GEMM mainloop likewise unrolls the k-steps of a stage. */
template <int N, int Dtype, bool RegisterA, int TransA, int TransB, int KSteps>
__global__ void __launch_bounds__(128, 1) wgmma_tile_kernel(const __grid_constant__ CUtensorMap map_a,
                                                            const __grid_constant__ CUtensorMap map_b,
                                                            wgmma_case_params params, float* d_out) {
  constexpr int element_bytes = Dtype == TEST_E4M3 ? 1 : 2;
  constexpr int k_per_step = 32 / element_bytes; /* every wgmma consumes 32 bytes of K */
  extern __shared__ uint8_t smem_raw[];
  __shared__ uint64_t operands_full;
  uint8_t* tile_a = ptx_align_1024(smem_raw);
  uint8_t* tile_b = tile_a + ((params.tile_bytes_a + 1023) & ~1023);
  const smem_swizzle swizzle_a = static_cast<smem_swizzle>(params.swizzle_a);
  const smem_swizzle swizzle_b = static_cast<smem_swizzle>(params.swizzle_b);
  const int thread = threadIdx.x;

  if (thread == 0) {
    mbarrier_init(&operands_full, 1);
    fence_mbarrier_init();
  }
  __syncthreads();
  if (thread == 0) {
    mbarrier_arrive_expect_tx(&operands_full,
                              static_cast<uint32_t>((RegisterA ? 0 : params.tile_bytes_a) + params.tile_bytes_b));
    if (!RegisterA)
      load_operand(tile_a, &map_a, &operands_full, params.tile_bytes_a, params.swizzle_a, TransA ? params.k : 64,
                   element_bytes);
    load_operand(tile_b, &map_b, &operands_full, params.tile_bytes_b, params.swizzle_b, TransB ? params.k : N,
                 element_bytes);
  }

  /* RS: A fragments of every k-step, straight from global memory, before the wgmma fence. */
  uint32_t a_frag[KSteps][4];
  if constexpr (RegisterA) {
#pragma unroll
    for (int s = 0; s < KSteps; ++s) {
      if constexpr (Dtype == TEST_E4M3) {
        const uint8_t* a = static_cast<const uint8_t*>(params.a_global);
        const int row = 16 * (thread / 32) + (thread % 32) / 4, quad = thread % 4;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int r = row + 8 * (j & 1), k0 = s * 32 + 16 * (j >> 1) + 4 * quad;
          a_frag[s][j] = *reinterpret_cast<const uint32_t*>(a + r * params.k + k0);
        }
      } else {
        /* The 64×16 slice as an accumulator-layout fragment, then packed (as P → P·V does). */
        float slice[8];
#pragma unroll
        for (int i = 0; i < 8; ++i)
          slice[i] = element_to_float<Dtype>(params.a_global,
                                             wgmma_acc_row(thread, i) * params.k + s * 16 + wgmma_acc_col(thread, i));
        if constexpr (Dtype == TEST_BF16)
          wgmma_a_from_acc_bf16<0>(a_frag[s], slice);
        else
          wgmma_a_from_acc_f16<0>(a_frag[s], slice);
      }
    }
  }

  /* The wait may call printf: keep the accumulators dead across it (a call inside the wgmma
   * register window serializes the wgmmas, C7510). */
  ptx_test_wait(&operands_full, 0);
  float acc[N / 2];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) acc[i] = __int_as_float(0x7fc00000); /* NaN: accumulate = 0 must ignore it */
  /* Descriptors first: any branch between the fence and the last wgmma (even a select that
   * compiles to one) makes ptxas inject fences. */
  uint64_t desc_a[KSteps], desc_b[KSteps];
#pragma unroll
  for (int s = 0; s < KSteps; ++s) {
    desc_b[s] = TransB ? smem_desc_mn_major(tile_b, swizzle_b, params.k, s * k_per_step)
                       : smem_desc_k_major(tile_b, swizzle_b, N, s * 32);
    if (params.swap_lbo_sbo & 2) desc_b[s] = swap_lbo_sbo(desc_b[s]);
    desc_a[s] = TransA ? smem_desc_mn_major(tile_a, swizzle_a, params.k, s * k_per_step)
                       : smem_desc_k_major(tile_a, swizzle_a, 64, s * 32);
    if (params.swap_lbo_sbo & 1) desc_a[s] = swap_lbo_sbo(desc_a[s]);
  }
  wgmma_fence_operand(acc);
  wgmma_fence();
#pragma unroll
  for (int s = 0; s < KSteps; ++s) {
    const uint32_t accumulate = s > 0 ? 1u : 0u;
    if constexpr (RegisterA) {
      if constexpr (Dtype == TEST_BF16) wgmma_rs_bf16<TransB>(acc, a_frag[s], desc_b[s], accumulate);
      if constexpr (Dtype == TEST_F16) wgmma_rs_f16<TransB>(acc, a_frag[s], desc_b[s], accumulate);
      if constexpr (Dtype == TEST_E4M3) wgmma_rs_e4m3(acc, a_frag[s], desc_b[s], accumulate);
    } else {
      if constexpr (Dtype == TEST_BF16) wgmma_ss_bf16<TransA, TransB>(acc, desc_a[s], desc_b[s], accumulate);
      if constexpr (Dtype == TEST_F16) wgmma_ss_f16<TransA, TransB>(acc, desc_a[s], desc_b[s], accumulate);
      if constexpr (Dtype == TEST_E4M3) wgmma_ss_e4m3(acc, desc_a[s], desc_b[s], accumulate);
    }
  }
  wgmma_commit_group();
  wgmma_wait_group<0>();
  wgmma_fence_operand(acc);

#pragma unroll
  for (int i = 0; i < N / 2; ++i) d_out[wgmma_acc_row(thread, i) * N + wgmma_acc_col(thread, i)] = acc[i];
}

/* ---------------------------------------------------------------------------------------- */
/* Host side                                                                                  */
/* ---------------------------------------------------------------------------------------- */

static const char* swizzle_name(int swizzle) {
  return swizzle == 128 ? "128B" : swizzle == 64 ? "64B" : swizzle == 32 ? "32B" : "none";
}

static int row_bytes_of(int swizzle) { return swizzle == 0 ? 16 : swizzle; }

typedef void (*wgmma_kernel_fn)(CUtensorMap, CUtensorMap, wgmma_case_params, float*);

struct wgmma_case {
  const char* form; /* "ss" or "rs" */
  int dtype;
  int n, k;
  int trans_a, trans_b;
  int swizzle_a, swizzle_b;
  bool register_a;
  wgmma_kernel_fn kernel;
};

/* Runs one case; returns the number of bad elements (and the worst error ratio). */
static long run_wgmma_case(const wgmma_case& c, const fc_tensor_map_encoder* encoder, ptx_rng* rng, int swap,
                           double* worst_ratio, char* first, size_t first_size, bool fresh_inputs,
                           std::vector<float>* a_values, std::vector<float>* b_values) {
  const int m = 64, n = c.n, k = c.k;
  const int element_bytes = c.dtype == TEST_E4M3 ? 1 : 2;
  const flashc_dtype dtype = c.dtype == TEST_BF16 ? FLASHC_DTYPE_BF16
                             : c.dtype == TEST_F16 ? FLASHC_DTYPE_FP16
                                                   : FLASHC_DTYPE_E4M3;
  /* Logical A (m×k) and B (k×n) values; fresh random unless rerunning for the diagnosis. */
  std::vector<uint8_t> a_bits(static_cast<size_t>(m) * k * element_bytes), b_bits(static_cast<size_t>(k) * n * element_bytes);
  if (fresh_inputs) {
    a_values->assign(static_cast<size_t>(m) * k, 0.0f);
    b_values->assign(static_cast<size_t>(k) * n, 0.0f);
    for (auto& v : *a_values) {
      if (c.dtype == TEST_E4M3) v = fc_e4m3_to_f32(ptx_random_e4m3(rng, 4.0));
      else v = ptx_16bit_to_f32(ptx_random_16bit(rng, dtype, 2.0), dtype);
    }
    for (auto& v : *b_values) {
      if (c.dtype == TEST_E4M3) v = fc_e4m3_to_f32(ptx_random_e4m3(rng, 4.0));
      else v = ptx_16bit_to_f32(ptx_random_16bit(rng, dtype, 2.0), dtype);
    }
  }
  /* Stored layouts: K-major = the K index contiguous; MN-major = the M/N index contiguous. */
  auto store = [&](std::vector<uint8_t>& bits, size_t index, float value) {
    if (element_bytes == 1) {
      bits[index] = fc_f32_to_e4m3(value);
    } else {
      const uint16_t h = dtype == FLASHC_DTYPE_BF16 ? fc_f32_to_bf16(value) : fc_f32_to_fp16(value);
      memcpy(&bits[index * 2], &h, 2);
    }
  };
  for (int i = 0; i < m; ++i)
    for (int kk = 0; kk < k; ++kk)
      store(a_bits, c.trans_a ? static_cast<size_t>(kk) * m + i : static_cast<size_t>(i) * k + kk,
            (*a_values)[static_cast<size_t>(i) * k + kk]);
  for (int kk = 0; kk < k; ++kk)
    for (int j = 0; j < n; ++j)
      store(b_bits, c.trans_b ? static_cast<size_t>(kk) * n + j : static_cast<size_t>(j) * k + kk,
            (*b_values)[static_cast<size_t>(kk) * n + j]);

  void *a_dev = nullptr, *b_dev = nullptr;
  float* d_dev = nullptr;
  CUDA_CHECK(cudaMalloc(&a_dev, a_bits.size()));
  CUDA_CHECK(cudaMalloc(&b_dev, b_bits.size()));
  CUDA_CHECK(cudaMalloc(&d_dev, static_cast<size_t>(m) * n * 4));
  CUDA_CHECK(cudaMemcpy(a_dev, a_bits.data(), a_bits.size(), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(b_dev, b_bits.data(), b_bits.size(), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(d_dev, 0xFF, static_cast<size_t>(m) * n * 4)); /* NaN poison */

  /* Tensor maps whose box is one block: row_bytes wide along the contiguous dimension. */
  const int row_bytes_a = row_bytes_of(c.swizzle_a), row_bytes_b = row_bytes_of(c.swizzle_b);
  const uint32_t box_a = static_cast<uint32_t>(row_bytes_a / element_bytes), box_b = static_cast<uint32_t>(row_bytes_b / element_bytes);
  const int lines_a = c.trans_a ? k : m, lines_b = c.trans_b ? k : n;
  const int inner_a = c.trans_a ? m : k, inner_b = c.trans_b ? n : k;
  const int blocks_a = (inner_a * element_bytes + row_bytes_a - 1) / row_bytes_a;
  const int blocks_b = (inner_b * element_bytes + row_bytes_b - 1) / row_bytes_b;
  fc_tensor_map map_a = ptx_make_map_2d(encoder, dtype, a_dev, inner_a, lines_a, inner_a, box_a, lines_a,
                                        static_cast<fc_tensor_map_swizzle>(c.swizzle_a));
  fc_tensor_map map_b = ptx_make_map_2d(encoder, dtype, b_dev, inner_b, lines_b, inner_b, box_b, lines_b,
                                        static_cast<fc_tensor_map_swizzle>(c.swizzle_b));
  wgmma_case_params params;
  params.k = k;
  params.swizzle_a = c.swizzle_a;
  params.swizzle_b = c.swizzle_b;
  params.tile_bytes_a = blocks_a * lines_a * row_bytes_a;
  params.tile_bytes_b = blocks_b * lines_b * row_bytes_b;
  params.swap_lbo_sbo = swap;
  params.a_global = a_dev;
  const int smem = ((params.tile_bytes_a + 1023) & ~1023) + params.tile_bytes_b + 1024;
  CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(c.kernel), cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  c.kernel<<<1, 128, smem>>>(map_a, map_b, params, d_dev);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> d(static_cast<size_t>(m) * n);
  CUDA_CHECK(cudaMemcpy(d.data(), d_dev, d.size() * 4, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaFree(a_dev));
  CUDA_CHECK(cudaFree(b_dev));
  CUDA_CHECK(cudaFree(d_dev));

  long bad = 0;
  *worst_ratio = 0.0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double ref = 0.0, magnitude = 0.0;
      for (int kk = 0; kk < k; ++kk) {
        const double p = static_cast<double>((*a_values)[static_cast<size_t>(i) * k + kk]) *
                         static_cast<double>((*b_values)[static_cast<size_t>(kk) * n + j]);
        ref += p;
        magnitude += fabs(p);
      }
      const double got = d[static_cast<size_t>(i) * n + j];
      const double tolerance = 1e-3 * magnitude + 1e-6;
      const double error = fabs(got - ref);
      const double ratio = isnan(got) ? INFINITY : error / tolerance;
      if (ratio > *worst_ratio) *worst_ratio = ratio;
      if (!(error <= tolerance) && bad++ == 0)
        snprintf(first, first_size, "D(%d,%d) = %.6g, reference %.6g", i, j, got, ref);
    }
  return bad;
}

template <int N, int Dtype, bool RegisterA, int TransA, int TransB, int K>
static wgmma_case make_case(int swizzle_a, int swizzle_b) {
  constexpr int k = K;
  wgmma_case c;
  c.form = RegisterA ? "rs" : "ss";
  c.dtype = Dtype;
  c.n = N;
  c.k = k;
  c.trans_a = TransA;
  c.trans_b = TransB;
  c.swizzle_a = swizzle_a;
  c.swizzle_b = swizzle_b;
  c.register_a = RegisterA;
  c.kernel = wgmma_tile_kernel<N, Dtype, RegisterA, TransA, TransB, K / (Dtype == TEST_E4M3 ? 32 : 16)>;
  return c;
}

int main() {
  const int skip = ptx_test_require_sm90("gpu_ptx_wgmma");
  if (skip) return skip;
  ptx_rng rng = {ptx_test_seed()};
  fc_tensor_map_encoder encoder;
  FLASHC_CHECK(fc_tensor_map_encoder_init(&encoder));
  ptx_report report = {0, 0};

  const wgmma_case cases[] = {
      /* 16-bit SS, K-major, 128B swizzle: one k-step, four k-steps, several N */
      make_case<128, TEST_BF16, false, 0, 0, 16>(128, 128),
      make_case<128, TEST_F16, false, 0, 0, 16>(128, 128),
      make_case<128, TEST_BF16, false, 0, 0, 64>(128, 128),
      make_case<128, TEST_F16, false, 0, 0, 64>(128, 128),
      make_case<64, TEST_BF16, false, 0, 0, 64>(128, 128),
      make_case<256, TEST_BF16, false, 0, 0, 64>(128, 128),
      make_case<256, TEST_F16, false, 0, 0, 64>(128, 128),
      make_case<24, TEST_BF16, false, 0, 0, 64>(128, 128),
      make_case<176, TEST_F16, false, 0, 0, 64>(128, 128),
      /* K-major, the other swizzle modes */
      make_case<128, TEST_BF16, false, 0, 0, 64>(64, 64),
      make_case<128, TEST_BF16, false, 0, 0, 64>(32, 32),
      make_case<128, TEST_BF16, false, 0, 0, 64>(0, 0),
      make_case<128, TEST_BF16, false, 0, 0, 64>(128, 0),
      /* MN-major B (transposed), each swizzle */
      make_case<128, TEST_BF16, false, 0, 1, 64>(128, 128),
      make_case<128, TEST_BF16, false, 0, 1, 64>(128, 64),
      make_case<128, TEST_BF16, false, 0, 1, 64>(128, 32),
      make_case<128, TEST_BF16, false, 0, 1, 64>(128, 0),
      /* MN-major A and B */
      make_case<128, TEST_F16, false, 1, 1, 64>(128, 128),
      make_case<128, TEST_F16, false, 1, 1, 64>(64, 64),
      make_case<128, TEST_F16, false, 1, 1, 64>(0, 0),
      /* RS: A from registers */
      make_case<128, TEST_BF16, true, 0, 0, 64>(0, 128),
      make_case<128, TEST_F16, true, 0, 1, 64>(0, 128),
      make_case<64, TEST_BF16, true, 0, 0, 16>(0, 128),
      /* e4m3 (K-major only), k32 */
      make_case<128, TEST_E4M3, false, 0, 0, 128>(128, 128),
      make_case<64, TEST_E4M3, false, 0, 0, 64>(128, 128),
      make_case<256, TEST_E4M3, false, 0, 0, 128>(128, 128),
      make_case<128, TEST_E4M3, false, 0, 0, 128>(64, 64),
      make_case<128, TEST_E4M3, true, 0, 0, 128>(0, 128),
  };
  const char* dtype_names[] = {"bf16", "f16", "e4m3"};
  for (const wgmma_case& c : cases) {
    std::vector<float> a_values, b_values;
    double worst = 0.0;
    char first[160] = "";
    const long bad = run_wgmma_case(c, &encoder, &rng, 0, &worst, first, sizeof first, true, &a_values, &b_values);
    char name[192], detail[320];
    snprintf(name, sizeof name, "wgmma %s %s m64n%dk%d K=%d A %s/%s B %s/%s", c.form, dtype_names[c.dtype], c.n,
             c.dtype == TEST_E4M3 ? 32 : 16, c.k, c.register_a ? "registers" : (c.trans_a ? "MN-major" : "K-major"),
             c.register_a ? "-" : swizzle_name(c.swizzle_a), c.trans_b ? "MN-major" : "K-major", swizzle_name(c.swizzle_b));
    snprintf(detail, sizeof detail, "%ld of %d elements off, worst error/tolerance %.3g %s", bad, 64 * c.n, worst, first);
    ptx_report_case(&report, bad == 0, name, detail);
    if (bad != 0) {
      /* Diagnosis: does exchanging LBO and SBO (of A, B or both) fix it? */
      for (int swap = 1; swap <= 3; ++swap) {
        if ((swap & 1) && c.register_a) continue;
        double swapped_worst = 0.0;
        char swapped_first[160] = "";
        const long swapped_bad = run_wgmma_case(c, &encoder, &rng, swap, &swapped_worst, swapped_first,
                                                sizeof swapped_first, false, &a_values, &b_values);
        printf("  NOTE: with LBO/SBO exchanged for %s: %ld elements off (worst %.3g)\n",
               swap == 1 ? "A" : swap == 2 ? "B" : "A and B", swapped_bad, swapped_worst);
      }
    }
  }
  return ptx_report_finish(&report, "gpu_ptx_wgmma");
}
