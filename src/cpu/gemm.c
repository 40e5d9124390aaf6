/*
 * gemm.c — the CPU backend's GEMM, fc_cpu_gemm:
 *
 *   D_i = act(alpha · scale_a · scale_b · A_i·B_i + beta · C_i + bias)   for every batch i,
 *
 * on the normalized problem of src/host/problem.h (D row-major; A and B in either layout;
 * inputs fp32 / fp16 / bf16 / e4m3; C, D and bias fp32 / fp16 / bf16). Products are
 * accumulated in fp32; the epilogue runs in fp32 and D is rounded to its dtype (nearest even).
 *
 * How it is organized (the GotoBLAS / BLIS loop nest, in plain C):
 *   - D is cut into output tiles of GEMM_TILE_ROWS × GEMM_TILE_COLS; OpenMP threads take
 *     tiles (of every batch) from one shared list, so each thread owns the D elements it
 *     writes and no synchronization is needed beyond the loop itself.
 *   - For a tile, the depth k is walked in slices of GEMM_DEPTH_SLICE. For each slice the
 *     thread converts the A rows and B columns it needs to fp32 once ("packing") into
 *     contiguous micro-panels, then a register-blocked micro-kernel multiplies each
 *     GEMM_MICRO_ROWS-row A panel by each GEMM_MICRO_COLS-column B panel into an fp32 tile
 *     accumulator. Its inner loop reads both panels with unit stride, so the compiler
 *     vectorizes it without intrinsics. At -O3 (CMake's Release) the accumulator block stays
 *     in registers; at -O2 GCC 12 keeps it in L1 and the kernel runs about 2.5x slower.
 *   - After the last slice the epilogue (scales, beta·C, bias, activation, rounding) writes
 *     the tile to D. C is read element by element right before the same element of D is
 *     written, so C may alias D. With beta = 0 C is not read at all (as in BLAS: NaN or
 *     garbage in C does not reach D).
 * Panels are padded with zeros to whole micro-panels, so the micro-kernel has no edge cases;
 * the padded accumulator entries are never stored. Every output is computed by one thread
in a fixed order, so results do not depend on the number of threads.
 *
 * All scratch (per-thread panels and accumulator) is allocated before any output is touched,
 * so an allocation failure returns FLASHC_STATUS_OUT_OF_MEMORY with D unchanged.
 *
 * Checked against the fp64 oracle under the DESIGN.md §6 rule by tests/cpu_gemm.c and by
 * `flashc gemm --check` (which uses fc_ref_gemm, src/cpu/gemm_reference.c): every layout of
 * A and B, odd sizes, batches with broadcast operands, C aliasing D, bias per row and per
 * column, every activation, input and output dtype.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef FLASHC_WITH_OPENMP
#include <omp.h>
#endif

#include "cpu/cpu_backend.h"
#include "host/error.h"
#include "host/numeric.h"
#include "host/problem.h"

/*
 * Block sizes. The micro-kernel keeps a GEMM_MICRO_ROWS × GEMM_MICRO_COLS block of
 * accumulators in registers: 4 × 8 fp32 is 8 SSE registers (4 AVX, 2 AVX-512), leaving room
 * for the B row and the broadcast A value in the 16 vector registers of baseline x86-64, so
 * nothing spills whatever -march the library is built for. (Measured with GCC 12 -O3 at the
 * x86-64 baseline: 6 × 8, 8 × 8 and 4 × 16 spill and run 3-5x slower than 4 × 8.)
 * One depth slice of an A micro-panel (4 × 256 × 4 B = 4 KiB) and of a B micro-panel
 * (256 × 8 × 4 B = 8 KiB) sit together in a 32 KiB L1; the whole packed A block
 * (128 × 256 × 4 B = 128 KiB), B block (256 × 128 × 4 B = 128 KiB) and the fp32 tile
 * accumulator (128 × 128 × 4 B = 64 KiB) fit in the per-core L2 (≥ 512 KiB on current
 * x86 and Arm server cores). Packing costs one conversion per element of A and B per tile,
 * against 128 multiply-adds per packed element, so it stays a few percent of the time;
 * 128 × 128 tiles still give a 512 × 512 output 16 tiles to spread over the threads.
 */
