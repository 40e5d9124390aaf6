/*
 * launch.h — the boundary between host C and the CUDA kernels: the only kernel-side
 * declarations host code sees. Each family offers a `check` (can it run this validated
 * problem on this device? a NOT_SUPPORTED* status and the reason in *why_not otherwise;
 * it sets no thread-local error, so the host can probe several families), a workspace
 * size, and a `run` that launches on the stream (failures through fc_fail). Kernel templates stay in
 * src/kernels; the definitions are extern "C" in the family's launch .cu file.
 */
#ifndef FLASHC_KERNELS_LAUNCH_H
#define FLASHC_KERNELS_LAUNCH_H

#include <stddef.h>

#include "flashc.h"
#include "host/problem.h"
#include "host/tensor_map.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernels whose attributes (the dynamic shared-memory limit) a handle has already set on its
 * device: one bit per kernel instantiation. Owned (and zeroed) by the handle; a launcher sets
 * a kernel's bit with an atomic OR after its cudaFuncSetAttribute succeeded, so later launches
 * skip the call and concurrent first calls on one handle at worst both set the attribute.
 * Bit ranges: 0–63 Hopper GEMM, 64–127 portable GEMM, 128–191 attention forward, 192–255 free
 * (src/kernels/common/kernel_attributes.cuh). */
#define FC_KERNEL_ATTRIBUTE_WORDS 4
typedef struct fc_kernel_attribute_cache {
  unsigned long long set[FC_KERNEL_ATTRIBUTE_WORDS];
} fc_kernel_attribute_cache;

/* What a launcher knows about its device; filled once when the handle is created. */
typedef struct fc_cuda_context {
  int device;
  int cc_major, cc_minor;
  int sm_count;
  size_t shared_memory_per_block_optin;
  size_t l2_cache_bytes;
  fc_tensor_map_encoder tensor_map_encoder;
  fc_kernel_attribute_cache* attributes; /* the handle's (mutable); NULL: set them at every launch */
  int gemm_hopper_block_n; /* 0: the tile heuristic; 256, 128 or 64 force that 16-bit tile width,
                              128 or 144 that e4m3 width (tests and benchmarks set it on their
                              handle) */
  int gemm_hopper_chains;   /* the 16-bit 128 × 256 tile's WGMMA chains per k-step
                               (gemm_hopper_config.cuh): 0 two where every CTA has one whole plain
                               tile into a TMA-stored 16-bit D, else one; 1 or 2 force that count
                               on every 256-wide 16-bit launch (tests, benchmarks) */
  int gemm_hopper_group_m;  /* 0: the launcher's tile-order group (gemm_hopper_launch.cu,
                               group_m_for); > 0 forces that many tile rows per group (tests,
                               benchmarks) */
  int gemm_hopper_stream_k; /* 0: stream-K where the cost model predicts a gain; 1: wherever the
                               tiles leave a partial last round; -1: never (tests, benchmarks) */
  int gemm_portable_stream_k; /* the portable GEMM's stream-K tail (gemm_portable_stream_k.cuh): 0
                                 where the cost model predicts a gain; 1 the 128 × 256 tile on every
                                 problem and the tail wherever its grid leaves a partial wave (B
                                 column-major, one batch); -1 never (tests, benchmarks) */
  int attn_stream_k;        /* the attention forward's stream-K tail (attn_fwd_stream_k.cuh): 0 where
                               the cost model predicts a gain; 1 wherever a uniform grid leaves a
                               partial last round; -1 never (tests, benchmarks) */
  unsigned long long* launch_counter; /* the handle's (mutable, atomic): fc_launch_tag */
  unsigned long long launch_salt;     /* per handle, from its address and creation time */
  int attn_bwd_block;      /* 0: the largest attention-backward block the shared memory takes;
                              64 or 32 force it (a head dim without that instance is refused) —
                              so gpu_attn_bwd covers the 32-blocks on GPUs that never pick them */
} fc_cuda_context;

/* The SM count the launchers plan with (at least 1, so that a rule dividing by it stays defined). */
static inline long long fc_sm_count(const fc_cuda_context* context) {
  return context->sm_count > 0 ? context->sm_count : 1;
}

/* A persistent grid for `tiles` handed out round robin over at most `slots` CTAs: the fewest
 * CTAs that take them in the same number of rounds, ceil(tiles / ceil(tiles / slots)), so that
 * every CTA runs the same number of tiles (0 for no tiles). The GEMM's and the attention
 * forward's launchers use it where no stream-K tail or dynamic counter is planned (measured in
 * docs/PERF.md, 33rd session). */
static inline long long fc_round_robin_grid(long long tiles, long long slots) {
  const long long rounds = (tiles + slots - 1) / slots;
  return rounds > 0 ? (tiles + rounds - 1) / rounds : 0;
}

/* A 64-bit tag that no other launch of any handle shares (up to a 2^-64 chance): the salt
 * plus the handle's launch count, mixed (splitmix64's finalizer, a bijection), never 0. Kernels
 * that signal between CTAs through flags in a caller's workspace write the tag as the raised
 * value, so stale flags of earlier launches (or any other bytes) never read as raised and the
 * flags need no clearing before a launch (the Hopper GEMM's stream-K, gemm_hopper_stream_k.cuh). */
