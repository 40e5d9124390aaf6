/*
 * cpu_gemm_plan.c — the Hopper GEMM's launch rules (src/kernels/gemm/gemm_hopper_launch.cu),
 * asked through fc_gemm_hopper_plan_info on a device that is only described (an sm_90 context
 * with the H200's 132 SMs), so it runs without a GPU. Each case names a problem and what the
 * launcher must pick for it, each pick measured to pay (docs/PERF.md):
 *   - the tile width (choose_tile: 256 for M ≥ 2048, narrower where wide tiles leave SMs idle;
 *     e4m3 128, 144 (also at near-ties, at its measured rate) or 112);
 *   - stream-K where the cost model predicts a gain for the last partial round;
 *   - the persistent grid: every SM with stream-K, else the fewest CTAs that keep the rounds
 *     (persistent_grid, 33rd session: 4096³ on 128 CTAs);
 *   - two WGMMA chains for the 256-wide 16-bit tile only where every CTA has one whole plain
 *     tile into a TMA-stored 16-bit D (chains_for, 33rd session), or as the handle forces;
 *   - the tile order's group: 8 tile rows, 16 for e4m3 on the 144-wide tile (34th session), 4 on
 *     the 112-wide one (42nd session), at most the problem's tile rows, or as forced.
 * And for every case: 1 ≤ grid ≤ SMs and grid ≤ tiles. A rule changed on purpose changes its
 * case here, with the measurement that moved it.
 */
#include <stdio.h>
#include <string.h>

#include "described_device.h"
#include "kernels/launch.h"

typedef struct plan_case {
  const char* name;
  int m, n, k, batch;
  flashc_dtype in, out;
  int with_c;       /* beta != 0 (C read) */
  int ldd_pad;      /* elements added to D's leading dimension (rows off 16 bytes: direct stores) */
  int forced_block_n, forced_chains, forced_group_m;
  int block_n, chains, stream_k, group_m; /* expected */
  long long grid;                /* expected */
} plan_case;

#define BF16 FLASHC_DTYPE_BF16
#define FP16 FLASHC_DTYPE_FP16
#define FP32 FLASHC_DTYPE_FP32
#define E4M3 FLASHC_DTYPE_E4M3

