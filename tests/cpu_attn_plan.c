/*
 * cpu_attn_plan.c — the Hopper attention forward's launch rules (src/kernels/attn/attn_fwd_launch.cu),
 * asked through fc_attn_fwd_hopper_plan_info on a device that is only described (an sm_90
 * context with 132 SMs, the H200's), so it runs without a GPU. Each case names a problem and
 * the instance the launcher must pick for it, because each pick was measured to pay there
 * (docs/PERF.md): the one-consumer instances (64-row tiles, three CTAs per SM; d64 only) for masked problems whose rows see few keys and that have two tiles per SM; the 4- and
 * 3-consumer d64 instances for short and long unmasked problems; the 2-consumer ones elsewhere,
 * with the narrow blocks of d128 (128 keys) and d256 (64) for masked problems up to 8192 / 2048
 * attended keys and where the padding model with a masked tail's cost picks them.
 * And for every case: the grid fits the CTA slots (SMs × CTAs per SM) and the tiles; for four,
 * the grid itself (round robin over a partial round takes fewer CTAs, GRIDS below).
 * A rule changed on purpose changes its case here, with the measurement that moved it.
 */
#include <stdio.h>
#include <string.h>

#include "described_device.h"
#include "kernels/launch.h"

typedef struct plan_case {
  const char* name;
  int head_dim, seqlen_q, seqlen_k, batch, heads_q, heads_kv;
  int window_left, window_right; /* causal: (-1, 0) */
  int page_size;                 /* 0: not paged */
  int consumers, block_n;        /* expected */
  int varlen;                    /* cu_seqlens given (seqlen_q/k then the longest sequence) */
} plan_case;

static const plan_case CASES[] = {
    /* causal d64 up to 8192 keys: one consumer, 64-key blocks to 1024 keys, 80 above */
    {"causal d64 512", 64, 512, 512, 32, 32, 32, -1, 0, 0, 1, 64, 0},
    {"causal d64 1k", 64, 1024, 1024, 16, 32, 32, -1, 0, 0, 1, 64, 0},
    {"causal d64 2k", 64, 2048, 2048, 8, 32, 32, -1, 0, 0, 1, 80, 0},
    {"causal d64 4k", 64, 4096, 4096, 4, 32, 32, -1, 0, 0, 1, 80, 0},
    {"causal d64 8k", 64, 8192, 8192, 2, 32, 32, -1, 0, 0, 1, 80, 0},
    {"causal d64 16k", 64, 16384, 16384, 1, 32, 32, -1, 0, 0, 2, 192, 0},
    /* unmasked d64: 4 consumers below 2048 keys and with both lengths in 2048-3071, 3 from 3072 */
    {"full d64 512", 64, 512, 512, 32, 32, 32, -1, -1, 0, 4, 64, 0},
    {"full d64 2k", 64, 2048, 2048, 8, 32, 32, -1, -1, 0, 4, 64, 0},
    {"full d64 2k queries, 4k keys", 64, 2048, 4096, 8, 32, 32, -1, -1, 0, 3, 112, 0},
    {"full d64 3k", 64, 3072, 3072, 4, 32, 32, -1, -1, 0, 3, 112, 0},
    {"full d64 4k", 64, 4096, 4096, 4, 32, 32, -1, -1, 0, 3, 112, 0},
    /* sliding windows: the span a row attends to, not seqlen_k */
    {"d64 window 256 at 16k", 64, 16384, 16384, 1, 32, 32, 256, 0, 0, 1, 64, 0},
    {"d64 window 2048 at 8k", 64, 8192, 8192, 2, 32, 32, 2048, 0, 0, 1, 80, 0},
    {"d64 window 4096 at 16k (4097 keys)", 64, 16384, 16384, 1, 32, 32, 4096, 0, 0, 1, 80, 0},
    {"d64 window 8192 at 16k (8193 keys)", 64, 16384, 16384, 1, 32, 32, 8192, 0, 0, 2, 192, 0},
    /* too few tiles to share SMs: 16 queries × 4 heads per KV head = one packed tile each */
    {"causal d64 GQA 16 queries, 4k keys", 64, 16, 4096, 16, 32, 8, -1, 0, 0, 2, 192, 0},
    {"causal d64 1k, 2 heads", 64, 1024, 1024, 1, 2, 2, -1, 0, 0, 2, 128, 0},
    /* pages that fit no one-consumer width fall back to the 2-consumer one they fit */
    {"causal d64 1k paged 96", 64, 1024, 1024, 16, 32, 32, -1, 0, 96, 2, 192, 0},
    /* d128: no one-consumer instance (removed in the 24th session): windows on two consumers */
    {"d128 window 256 at 8k", 128, 8192, 8192, 2, 16, 16, 256, 0, 0, 2, 128, 0},
    {"d128 window (1000, 200) at 8k", 128, 8192, 8192, 2, 16, 16, 1000, 200, 0, 2, 128, 0},
    {"d128 window 2048 at 8k", 128, 8192, 8192, 2, 16, 16, 2048, 0, 0, 2, 128, 0},
    {"causal d128 512", 128, 512, 512, 32, 16, 16, -1, 0, 0, 2, 128, 0},
    /* d128 on two consumers: masked problems up to 8192 attended keys on the narrowest blocks,
     * the rest by the padding model with the masked tail's cost */
    {"causal d128 2k", 128, 2048, 2048, 8, 16, 16, -1, 0, 0, 2, 128, 0},
    {"causal d128 8k", 128, 8192, 8192, 2, 16, 16, -1, 0, 0, 2, 128, 0},
    {"causal d128 16k", 128, 16384, 16384, 1, 16, 16, -1, 0, 0, 2, 160, 0},
    {"d128 window 8192 at 16k (8193 keys)", 128, 16384, 16384, 1, 16, 16, 8192, 0, 0, 2, 160, 0},
    {"full d128 1k", 128, 1024, 1024, 16, 16, 16, -1, -1, 0, 2, 128, 0},
    {"full d128 2k (160 leaves a masked tail)", 128, 2048, 2048, 8, 16, 16, -1, -1, 0, 2, 128, 0},
    {"full d128 2560 (160 divides it)", 128, 2560, 2560, 6, 16, 16, -1, -1, 0, 2, 160, 0},
    {"full d128 4k", 128, 4096, 4096, 4, 16, 16, -1, -1, 0, 2, 160, 0},
    /* varlen d128 causal: the narrow blocks only up to 6144 keys */
    {"causal d128 varlen, longest 6k", 128, 6144, 6144, 4, 16, 16, -1, 0, 0, 2, 128, 1},
    {"causal d128 varlen, longest 8k", 128, 8192, 8192, 4, 16, 16, -1, 0, 0, 2, 160, 1},
    /* d256: 64-key blocks for masked problems up to 2048 attended keys and for full 512 */
    {"full d256 512", 256, 512, 512, 32, 8, 8, -1, -1, 0, 2, 64, 0},
    {"full d256 1k", 256, 1024, 1024, 16, 8, 8, -1, -1, 0, 2, 80, 0},
    {"causal d256 2k", 256, 2048, 2048, 8, 8, 8, -1, 0, 0, 2, 64, 0},
    {"causal d256 4k", 256, 4096, 4096, 4, 8, 8, -1, 0, 0, 2, 80, 0},
    /* no one-consumer instance */
    {"causal d96 512", 96, 512, 512, 32, 16, 16, -1, 0, 0, 2, 128, 0},
};