static inline unsigned long long fc_launch_tag(const fc_cuda_context* context) {
  unsigned long long x = context->launch_salt + __atomic_fetch_add(context->launch_counter, 1ull, __ATOMIC_RELAXED);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x ? x : 1ull;
}

/* Why a kernel family cannot run a problem, for the message the host reports. */
typedef struct fc_reason {
  char text[256];
} fc_reason;

#ifdef FLASHC_WITH_CUDA

/* GEMM, Hopper TMA + WGMMA (src/kernels/gemm/, sm_90a). */
flashc_status fc_gemm_hopper_check(const fc_gemm_problem* problem, const fc_cuda_context* context,
                                   fc_reason* why_not);
size_t fc_gemm_hopper_workspace_size(const fc_gemm_problem* problem, const fc_cuda_context* context);
/* The launch plan the run would use for a problem fc_gemm_hopper_check accepts (for tests of
 * the launcher's rules, tests/cpu_gemm_plan.c; no GPU needed): the tile, the WGMMA chains of
 * the 256-wide 16-bit tile (1 or 2), whether the last partial round is spread by stream-K,
 * whether D is stored by TMA, the tile order's group (tile rows), the tiles and the persistent
 * grid. */
typedef struct fc_gemm_plan_info {
  int block_m, block_n, chains, stream_k, d_tma, group_m;
  long long tiles, grid;
} fc_gemm_plan_info;
void fc_gemm_hopper_plan_info(const fc_gemm_problem* problem, const fc_cuda_context* context,
                              fc_gemm_plan_info* info);
flashc_status fc_gemm_hopper_run(const fc_gemm_problem* problem, const fc_cuda_context* context, void* workspace,
                                 void* stream);

/* GEMM, portable cp.async + mma.sync (src/kernels/gemm/, files named _sm80.cu; sm_80 and newer). */
flashc_status fc_gemm_portable_check(const fc_gemm_problem* problem, const fc_cuda_context* context,
                                     fc_reason* why_not);
size_t fc_gemm_portable_workspace_size(const fc_gemm_problem* problem, const fc_cuda_context* context);
flashc_status fc_gemm_portable_run(const fc_gemm_problem* problem, const fc_cuda_context* context, void* workspace,
                                   void* stream);

/* GEMM, the fallback that takes any problem the validation accepts (any alignment, any
 * dtype the GPU takes): correct, not fast. Used when neither path above can run. */
flashc_status fc_gemm_fallback_run(const fc_gemm_problem* problem, const fc_cuda_context* context, void* stream);

/* Attention forward, Hopper TMA + WGMMA (src/kernels/attn/, sm_90a). The workspace holds the
 * dynamic tile scheduler's counter and, with split-KV, the fp32 partials that the run merges
 * with fc_attn_combine_cuda_run (0 bytes when the problem needs neither). */
flashc_status fc_attn_fwd_hopper_check(const fc_attn_problem* problem, const fc_cuda_context* context,
                                       fc_reason* why_not);
/* What the kernel runs, for flashc_handle_kernels() (head dims from its instance list). */
void fc_attn_fwd_hopper_describe(char* out, size_t capacity);
size_t fc_attn_fwd_hopper_workspace_size(const fc_attn_problem* problem, const fc_cuda_context* context);
/* The launch plan the run would use for a problem fc_attn_fwd_hopper_check accepts (for tests
 * of the launcher's rules, tests/cpu_attn_plan.c; no GPU needed): the instance (consumer
 * warpgroups, key-block width), its CTAs per SM, the tiles, the split count and the grid. */
typedef struct fc_attn_fwd_plan_info {
  int consumers, block_n, ctas_per_sm, num_splits;
  long long tiles, grid;
} fc_attn_fwd_plan_info;
void fc_attn_fwd_hopper_plan_info(const fc_attn_problem* problem, const fc_cuda_context* context,
                                  fc_attn_fwd_plan_info* info);
flashc_status fc_attn_fwd_hopper_run(const fc_attn_problem* problem, const fc_cuda_context* context, void* workspace,
                                     void* stream);

/* Attention backward on tensor cores, mma.sync (src/kernels/attn/attn_bwd_*; sm_80 and newer), deterministic.
 * The workspace holds D (one fp32 per query row and head). */
flashc_status fc_attn_bwd_portable_check(const fc_attn_problem* problem, const fc_cuda_context* context,
                                         fc_reason* why_not);
size_t fc_attn_bwd_portable_workspace_size(const fc_attn_problem* problem, const fc_cuda_context* context);
flashc_status fc_attn_bwd_portable_run(const fc_attn_problem* problem, const fc_cuda_context* context, void* workspace,
                                       void* stream);

/* Split-KV combine (src/kernels/attn/attn_combine_*; sm_80 and newer): launches on the stream. */
flashc_status fc_attn_combine_cuda_run(const fc_combine_problem* problem, const fc_cuda_context* context, void* stream);

#endif /* FLASHC_WITH_CUDA */

#ifdef __cplusplus
}
#endif

#endif