#define GEMM_MICRO_ROWS 4
#define GEMM_MICRO_COLS 8
#define GEMM_DEPTH_SLICE 256
#define GEMM_TILE_ROWS 128 /* a multiple of GEMM_MICRO_ROWS */
#define GEMM_TILE_COLS 128 /* a multiple of GEMM_MICRO_COLS */

/* Scratch blocks start on a cache line so packed panels never straddle one needlessly. */
#define GEMM_SCRATCH_ALIGNMENT 64

/* Where an operand's elements live: element (row, col) of batch b is at
 * data[b * batch_stride + row * row_step + col * col_step]. */
typedef struct gemm_operand {
  const void* data;
  flashc_dtype dtype;
  int64_t row_step, col_step, batch_stride;
} gemm_operand;

/* Everything a thread needs to compute tiles; read-only once set up. */
typedef struct gemm_plan {
  const fc_gemm_problem* problem;
  gemm_operand a, b;
  float e4m3_to_f32[256]; /* decode table: e4m3 decoding goes through ldexpf otherwise */
  float product_scale;    /* alpha · scale_a · scale_b */
  float beta;             /* 0 when there is no C */
  float gelu_tanh_scale;  /* sqrt(2 / pi), derived in gemm_plan_init */
  int64_t tiles_per_row_block, tiles_per_batch, tile_count;
  size_t scratch_floats_per_thread;
} gemm_plan;

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Coefficient of the cubic term in the tanh approximation of GELU (Hendrycks & Gimpel,
 * "Gaussian Error Linear Units", 2016), the one cuBLASLt's GELU epilogue uses. */
#define GELU_CUBIC_COEFFICIENT 0.044715f
#define GEMM_PI 3.14159265358979323846

static gemm_operand gemm_operand_make(const void* data, flashc_dtype dtype, flashc_layout layout,
                                      int64_t ld, int64_t batch_stride) {
  gemm_operand operand;
  operand.data = data;
  operand.dtype = dtype;
  operand.row_step = layout == FLASHC_ROW_MAJOR ? ld : 1;
  operand.col_step = layout == FLASHC_ROW_MAJOR ? 1 : ld;
  operand.batch_stride = batch_stride;
  return operand;
}

/*
 * Converts `count` elements data[first + q * source_step] (q = 0 .. count-1) of `dtype` to
 * fp32 into out[q * out_step]. The switch is outside the loops so each loop is one tight
 * conversion; e4m3 goes through the plan's decode table.
 */
static void convert_to_f32(const gemm_plan* plan, const void* data, flashc_dtype dtype, int64_t first,
                           int64_t source_step, int64_t count, float* out, int64_t out_step) {
  int64_t q;
  switch (dtype) {
    case FLASHC_DTYPE_FP32: {
      const float* source = (const float*)data + first;
      for (q = 0; q < count; ++q) out[q * out_step] = source[q * source_step];
      break;
    }
    case FLASHC_DTYPE_FP16: {
      const uint16_t* source = (const uint16_t*)data + first;
      for (q = 0; q < count; ++q) out[q * out_step] = fc_fp16_to_f32(source[q * source_step]);
      break;
    }
    case FLASHC_DTYPE_BF16: {
      const uint16_t* source = (const uint16_t*)data + first;
      for (q = 0; q < count; ++q) out[q * out_step] = fc_bf16_to_f32(source[q * source_step]);
      break;
    }
    case FLASHC_DTYPE_E4M3: {
      const uint8_t* source = (const uint8_t*)data + first;
      for (q = 0; q < count; ++q) out[q * out_step] = plan->e4m3_to_f32[source[q * source_step]];
      break;
    }
    default:
      for (q = 0; q < count; ++q) out[q * out_step] = NAN;
      break;
  }
}

/*
 * Packs one micro-panel: `width` lanes (rows of A or columns of B) × `depth` steps along k,
 * stored as panel[p * width + lane] in fp32. Source element (lane, p) is at
 * first + lane * lane_step + p * depth_step. Lanes from valid_lanes to width are zero.
 * The loop runs along whichever direction is contiguous in memory.
 */
