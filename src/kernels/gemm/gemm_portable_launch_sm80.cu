/*
 * gemm_portable_launch_sm80.cu — host side of the portable GEMM (sm_80 and newer): what it
 * can run (fc_gemm_portable_check), the tile heuristic, the flat kernel arguments, and the
 * launch (fc_gemm_portable_run). The kernels are in gemm_portable_*_{128x256,128x128}_sm80.cu.
 *
 * What it takes: fp16/bf16 A and B (e4m3 is left to the fallback), fp32/fp16/bf16 D and C,
 * any m, n, k, all four A/B layouts, strided batches (stride 0 broadcasts), bias, ReLU/GELU.
 * What it needs: compute capability ≥ 8.0; A, B 16-byte aligned with leading dimensions and
 * batch strides that are multiples of 8 elements (every cp.async chunk is 16 bytes at a
 * 16-byte address); batch_count ≤ 65535 (grid.y). Otherwise the check says why and the host
 * runs the fallback (or fails with that reason when algo = FLASHC_GEMM_ALGO_PORTABLE).
 *
 * Heuristic: the 128×256 tile (8 warps, 144 KB, one block per SM) when the problem has at
 * least one such tile per SM; else the 128×128 tile (4 warps, 64 KB, two blocks per SM), which
 * doubles the tiles on small problems. The 128×256 grid of a single batch ends in a stream-K
 * tail where plan_stream_k predicts a saving; its workspace is fc_gemm_portable_workspace_size.
 *
 * Checked by tests/gpu/gpu_gemm_portable.c (and the algo = PORTABLE cases of tests/gpu/gpu_gemm.c).
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include "flashc.h"
#include "host/error.h"
#include "host/problem.h"
#include "kernels/gemm/gemm_portable_config.cuh"
#include "kernels/gemm/gemm_stream_k_plan.h"
#include "kernels/launch.h"

namespace {

constexpr int COPY_ALIGN_BYTES = 16;        /* cp.async chunk */
constexpr int COPY_ALIGN_ELEMENTS = COPY_ALIGN_BYTES / 2;
constexpr int MAX_GRID_Y = 65535;

bool is_16bit_float(flashc_dtype dtype) { return dtype == FLASHC_DTYPE_FP16 || dtype == FLASHC_DTYPE_BF16; }

int ceil_div(int a, int b) { return (a + b - 1) / b; }

/* Which tile the heuristic picks, and whether this device's shared memory allows it. */
gemm_portable_tile_id choose_tile(const fc_gemm_problem* p, const fc_cuda_context* context) {
  const int64_t large_tiles = static_cast<int64_t>(ceil_div(p->m, gemm_portable_tile_128x256::BLOCK_M)) *
                              ceil_div(p->n, gemm_portable_tile_128x256::BLOCK_N) * p->batch_count;
  const bool large_fits = context->shared_memory_per_block_optin >= static_cast<size_t>(gemm_portable_tile_128x256::SHARED_BYTES);
  /* Stream-K forced (tests): the large tile on any problem, so that small problems split
   * their few tiles over every SM — many pieces per tile, empty runs — and check the hand-over. */
  const bool forced = context->gemm_portable_stream_k > 0;
  return large_fits && (large_tiles >= context->sm_count || forced) ? GEMM_PORTABLE_TILE_128x256
                                                                   : GEMM_PORTABLE_TILE_128x128;
}

int64_t k_tiles_of(const fc_gemm_problem* p, gemm_portable_tile_id tile) {
  const int block_k = tile == GEMM_PORTABLE_TILE_128x256 ? gemm_portable_tile_128x256::BLOCK_K
                                                         : gemm_portable_tile_128x128::BLOCK_K;
  return (p->k + block_k - 1) / block_k;
}

/* The stream-K tail (gemm_portable_stream_k.cuh). Without it the grid's last wave holds
 * rest = tiles % SMs tiles and takes a whole tile's time (k_tiles slices); with it every SM
 * runs ceil(rest · k_tiles / SMs) slices plus the hand-over — publishing a 128 KB fp32 tile to
 * L2, collecting it, a second pipeline fill — which STREAM_K_HANDOVER_SLICES counts in slice
 * times. Predicted 3–5 (a slice is ~1.2 µs at 8192³ on the H200, a 128 KB tile moves through
 * L2 in ~1 µs each way, plus a fill); measured on the H200 (28th session, bench_gemm --algo
 * portable --stream-k on --ab-stream-k off, fp16, alternating launches) the savings fit 9–15:
 * 4096³ forced on −0.8 % (the model, 57 + H against 64 slices, keeps it off), 8192³ +1.7 to
 * +2.2 %, 4096 × {14336 × 4096, 4096 × 14336, 28672 × 8192, 8192 × 28672} +0.8 / +1.3 / +2.0 /
 * +2.5 %. With 12 and the 0.5 % floor the model turns on exactly those that gained. */