static fc_attn_problem problem_of(const plan_case* c) {
  fc_attn_problem p;
  memset(&p, 0, sizeof p);
  p.dtype = p.out_dtype = FLASHC_DTYPE_BF16;
  p.batch = c->batch;
  p.seqlen_q = c->seqlen_q, p.seqlen_k = c->seqlen_k;
  p.heads_q = c->heads_q, p.heads_kv = c->heads_kv;
  p.head_dim = p.head_dim_v = c->head_dim;
  p.softmax_scale = 1.0f;
  p.window_left = c->window_left, p.window_right = c->window_right;
  p.is_causal = c->window_left < 0 && c->window_right == 0;
  p.num_splits = 1, p.num_splits_auto = 1; /* the caller's 0: the launcher's own rule */
  p.pack_gqa = -1;
  if (c->varlen) { /* only their presence matters to the plan */
    static const int32_t cu_seqlens[2] = {0, 0};
    p.cu_seqlens_q = p.cu_seqlens_k = cu_seqlens;
  }
  if (c->page_size) { /* only the page geometry matters to the plan */
    static const int32_t page_table[1] = {0};
    p.page_table = page_table;
    p.page_size = c->page_size;
    p.max_pages = (c->seqlen_k + c->page_size - 1) / c->page_size;
    p.num_pages = p.max_pages * c->batch;
  }
  return p;
}

/* Persistent grids (attn_fwd_launch.cu, plan_for): round robin over a partial last round takes
 * the fewest CTAs that keep the rounds (d256's 1024 tiles: 8 rounds on 128 CTAs, measured
 * +0.6–1.5 %); the dynamic counter (d <= 128) and the stream-K tail keep every slot. */
static const struct {
  const char* name;
  long long grid;
} GRIDS[] = {{"full d256 512", 128}, {"full d256 1k", 128}, {"full d128 1k", 132}, {"full d128 4k", 132}};

int main(void) {
  fc_cuda_context context = described_h200();
  const int count = (int)(sizeof CASES / sizeof CASES[0]);
  int failed = 0;
  for (int i = 0; i < count; ++i) {
    const plan_case* c = &CASES[i];
    const fc_attn_problem p = problem_of(c);
    fc_attn_fwd_plan_info info;
    fc_attn_fwd_hopper_plan_info(&p, &context, &info);
    const long long slots = (long long)H200_SMS * info.ctas_per_sm;
    const int expected_ctas = c->consumers != 1 ? 1 : c->head_dim <= 64 ? 3 : 2;
    const int ok = info.consumers == c->consumers && info.block_n == c->block_n &&
                   info.ctas_per_sm == expected_ctas && info.grid >= 1 && info.grid <= slots &&
                   info.grid <= info.tiles * info.num_splits;
    if (!ok) ++failed;
    printf("%-4s %-40s consumers %d (want %d), %3d-key blocks (want %d), %d CTA(s)/SM, %lld tiles, %d split(s), grid %lld\n",
           ok ? "ok" : "FAIL", c->name, info.consumers, c->consumers, info.block_n, c->block_n, info.ctas_per_sm,
           info.tiles, info.num_splits, info.grid);
    for (size_t g = 0; g < sizeof GRIDS / sizeof GRIDS[0]; ++g)
      if (!strcmp(GRIDS[g].name, c->name) && info.grid != GRIDS[g].grid) {
        ++failed;
        printf("FAIL %-40s grid %lld, want %lld\n", c->name, info.grid, GRIDS[g].grid);
      }
  }
  printf("cpu_attn_plan: %d cases, %d failed\n", count, failed);
  return failed ? 1 : 0;
}