static void pack_micro_panel(const gemm_plan* plan, const gemm_operand* operand, int64_t first,
                             int64_t lane_step, int64_t depth_step, int valid_lanes, int width,
                             int64_t depth, float* panel) {
  int64_t p;
  int lane;
  if (lane_step == 1) {
    for (p = 0; p < depth; ++p) {
      convert_to_f32(plan, operand->data, operand->dtype, first + p * depth_step, 1, valid_lanes,
                     panel + p * width, 1);
    }
  } else {
    for (lane = 0; lane < valid_lanes; ++lane) {
      convert_to_f32(plan, operand->data, operand->dtype, first + lane * lane_step, depth_step, depth,
                     panel + lane, width);
    }
  }
  if (valid_lanes < width) {
    for (p = 0; p < depth; ++p) {
      for (lane = valid_lanes; lane < width; ++lane) panel[p * width + lane] = 0.0f;
    }
  }
}

/* Packs rows [row0, row0 + rows) × depth [k0, k0 + depth) of A_batch into micro-panels of
 * GEMM_MICRO_ROWS rows, one after the other. */
static void pack_a_block(const gemm_plan* plan, int64_t batch, int64_t row0, int64_t rows, int64_t k0,
                         int64_t depth, float* packed) {
  const gemm_operand* a = &plan->a;
  int64_t panel_row;
  for (panel_row = 0; panel_row < rows; panel_row += GEMM_MICRO_ROWS) {
    int valid_rows = (int)min_i64(GEMM_MICRO_ROWS, rows - panel_row);
    int64_t first = batch * a->batch_stride + (row0 + panel_row) * a->row_step + k0 * a->col_step;
    pack_micro_panel(plan, a, first, a->row_step, a->col_step, valid_rows, GEMM_MICRO_ROWS, depth,
                     packed + panel_row * depth);
  }
}

/* Packs depth [k0, k0 + depth) × columns [col0, col0 + cols) of B_batch into micro-panels of
 * GEMM_MICRO_COLS columns. */
static void pack_b_block(const gemm_plan* plan, int64_t batch, int64_t k0, int64_t depth, int64_t col0,
                         int64_t cols, float* packed) {
  const gemm_operand* b = &plan->b;
  int64_t panel_col;
  for (panel_col = 0; panel_col < cols; panel_col += GEMM_MICRO_COLS) {
    int valid_cols = (int)min_i64(GEMM_MICRO_COLS, cols - panel_col);
    int64_t first = batch * b->batch_stride + k0 * b->row_step + (col0 + panel_col) * b->col_step;
    pack_micro_panel(plan, b, first, b->col_step, b->row_step, valid_cols, GEMM_MICRO_COLS, depth,
                     packed + panel_col * depth);
  }
}

/*
 * The micro-kernel: accumulator[i][j] += Σ_p a_panel[p][i] · b_panel[p][j] for a
 * GEMM_MICRO_ROWS × GEMM_MICRO_COLS block of the tile accumulator (row stride
 * GEMM_TILE_COLS). The block lives in a local array the compiler keeps in registers; the
 * j loop is the vectorized one.
 */
static void gemm_micro_kernel(int64_t depth, const float* restrict a_panel, const float* restrict b_panel,
                              float* restrict accumulator) {
  float block[GEMM_MICRO_ROWS][GEMM_MICRO_COLS];
  int64_t p;
  int i, j;
  for (i = 0; i < GEMM_MICRO_ROWS; ++i) {
    for (j = 0; j < GEMM_MICRO_COLS; ++j) block[i][j] = accumulator[i * GEMM_TILE_COLS + j];
  }
  for (p = 0; p < depth; ++p) {
    const float* a_step = a_panel + p * GEMM_MICRO_ROWS;
    const float* b_step = b_panel + p * GEMM_MICRO_COLS;
    for (i = 0; i < GEMM_MICRO_ROWS; ++i) {
      /* Vectorize along j, not along p: without this hint GCC 12 with AVX-512 (-march=native)
       * vectorizes the p loop as 32 in-order reductions full of permutes, 10x slower. */
#ifdef FLASHC_WITH_OPENMP
#pragma omp simd
#endif
      for (j = 0; j < GEMM_MICRO_COLS; ++j) block[i][j] += a_step[i] * b_step[j];
    }
  }
  for (i = 0; i < GEMM_MICRO_ROWS; ++i) {
    for (j = 0; j < GEMM_MICRO_COLS; ++j) accumulator[i * GEMM_TILE_COLS + j] = block[i][j];
  }
}