constexpr int64_t STREAM_K_HANDOVER_SLICES = 12;
constexpr double STREAM_K_MIN_GAIN = 0.005;
/* (The Hopper path's per-partial and thin-round terms were measured on its kernels only; here
 * they stay 0, the model the 28th session calibrated.) */
constexpr gemm_stream_k_model STREAM_K_MODEL = {STREAM_K_HANDOVER_SLICES, 0.0, 0.0, STREAM_K_MIN_GAIN};

/* The tail's plan (gemm_stream_k_plan.h): off unless the kernel has it (gemm_portable_has_stream_k)
 * and the problem is a single batch (grid.y); its stream-K blocks are one per SM. */
gemm_stream_k_plan plan_stream_k(const fc_gemm_problem* p, gemm_portable_tile_id tile, const fc_cuda_context* context) {
  const int64_t tiles = static_cast<int64_t>(ceil_div(p->m, gemm_portable_tile_128x256::BLOCK_M)) *
                        ceil_div(p->n, gemm_portable_tile_128x256::BLOCK_N);
  const bool b_k_major = p->b_layout == FLASHC_COL_MAJOR;
  const bool has_tail = tile == GEMM_PORTABLE_TILE_128x256 &&
                        gemm_portable_has_stream_k<gemm_portable_tile_128x256>(b_k_major) && p->batch_count == 1;
  const int mode = has_tail ? context->gemm_portable_stream_k : -1;
  return gemm_stream_k_plan_for(tiles, k_tiles_of(p, tile), fc_sm_count(context), mode, STREAM_K_MODEL);
}

/* The workspace of a stream-K launch: one fp32 tile per stream-K block, then a flag per block. */
gemm_stream_k_workspace stream_k_workspace_for(const gemm_stream_k_plan& plan, const fc_cuda_context* context) {
  const size_t sms = static_cast<size_t>(fc_sm_count(context));
  constexpr size_t TILE_FLOATS =
      static_cast<size_t>(gemm_portable_tile_128x256::BLOCK_M) * gemm_portable_tile_128x256::BLOCK_N;
  return gemm_stream_k_workspace_for(plan.on, sms, TILE_FLOATS, sms);
}

}  // namespace

extern "C" size_t fc_gemm_portable_workspace_size(const fc_gemm_problem* p, const fc_cuda_context* context) {
  return stream_k_workspace_for(plan_stream_k(p, choose_tile(p, context), context), context).total;
}

extern "C" flashc_status fc_gemm_portable_check(const fc_gemm_problem* p, const fc_cuda_context* context,
                                                fc_reason* why_not) {
  auto refuse = [&](flashc_status status, const char* text) {
    snprintf(why_not->text, sizeof why_not->text, "portable GEMM: %s", text);
    return status;
  };
  char text[200];
  if (context->cc_major < 8) {
    snprintf(text, sizeof text, "needs compute capability 8.0 or newer (device has %d.%d)", context->cc_major,
             context->cc_minor);
    return refuse(FLASHC_STATUS_NOT_SUPPORTED_ARCH, text);
  }
  if (!is_16bit_float(p->ab_dtype))
    return refuse(FLASHC_STATUS_NOT_SUPPORTED_DTYPE, "takes fp16 or bf16 A and B (e4m3 runs on the fallback)");
  if (p->d_dtype != FLASHC_DTYPE_FP32 && !is_16bit_float(p->d_dtype))
    return refuse(FLASHC_STATUS_NOT_SUPPORTED_DTYPE, "writes fp32, fp16 or bf16 D");
  if (reinterpret_cast<uintptr_t>(p->a) % COPY_ALIGN_BYTES || reinterpret_cast<uintptr_t>(p->b) % COPY_ALIGN_BYTES)
    return refuse(FLASHC_STATUS_NOT_SUPPORTED, "needs A and B 16-byte aligned (cp.async)");
  if (p->lda % COPY_ALIGN_ELEMENTS || p->ldb % COPY_ALIGN_ELEMENTS) {
    snprintf(text, sizeof text, "needs lda and ldb multiples of 8 elements (lda = %lld, ldb = %lld after normalization)",
             (long long)p->lda, (long long)p->ldb);
    return refuse(FLASHC_STATUS_NOT_SUPPORTED, text);
  }
  if (p->batch_count > 1 && (p->stride_a % COPY_ALIGN_ELEMENTS || p->stride_b % COPY_ALIGN_ELEMENTS)) {
    snprintf(text, sizeof text, "needs batch strides of A and B that are multiples of 8 elements (%lld, %lld)",
             (long long)p->stride_a, (long long)p->stride_b);
    return refuse(FLASHC_STATUS_NOT_SUPPORTED, text);
  }
  if (p->batch_count > MAX_GRID_Y) {
    snprintf(text, sizeof text, "takes batch_count <= %d (%d)", MAX_GRID_Y, p->batch_count);
    return refuse(FLASHC_STATUS_NOT_SUPPORTED, text);
  }
  const int64_t small_tiles = static_cast<int64_t>(ceil_div(p->m, gemm_portable_tile_128x128::BLOCK_M)) *
                              ceil_div(p->n, gemm_portable_tile_128x128::BLOCK_N);
  if (small_tiles > INT32_MAX) return refuse(FLASHC_STATUS_NOT_SUPPORTED, "has more than 2^31 tiles per batch");
  if (context->shared_memory_per_block_optin < static_cast<size_t>(gemm_portable_tile_128x128::SHARED_BYTES)) {
    snprintf(text, sizeof text, "needs %d bytes of shared memory per block (device allows %zu)",
             gemm_portable_tile_128x128::SHARED_BYTES, context->shared_memory_per_block_optin);
    return refuse(FLASHC_STATUS_NOT_SUPPORTED_ARCH, text);
  }
  return FLASHC_STATUS_SUCCESS;
}