static const plan_case CASES[] = {
    /* one round of 128 tiles: two chains when plain into a TMA-stored 16-bit D, one otherwise */
    {"2048^3 bf16 plain", 2048, 2048, 2048, 1, BF16, BF16, 0, 0, 0, 0, 0, 256, 2, 0, 8, 128},
    {"2048^3 fp16 plain", 2048, 2048, 2048, 1, FP16, FP16, 0, 0, 0, 0, 0, 256, 2, 0, 8, 128},
    {"2048^3 bf16 with beta*C", 2048, 2048, 2048, 1, BF16, BF16, 1, 0, 0, 0, 0, 256, 1, 0, 8, 128},
    {"2048^3 bf16 into fp32", 2048, 2048, 2048, 1, BF16, FP32, 0, 0, 0, 0, 0, 256, 1, 0, 8, 128},
    {"2048^3 bf16, D rows off 16 bytes", 2048, 2048, 2048, 1, BF16, BF16, 0, 1, 0, 0, 0, 256, 1, 0, 8, 128},
    {"2048^3 bf16, one chain forced", 2048, 2048, 2048, 1, BF16, BF16, 0, 0, 0, 1, 0, 256, 1, 0, 8, 128},
    /* whole rounds on the fewest CTAs: 4096^3's 512 tiles on 128 CTAs x 4 */
    {"4096^3 bf16", 4096, 4096, 4096, 1, BF16, BF16, 0, 0, 0, 0, 0, 256, 1, 0, 8, 128},
    {"4096^3 bf16, two chains forced", 4096, 4096, 4096, 1, BF16, BF16, 0, 0, 0, 2, 0, 256, 2, 0, 8, 128},
    {"2048 x 4096 x 4096 bf16 (2 tiles per CTA)", 2048, 4096, 4096, 1, BF16, BF16, 0, 0, 0, 0, 0, 256, 1, 0, 8, 128},
    {"300 x 520 x 512 x 50 bf16, 256 forced", 300, 520, 512, 50, BF16, BF16, 0, 0, 256, 0, 0, 256, 1, 0, 3, 113},
    /* stream-K tails keep every SM */
    {"8192^3 bf16", 8192, 8192, 8192, 1, BF16, BF16, 0, 0, 0, 0, 0, 256, 1, 1, 8, 132},
    {"4096 x 4096 x 14336 bf16", 4096, 4096, 14336, 1, BF16, BF16, 0, 0, 0, 0, 0, 256, 1, 1, 8, 132},
    /* narrow tiles where wide ones leave SMs idle; fewer tiles than SMs: one CTA per tile */
    {"1024^3 bf16", 1024, 1024, 1024, 1, BF16, BF16, 0, 0, 0, 0, 0, 64, 1, 0, 8, 128},
    {"300 x 520 x 200 bf16, 256 forced", 300, 520, 200, 1, BF16, BF16, 0, 0, 256, 0, 0, 256, 2, 0, 3, 9},
    {"300 x 520 x 200 bf16, 256 forced, beta*C", 300, 520, 200, 1, BF16, BF16, 1, 0, 256, 0, 0, 256, 1, 0, 3, 9},
    /* e4m3: 112 at 4096^3 into a 16-bit D (9 rounds on all 132 SMs, where 128 runs 8 on 128), 128
       into fp32 (8 whole rounds on 128 CTAs) or forced, 144 with the stream-K tail and groups of
       16 tile rows at 8192^3 (groups of 4 on the 112-wide tile, 42nd session) */
    {"e4m3 4096^3", 4096, 4096, 4096, 1, E4M3, BF16, 0, 0, 0, 0, 0, 112, 1, 0, 4, 132},
    {"e4m3 4096^3 into fp32", 4096, 4096, 4096, 1, E4M3, FP32, 0, 0, 0, 0, 0, 128, 1, 0, 8, 128},
    {"e4m3 4096^3, 128 forced", 4096, 4096, 4096, 1, E4M3, BF16, 0, 0, 128, 0, 0, 128, 1, 0, 8, 128},
    /* the tile order's group forced (bench_gemm --group-m), and kept within the tile rows */
    {"4096^3 bf16, group of 16 forced", 4096, 4096, 4096, 1, BF16, BF16, 0, 0, 0, 0, 16, 256, 1, 0, 16, 128},
    {"2048^3 bf16, group of 40 forced", 2048, 2048, 2048, 1, BF16, BF16, 0, 0, 0, 0, 40, 256, 2, 0, 16, 128},
    {"e4m3 8192^3", 8192, 8192, 8192, 1, E4M3, BF16, 0, 0, 0, 0, 0, 144, 1, 1, 16, 132},
    /* e4m3 near-ties go to 144 at its measured rate (1.006 of 128's per FLOP; 38th session:
       +1.0 % at 6144^3, +1.2 % at 4096 x 14336 x 4096); 8192 x 4096 x 14336 keeps 128 (15 rounds
       of 144 against 16 of 128: forced 144 ran 3 % slower). 4096 x 14336 x 4096 keeps its thin
       stream-K tail (20 tiles of 144 left; +0.9 % against off, 39th session) */
    {"e4m3 6144^3", 6144, 6144, 6144, 1, E4M3, BF16, 0, 0, 0, 0, 0, 144, 1, 1, 16, 132},
    {"e4m3 4096 x 14336 x 4096", 4096, 14336, 4096, 1, E4M3, BF16, 0, 0, 0, 0, 0, 144, 1, 1, 16, 132},
    {"e4m3 8192 x 4096 x 14336", 8192, 4096, 14336, 1, E4M3, BF16, 0, 0, 0, 0, 0, 128, 1, 1, 8, 132},
    /* the stream-K model's thin tails (39th session, forced on against off): a tail of rest tiles
       spread over 132 / rest CTAs collects a partial from each, and a round that leaves most SMs
       idle runs its tiles faster. e4m3 4096^3 on a forced 144: 4 tiles left, stream-K ran 15 %
       slower; e4m3 8192 x 4096 x 4096: 128 without stream-K runs whole rounds, so 112 (18 rounds
       on all SMs; +1.5 % against 128 with stream-K); bf16 2176 x 4096 x 2048 (128 wide, 16
       tiles left over 8 CTAs each): +1.9 % with stream-K since the tail waits for all its flags
       at once (4.4 % slower before); bf16 8192 x 4096 x 4096 (100 tiles left) keeps it (+0.6 %) */
    {"e4m3 4096^3, 144 forced (4 tiles left)", 4096, 4096, 4096, 1, E4M3, BF16, 0, 0, 144, 0, 0, 144, 1, 0, 16, 116},
    {"e4m3 8192 x 4096 x 4096", 8192, 4096, 4096, 1, E4M3, BF16, 0, 0, 0, 0, 0, 112, 1, 0, 4, 132},
    {"bf16 2176 x 4096 x 2048 (16 tiles left)", 2176, 4096, 2048, 1, BF16, BF16, 0, 0, 0, 0, 0, 128, 1, 1, 8, 132},
    {"bf16 8192 x 4096 x 4096 (100 tiles left)", 8192, 4096, 4096, 1, BF16, BF16, 0, 0, 0, 0, 0, 256, 1, 1, 8, 132},
};