static float gemm_activation(const gemm_plan* plan, float x) {
  switch (plan->problem->activation) {
    case FLASHC_ACTIVATION_RELU:
      return x > 0.0f ? x : 0.0f;
    case FLASHC_ACTIVATION_GELU: {
      float inner = plan->gelu_tanh_scale * (x + GELU_CUBIC_COEFFICIENT * x * x * x);
      return 0.5f * x * (1.0f + tanhf(inner));
    }
    default:
      return x;
  }
}

/* Epilogue of one tile: D = act(product_scale · acc + beta · C + bias), rounded to d_dtype. */
static void gemm_store_tile(const gemm_plan* plan, int64_t batch, int64_t row0, int64_t rows, int64_t col0,
                            int64_t cols, const float* accumulator) {
  const fc_gemm_problem* problem = plan->problem;
  const flashc_dtype d_dtype = problem->d_dtype;
  const int read_c = problem->c != NULL && plan->beta != 0.0f;
  int64_t r, c;
  for (r = 0; r < rows; ++r) {
    const int64_t row = row0 + r;
    const int64_t d_row = batch * problem->stride_d + row * problem->ldd;
    const int64_t c_row = batch * problem->stride_c + row * problem->ldc;
    const float row_bias =
        problem->bias && problem->bias_per_row ? fc_load_f32(problem->bias, row, d_dtype) : 0.0f;
    for (c = 0; c < cols; ++c) {
      const int64_t col = col0 + c;
      float x = plan->product_scale * accumulator[r * GEMM_TILE_COLS + c];
      if (read_c) x += plan->beta * fc_load_f32(problem->c, c_row + col, d_dtype);
      if (problem->bias) x += problem->bias_per_row ? row_bias : fc_load_f32(problem->bias, col, d_dtype);
      fc_store_f32(problem->d, d_row + col, d_dtype, gemm_activation(plan, x));
    }
  }
}

/* Computes output tile `tile` (batch, row block, column block) with this thread's scratch. */
static void gemm_compute_tile(const gemm_plan* plan, int64_t tile, float* scratch) {
  const fc_gemm_problem* problem = plan->problem;
  const int64_t batch = tile / plan->tiles_per_batch;
  const int64_t tile_in_batch = tile % plan->tiles_per_batch;
  const int64_t row0 = (tile_in_batch / plan->tiles_per_row_block) * GEMM_TILE_ROWS;
  const int64_t col0 = (tile_in_batch % plan->tiles_per_row_block) * GEMM_TILE_COLS;
  const int64_t rows = min_i64(GEMM_TILE_ROWS, problem->m - row0);
  const int64_t cols = min_i64(GEMM_TILE_COLS, problem->n - col0);
  float* accumulator = scratch;                                   /* GEMM_TILE_ROWS × GEMM_TILE_COLS */
  float* packed_a = accumulator + GEMM_TILE_ROWS * GEMM_TILE_COLS; /* GEMM_TILE_ROWS × slice */
  float* packed_b = packed_a + GEMM_TILE_ROWS * GEMM_DEPTH_SLICE;  /* slice × GEMM_TILE_COLS */
  int64_t k0, panel_row, panel_col;

  memset(accumulator, 0, sizeof(float) * GEMM_TILE_ROWS * GEMM_TILE_COLS);
  for (k0 = 0; k0 < problem->k; k0 += GEMM_DEPTH_SLICE) {
    const int64_t depth = min_i64(GEMM_DEPTH_SLICE, problem->k - k0);
    pack_a_block(plan, batch, row0, rows, k0, depth, packed_a);
    pack_b_block(plan, batch, k0, depth, col0, cols, packed_b);
    /* Column panels outside, row panels inside: one B micro-panel stays in L1 while it meets
     * every A micro-panel of the block (which stream from L2). */
    for (panel_col = 0; panel_col < cols; panel_col += GEMM_MICRO_COLS) {
      for (panel_row = 0; panel_row < rows; panel_row += GEMM_MICRO_ROWS) {
        gemm_micro_kernel(depth, packed_a + panel_row * depth, packed_b + panel_col * depth,
                          accumulator + panel_row * GEMM_TILE_COLS + panel_col);
      }
    }
  }
  gemm_store_tile(plan, batch, row0, rows, col0, cols, accumulator);
}