extern "C" flashc_status fc_gemm_portable_run(const fc_gemm_problem* p, const fc_cuda_context* context,
                                              void* workspace, void* stream) {
  const gemm_portable_tile_id tile = choose_tile(p, context);
  const int block_m = tile == GEMM_PORTABLE_TILE_128x256 ? gemm_portable_tile_128x256::BLOCK_M
                                                         : gemm_portable_tile_128x128::BLOCK_M;
  const int block_n = tile == GEMM_PORTABLE_TILE_128x256 ? gemm_portable_tile_128x256::BLOCK_N
                                                         : gemm_portable_tile_128x128::BLOCK_N;
  gemm_portable_args args = {};
  args.a = p->a;
  args.b = p->b;
  args.c = p->c;
  args.d = p->d;
  args.bias = p->bias;
  args.scale_a = p->scale_a;
  args.scale_b = p->scale_b;
  args.lda = p->lda, args.ldb = p->ldb, args.ldc = p->ldc, args.ldd = p->ldd;
  /* A stride is only meaningful with batches; 0 keeps a single matrix (or broadcasts one). */
  args.stride_a = p->batch_count > 1 ? p->stride_a : 0;
  args.stride_b = p->batch_count > 1 ? p->stride_b : 0;
  args.stride_c = p->batch_count > 1 ? p->stride_c : 0;
  args.stride_d = p->batch_count > 1 ? p->stride_d : 0;
  args.m = p->m, args.n = p->n, args.k = p->k, args.batch_count = p->batch_count;
  args.tiles_m = ceil_div(p->m, block_m);
  args.tiles_n = ceil_div(p->n, block_n);
  args.alpha = p->alpha;
  args.beta = p->beta;
  args.d_dtype = p->d_dtype;
  args.activation = p->activation;
  args.bias_per_row = p->bias_per_row;
  args.quad_access = fc_gemm_epilogue_quads_ok(p, args.stride_d, args.stride_c); /* tiles start at 4-column multiples */
  /* Without stream-K one block per tile of the chosen shape (plan.dp_tiles counts 128 × 256
   * tiles, the only shape with the tail). */
  const gemm_stream_k_plan plan = plan_stream_k(p, tile, context);
  args.dp_tiles = args.tiles_m * args.tiles_n;
  if (plan.on) {
    args.dp_tiles = static_cast<int>(plan.dp_tiles);
    const gemm_stream_k_workspace layout = stream_k_workspace_for(plan, context);
    if (!workspace)
      return fc_fail(FLASHC_STATUS_INTERNAL_ERROR, "portable GEMM: no workspace (%zu bytes needed for stream-K)",
                     layout.total);
    gemm_stream_k_workspace_at(workspace, layout, &args.partials, &args.flags);
    args.tag = fc_launch_tag(context);
    args.sk_ctas = static_cast<int>(fc_sm_count(context));
    args.run_length = static_cast<int>(plan.iterations / args.sk_ctas);
    args.run_rest = static_cast<int>(plan.iterations % args.sk_ctas);
  }

  const bool a_k_major = p->a_layout == FLASHC_ROW_MAJOR; /* A is m×k: row-major = k contiguous */
  const bool b_k_major = p->b_layout == FLASHC_COL_MAJOR; /* B is k×n: column-major = k contiguous */
  const bool bf16 = p->ab_dtype == FLASHC_DTYPE_BF16;
  cudaStream_t cuda_stream = static_cast<cudaStream_t>(stream);
  cudaError_t error;
  if (tile == GEMM_PORTABLE_TILE_128x256)
    error = bf16 ? gemm_portable_launch_bf16_128x256(context, a_k_major, b_k_major, args, cuda_stream)
                 : gemm_portable_launch_f16_128x256(context, a_k_major, b_k_major, args, cuda_stream);
  else
    error = bf16 ? gemm_portable_launch_bf16_128x128(context, a_k_major, b_k_major, args, cuda_stream)
                 : gemm_portable_launch_f16_128x128(context, a_k_major, b_k_major, args, cuda_stream);
  if (error != cudaSuccess)
    return fc_fail(FLASHC_STATUS_CUDA_ERROR, "launching the portable GEMM (%dx%d tile): %s", block_m, block_n,
                   cudaGetErrorString(error));
  return FLASHC_STATUS_SUCCESS;
}