static fc_gemm_problem problem_of(const plan_case* c) {
  /* Addresses stand for aligned buffers: the plan reads only their alignment. */
  static const uint64_t operand_buffer[8] __attribute__((aligned(256))) = {0};
  static uint64_t output_buffer[8] __attribute__((aligned(256)));
  fc_gemm_problem p;
  memset(&p, 0, sizeof p);
  p.m = c->m, p.n = c->n, p.k = c->k, p.batch_count = c->batch;
  p.ab_dtype = c->in, p.d_dtype = c->out;
  p.a_layout = FLASHC_ROW_MAJOR, p.b_layout = FLASHC_COL_MAJOR; /* K-major operands */
  p.a = p.b = operand_buffer;
  p.d = output_buffer;
  p.c = c->with_c ? (const void*)output_buffer : NULL;
  p.activation = FLASHC_ACTIVATION_NONE;
  p.lda = p.ldb = c->k;
  p.ldd = p.ldc = c->n + c->ldd_pad;
  const int64_t d_span = (int64_t)c->m * p.ldd;
  p.stride_a = (int64_t)c->m * c->k, p.stride_b = (int64_t)c->n * c->k;
  p.stride_c = p.stride_d = c->batch > 1 ? (d_span + 7) / 8 * 8 : 0;
  p.alpha = 1.0f, p.beta = c->with_c ? 1.0f : 0.0f;
  return p;
}

int main(void) {
  fc_cuda_context context = described_h200();
  const int count = (int)(sizeof CASES / sizeof CASES[0]);
  int failed = 0;
  for (int i = 0; i < count; ++i) {
    const plan_case* c = &CASES[i];
    const fc_gemm_problem p = problem_of(c);
    context.gemm_hopper_block_n = c->forced_block_n;
    context.gemm_hopper_chains = c->forced_chains;
    context.gemm_hopper_group_m = c->forced_group_m;
    fc_gemm_plan_info info;
    fc_gemm_hopper_plan_info(&p, &context, &info);
    const int ok = info.block_n == c->block_n && info.chains == c->chains && info.stream_k == c->stream_k &&
                   info.group_m == c->group_m && info.grid == c->grid && info.grid >= 1 && info.grid <= H200_SMS && info.grid <= info.tiles;
    if (!ok) ++failed;
    printf("%-4s %-44s %dx%d tile (want %d wide), %d chain(s) (want %d), stream-K %d (want %d), d_tma %d, "
           "group %d (want %d), %lld tiles, grid %lld (want %lld)\n",
           ok ? "ok" : "FAIL", c->name, info.block_m, info.block_n, c->block_n, info.chains, c->chains, info.stream_k,
           c->stream_k, info.d_tma, info.group_m, c->group_m, info.tiles, info.grid, c->grid);
  }
  printf("cpu_gemm_plan: %d cases, %d failed\n", count, failed);
  return failed ? 1 : 0;
}