static void gemm_plan_init(gemm_plan* plan, const fc_gemm_problem* problem) {
  int code;
  plan->problem = problem;
  plan->a = gemm_operand_make(problem->a, problem->ab_dtype, problem->a_layout, problem->lda,
                              problem->stride_a);
  plan->b = gemm_operand_make(problem->b, problem->ab_dtype, problem->b_layout, problem->ldb,
                              problem->stride_b);
  for (code = 0; code < 256; ++code) plan->e4m3_to_f32[code] = fc_e4m3_to_f32((uint8_t)code);
  plan->product_scale = problem->alpha * (problem->scale_a ? *problem->scale_a : 1.0f) *
                        (problem->scale_b ? *problem->scale_b : 1.0f);
  plan->beta = problem->c ? problem->beta : 0.0f;
  plan->gelu_tanh_scale = (float)sqrt(2.0 / GEMM_PI);
  plan->tiles_per_row_block = ceil_div(problem->n, GEMM_TILE_COLS);
  plan->tiles_per_batch = ceil_div(problem->m, GEMM_TILE_ROWS) * plan->tiles_per_row_block;
  plan->tile_count = plan->tiles_per_batch * problem->batch_count;
  /* Accumulator, packed A block, packed B block; rounded up to whole cache lines. */
  plan->scratch_floats_per_thread =
      (size_t)GEMM_TILE_ROWS * GEMM_TILE_COLS + (size_t)GEMM_TILE_ROWS * GEMM_DEPTH_SLICE +
      (size_t)GEMM_DEPTH_SLICE * GEMM_TILE_COLS;
  plan->scratch_floats_per_thread =
      (size_t)ceil_div((int64_t)plan->scratch_floats_per_thread, GEMM_SCRATCH_ALIGNMENT / sizeof(float)) *
      (GEMM_SCRATCH_ALIGNMENT / sizeof(float));
}

flashc_status fc_cpu_gemm(const fc_gemm_problem* problem) {
  gemm_plan plan;
  int thread_count;
  size_t scratch_bytes;
  void* scratch_allocation;
  float* scratch;

  if (problem->m <= 0 || problem->n <= 0 || problem->batch_count <= 0) return FLASHC_STATUS_SUCCESS;
  gemm_plan_init(&plan, problem);

  thread_count = fc_cpu_thread_count();
  if (thread_count < 1) thread_count = 1;
  if (plan.tile_count < thread_count) thread_count = (int)plan.tile_count;

  scratch_bytes = plan.scratch_floats_per_thread * sizeof(float) * (size_t)thread_count;
  scratch_allocation = malloc(scratch_bytes + GEMM_SCRATCH_ALIGNMENT);
  if (!scratch_allocation) {
    return fc_fail(FLASHC_STATUS_OUT_OF_MEMORY, "gemm: could not allocate %zu bytes of CPU scratch",
                   scratch_bytes);
  }
  scratch = (float*)(((uintptr_t)scratch_allocation + GEMM_SCRATCH_ALIGNMENT - 1) &
                     ~(uintptr_t)(GEMM_SCRATCH_ALIGNMENT - 1));

#ifdef FLASHC_WITH_OPENMP
#pragma omp parallel num_threads(thread_count)
#endif
  {
    int thread_index = 0;
    int64_t tile;
#ifdef FLASHC_WITH_OPENMP
    thread_index = omp_get_thread_num();
#endif
    float* thread_scratch = scratch + (size_t)thread_index * plan.scratch_floats_per_thread;
    /* Dynamic: edge tiles are smaller, and the tile count rarely divides evenly. */
#ifdef FLASHC_WITH_OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
    for (tile = 0; tile < plan.tile_count; ++tile) gemm_compute_tile(&plan, tile, thread_scratch);
  }

  free(scratch_allocation);
  return FLASHC_STATUS_SUCCESS;
}
