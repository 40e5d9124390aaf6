/*
 * attn_fwd_launch.cu — the extern "C" side of the Hopper attention forward (src/kernels/launch.h):
 *   fc_attn_fwd_hopper_check   can the TMA + WGMMA kernel run this validated problem? (else why)
 *   fc_attn_fwd_hopper_run     tensor maps, softmax constants, the persistent grid (plan_for), launch;
 *                              with split-KV, then the combine kernel on the same stream
 *
 * Tensor maps are 4-D (d, rows, heads, batch) for K and V and 5-D (d, heads in a pack, rows,
 * packs, batch) for Q (pack-GQA, pack_shift_for) with the tensor's own element strides, so any
 * layout the API accepts (packed, padded, heads-major, packed QKV) is loaded without copies;
 * with cu_seqlens the rows are the packed total and the batch extent is 1. Boxes are one
 * swizzle span of columns × BLOCK_M (Q) or BLOCK_N (K, V) rows (attn_fwd_config.cuh).
 * The key-block width is chosen per problem among the built ones (block_n_for: padding of
 * the last block against each block's fixed cost; short masked problems the narrowest).
 * Causal, local and varlen problems use the dynamic tile scheduler: its counter is the
 * workspace (fc_attn_fwd_hopper_workspace_size), cleared on the stream before the launch.
 * Split-KV (num_splits S > 1, or num_splits = 0 and splits_for_problem's heuristic picks
 * S > 1): S tiles per query tile (attn_fwd_scheduler.cuh) write fp32 partial O and LSE into
 * the workspace after the tile counter (workspace_layout_for), in flashc_attn_combine's
 * default layout; then fc_attn_combine_cuda_run merges them into o and lse on the same stream
 * (stream order makes the combine wait for the forward kernel).
 * Uniform problems (no mask, fixed lengths, unsplit) whose tiles leave the persistent grid's
 * last round partly empty may run the stream-K tail (plan_stream_k's cost model; the kernel
 * with the tail, ATTN_FWD_STREAM_K_INSTANCES): its slots and flags follow in the workspace.
 * Refused here, with the reason: devices other than sm_90, dtypes other than fp16/bf16 (e4m3
 * is the FP8 issue's kernel), an output dtype other than the input's, head dims outside
 * ATTN_FWD_INSTANCES and paged KV whose page size fits no key-block width (pages_fit_block).
 * Paged KV otherwise loads each key block page by page (attn_fwd_load_kv).
 * Check: tests/gpu/gpu_attn_fwd.c (also asserts these refusals).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime.h>

#include "flashc.h"
#include "host/error.h"
#include "host/problem.h"
#include "host/tensor_map.h"
#include "kernels/attn/attn_fwd_config.cuh"
#include "kernels/attn/attn_fwd_instances.cuh"
#include "kernels/attn/attn_fwd_params.cuh"
#include "kernels/attn/attn_fwd_stream_k.cuh"
#include "kernels/launch.h"

namespace {

typedef cudaError_t (*attn_fwd_launcher)(const attn_fwd_params&, int, cudaStream_t, const fc_cuda_context*);

/* Does the build have an instance for (d, d_v)? */
bool head_dims_built(int head_dim, int head_dim_v) {
#define ATTN_FWD_BUILT(d, dv, n, c) \
  if (head_dim == d && head_dim_v == dv) return true;
  ATTN_FWD_INSTANCES(ATTN_FWD_BUILT)
#undef ATTN_FWD_BUILT
  return false;
}

/* Is p masked — causal or a local window (causal is window (−1, 0))? The rules below that
 * choose instances, widths and the scheduler ask it. */
bool has_window(const fc_attn_problem* p) { return p->window_left >= 0 || p->window_right >= 0; }

/* A key block's fixed cost (barrier waits, row reductions, O rescale) in key-equivalents
 * times d: ~18 keys at d128 and ~36 at d64, fitted to the H200 A/B of 128- against 160- and
 * 192-key blocks at 16k (bf16, 2026-11-29; attn_fwd_instances.cuh). */
constexpr int BLOCK_OVERHEAD_KEY_DIMS = 2304;
/* ... and what a width costs when it does not divide seqlen_k: the last block needs element
 * masks in every tile (where a dividing width runs no mask code at all) and is partly padding
 * (counted above). The masking is work per element of the block, the block's other work per
 * element × d, so the extra cost is BLOCK_N × this / d keys: 30 keys for a 160-key block at
 * d128, 7.5 for an 80-key one at d256. H200, ab_attn, bf16 / fp16 (24th session): d128 full,
 * 128- against 160-key blocks, 2048 (160 leaves 128 of 160 keys) +1.5–1.6 % for 128 in three
 * measurements; 4096 (96 of 160) −0.5 %, 8192 (32) −2.5 %, 16384 (64) −3.6 %, where the blocks'
 * fixed cost outweighs it; d256 full, 64- against 80-key blocks, 512 +2.2 / +2.1 %, 1024 (80
 * leaves 64 of 80) −1.2 %, 2048 ±0. */
constexpr int TAIL_MASK_DIMS = 24;

/* Problems at least this long in queries and keys, without a mask, run on the 3-consumer
 * (192-row) instance of their (d, d_v) where one is built. H200 A/B against the 2-consumer
 * instances, d64 bf16, 2026-11-30: +2.5–5 % at seqlen 2k–16k without a mask; −2 % causal 16k
 * (unequal tiles), −8 % at 512–1k (a 192-row tile pads a short sequence). */
constexpr int WIDE_TILE_MIN_SEQLEN = 2048;

/* Shorter unmasked problems (keys below WIDE_TILE_MIN_SEQLEN, at least this many queries) run
 * on the 4-consumer (256-row, 64-key) instance where one is built: H200 A/B against the
 * 2-consumer instance, d64 bf16 (13th/14th sessions): +12 % at 512, +8 % at 1k; against the
 * 3-consumer one from 2k on −0.5 to −10 %. Below 256 queries a 256-row tile is mostly padding. */
constexpr int FOUR_CONSUMER_MIN_SEQLEN_Q = 256;

/* ... and the 4-consumer instance also takes unmasked problems whose queries and keys both lie
 * in [WIDE_TILE_MIN_SEQLEN, FOUR_CONSUMER_BAND_END): there a 192-row tile pads a sequence by
 * 3–5 % (2048 rows are 10.7 tiles), more than the 64-key blocks cost at such lengths. H200,
 * ab_attn, d64 bf16, 4 against 3 consumers at seqlen_q = seqlen_k (23rd session): 2048 +3.2 %
 * (fp16 +3.7 %), 2560 +1.7 %, 3072 −2.2 % (fp16 −2.4 %), 3584 −3.3 %, 4096 −0.7 %, 6144
 * −5.0 %, 8192 −6.0 %. */
constexpr int FOUR_CONSUMER_BAND_END = 3072;

/* d64 masked problems (causal, local) whose rows attend to at most this many keys (attended_keys:
 * seqlen_k for causal, the window's span for local ones) run on the one-consumer
 * instances (64-row tiles, three CTAs per SM: attn_fwd_ctas_per_sm) where one is built: 64-key
 * blocks up to ONE_CONSUMER_NARROW_MAX_ATTENDED_KEYS, 80-key blocks above. H200, d64 bf16
 * causal against the 2-consumer instance (19th session, ab_attn): 64-key blocks 512 / 1k / 2k /
 * 4k +21 / +13 / +6 / −3 %, 80-key blocks +13 / +11 / +8 / +1 %; sliding windows (left w,
 * right 0) w = 128 at 1k +42 %, 256 at 4k / 16k +39 / +63 %, 512 at 2k +26 %, 1024 at 4k / 16k
 * +15 / +14 %, 2048 at 8k +5 %. Unmasked problems keep the 4- and 3-consumer instances: one
 * consumer lost 10–16 % to them at 512–4k. Re-tuned in the 23rd session, after the conditional
 * rescale sped the one-consumer instances up (ab_attn, bf16 / fp16, against 4096): causal 8k
 * +2.8 / +2.7 %, 16k +0.7 / +0.4 % (noise: 16k stays on two consumers); 64-key blocks to 2k
 * −0.9 / −0.7 %, 80-key blocks from 1k −2.7 / −2.7 % (both bounds stay). */
constexpr int ONE_CONSUMER_MAX_ATTENDED_KEYS = 8192;
constexpr int ONE_CONSUMER_NARROW_MAX_ATTENDED_KEYS = 1024;
/* ... and only with at least this many of its tiles per SM: its gain is CTAs sharing an SM.
 * A causal GQA problem of 16 queries × 4 heads per KV head and 4k keys (128 tiles) ran 3 %
 * slower on it than on the 2-consumer instance. */
constexpr int64_t ONE_CONSUMER_MIN_TILES_PER_SM = 2;
/* (d128 had a one-consumer instance too, 64-key blocks and two CTAs per SM, for sliding windows
 * of at most 1280 attended keys: +4 to +29 % against the 2-consumer 160-key blocks in the 19th
 * session. Once masked d128 problems took 128-key blocks (MASKED_NARROW_MAX_ATTENDED_KEYS) the
 * 2-consumer instance beat it — H200, ab_attn, bf16 (24th session): window 128 at 8k +2.2 %,
 * 256 at 8k / 16k −1.2 / −0.9 % (fp16 −1.2 %), 512 at 8k +5.2 % (fp16 +5.6 %), 512 at 2k
 * +3.6 %, 768 at 4k +9.2 %, 1024 at 8k / 16k +11.6 / +11.8 %, (1000, 200) at 8k +8.6 % — so it
 * was removed: two translation units fewer.) */

/* Masked problems on the 2-consumer instances whose rows attend to at most this many keys take
 * the narrowest width, not the padding model's. With 128-key blocks under 128-row tiles the
 * causal diagonal (and a window edge a multiple of 128 away) falls into one key block per tile,
 * with 160-key blocks into two in four tiles of five: more masked blocks and more of each
 * padding, which the model does not count. H200, ab_attn, d128 causal, 128- against 160-key
 * blocks (24th session; bf16 / fp16): 2k +5.5 / +6.2 %, 4k +3.0 / +2.9 %, 6k +1.7 %, 8k +1.0 /
 * +1.0 %, 12k ±0, 16k −1.0 / −0.5 % (so 12k and above keep the model's wide blocks); a left
 * window of 2048 at 8k +6.2 / +6.2 %. Not for d64 (128- or 192-key blocks; its masked problems
 * reach two consumers only when they are small or above 8192 keys): causal GQA with 16 queries
 * × 4 heads packed per tile and 4k keys −4.1 / −3.3 %, 4k keys × 4 heads −0.0 / −4.1 %, 2k keys
 * × 8 heads +1.8 / +1.6 %. */
constexpr int MASKED_NARROW_MAX_ATTENDED_KEYS = 8192;
constexpr int MASKED_NARROW_MIN_HEAD_DIM = 96;
/* ... above d128 (d256: 64- or 80-key blocks, where 64 puts the diagonal into two blocks per
 * tile and 80 into two or three), up to this many. H200, ab_attn, d256 causal, 64 against 80
 * (24th session; bf16 / fp16): 512 +5.0 %, 1k +2.1 / +2.6 %, 2k +0.9 %, 4k −0.6 / +0.1 %, 8k
 * −0.3 / −0.5 %. */
constexpr int MASKED_NARROW_MAX_ATTENDED_KEYS_WIDE_HEAD = 2048;
/* ... and with variable lengths (cu_seqlens_k or seqused_k: attended keys are the longest
 * sequence's), d128 up to this many. H200, ab_attn --varlen (lengths uniform in [L/2, L]),
 * 128- against 160-key blocks, bf16 (24th session): L = 2k × 8 +9.3 % (another draw ±0, fp16),
 * 4k × 4 +5.8 %, 4k × 8 −0.7 %, 6k × 2 +2.8 %, but 8k × 2 −6.0 / −3.1 % (fp16 −3.2 %), 8k × 3
 * −4.9 %, 8k × 4 −2.7 %; why 8k differs from fixed-length 8k (+1.0–1.7 %) is not known. */
constexpr int MASKED_NARROW_MAX_ATTENDED_KEYS_VARLEN = 6144;

/* The most attended keys up to which masked problem p takes the narrowest width on the
 * 2-consumer instances (0: never, and for unmasked problems). */
int masked_narrow_max_attended_keys(const fc_attn_problem* p) {
  if (!has_window(p) || p->head_dim < MASKED_NARROW_MIN_HEAD_DIM) return 0;
  if (p->head_dim > 128) return MASKED_NARROW_MAX_ATTENDED_KEYS_WIDE_HEAD;
  return p->cu_seqlens_k || p->seqused_k ? MASKED_NARROW_MAX_ATTENDED_KEYS_VARLEN : MASKED_NARROW_MAX_ATTENDED_KEYS;
}

/* Can a key block of `block_n` keys be loaded from pages of `page_size` rows (0: not paged)?
 * Whole blocks inside one page (page_size a multiple of block_n), or whole pages inside one
 * block (block_n a multiple of page_size, itself a multiple of 8 so that every page's box
 * starts on a swizzle atom of the slot). */
bool pages_fit_block(int page_size, int block_n) {
  if (page_size == 0) return true;
  return page_size % block_n == 0 || (block_n % page_size == 0 && page_size % 8 == 0);
}

/* Pack-GQA (FlashAttention-3's pack_gqa): the query heads of one KV head share a tile when the
 * group is a power of two dividing BLOCK_M. pack_gqa = 1 asks for it wherever possible; −1
 * (default) takes it when it means fewer tiles (short queries: a decode step with 8 query heads
 * per KV head runs 1 tile instead of 8); 0 never. The result is the same either way. Returns
 * log2 of the pack (0: none). */
int pack_shift_for(const fc_attn_problem* p, int block_m) {
  const int group = p->heads_q / p->heads_kv;
  if (p->pack_gqa == 0 || group <= 1 || (group & (group - 1)) != 0 || block_m % group != 0) return 0;
  const int64_t unpacked_tiles = static_cast<int64_t>((p->seqlen_q + block_m - 1) / block_m) * group;
  const int64_t packed_tiles = (static_cast<int64_t>(p->seqlen_q) * group + block_m - 1) / block_m;
  if (p->pack_gqa < 0 && packed_tiles >= unpacked_tiles) return 0;
  int shift = 0;
  while ((1 << shift) < group) ++shift;
  return shift;
}

/* How problem p maps onto tiles of block_m rows: query rows packed 2^pack_shift query heads deep
 * (pack_shift_for), m_blocks query blocks per head slot, and the unsplit tile count. */
struct tile_count {
  int pack_shift;
  int64_t packed_rows, m_blocks, tiles;
};

tile_count count_tiles(const fc_attn_problem* p, int block_m) {
  tile_count t;
  t.pack_shift = pack_shift_for(p, block_m);
  t.packed_rows = static_cast<int64_t>(p->seqlen_q) << t.pack_shift;
  t.m_blocks = (t.packed_rows + block_m - 1) / block_m;
  t.tiles = t.m_blocks * (p->heads_q >> t.pack_shift) * p->batch;
  return t;
}

/* The key-block widths built for (d, d_v) with `consumers` consumer warpgroups that fit pages
 * of page_size rows (0: not paged), in increasing order (the instance list's); their count.
 * MAX_WIDTHS is the whole list's length, so no (d, d_v, consumers) can overflow the array. */
#define ATTN_FWD_COUNT_ONE(d, dv, n, c) +1
constexpr int MAX_WIDTHS = 0 ATTN_FWD_INSTANCES(ATTN_FWD_COUNT_ONE);
#undef ATTN_FWD_COUNT_ONE
int block_widths(int head_dim, int head_dim_v, int consumers, int page_size, int (&widths)[MAX_WIDTHS]) {
  int count = 0;
#define ATTN_FWD_WIDTH(d, dv, n, c)                                                           \
  if (head_dim == d && head_dim_v == dv && consumers == c && pages_fit_block(page_size, n)) \
    widths[count++] = n;
  ATTN_FWD_INSTANCES(ATTN_FWD_WIDTH)
#undef ATTN_FWD_WIDTH
  return count;
}

/* May the key loop end a sequence with narrow blocks (attn_fwd_params::narrow_tail; the kernel
 * also needs the NARROW_TAIL instance and a length that is a multiple of its NARROW_STEP)? Only
 * without masks (their blocks' key positions are BLOCK_N apart) and without pages (whose boxes
 * start at multiples of BLOCK_N). */
bool narrow_tail_allowed(const fc_attn_problem* p) {
  return !has_window(p) && p->page_table == NULL;
}

/* The key-block width for (d, d_v), the consumer count, the keys a row attends to (`keys`), the
 * most keys up to which the narrowest width is taken (`narrow_up_to`:
 * masked_narrow_max_attended_keys) and the page size (0: not paged), among block_widths; 0 when
 * none is built or fits. The multi-consumer instances take the narrowest up to narrow_up_to
 * keys, else the width that minimizes blocks × (BLOCK_N + per-block overhead) + a masked tail's
 * cost over `keys`, i.e. padding of the last block against the fixed cost of each (ties to the
 * wider). The
 * one-consumer ones, whose masked 64-row tiles that model does not describe, take the
 * narrowest up to ONE_CONSUMER_NARROW_MAX_ATTENDED_KEYS attended keys and the widest above
 * (measured, see there). */
int block_n_for(int head_dim, int head_dim_v, int consumers, int keys, int narrow_up_to, int page_size) {
  int widths[MAX_WIDTHS];
  const int count = block_widths(head_dim, head_dim_v, consumers, page_size, widths);
  if (count == 0) return 0;
  if (consumers == 1) return keys <= ONE_CONSUMER_NARROW_MAX_ATTENDED_KEYS ? widths[0] : widths[count - 1];
  if (narrow_up_to > 0 && keys <= narrow_up_to) return widths[0];
  const int64_t padded_keys = keys > 0 ? keys : 1;
  int best = 0;
  int64_t best_cost = 0;
  for (int i = 0; i < count; ++i) {
    const int n = widths[i];
    /* in key-dims (keys × d) */
    const int64_t cost = (padded_keys + n - 1) / n * (static_cast<int64_t>(n) * head_dim + BLOCK_OVERHEAD_KEY_DIMS) +
                         (padded_keys % n != 0 ? n * TAIL_MASK_DIMS : 0);
    if (best == 0 || cost <= best_cost) best = n, best_cost = cost;
  }
  return best;
}

/* The most keys one query row can see: seqlen_k, or fewer under a window (causal is window
 * (−1, 0): every key up to the diagonal). What the one-consumer rules below measure a masked
 * problem by: a tile's key loop is about this long whatever seqlen_k is. */
int attended_keys(const fc_attn_problem* p) {
  const int64_t left = p->window_left >= 0 ? p->window_left : p->seqlen_k;
  const int64_t right = p->window_right >= 0 ? p->window_right : p->seqlen_k;
  const int64_t span = left + right + 1;
  return static_cast<int>(span < p->seqlen_k ? span : p->seqlen_k);
}

/* Consumer warpgroups for problem p: for a problem with a window (causal or local), 1 where
 * ONE_CONSUMER_MAX_ATTENDED_KEYS's rules hold and a one-consumer instance is built for (d, d_v)
 * (d64 only),
 * else 2 (the 3- and 4-consumer instances mask only the seqlen_k tail: attn_fwd_tile::WINDOWS).
 * Without: 3 where WIDE_TILE_MIN_SEQLEN's rule holds (outside FOUR_CONSUMER_BAND_END's band) and
 * a 3-consumer instance is built, 4 where FOUR_CONSUMER_MIN_SEQLEN_Q's or FOUR_CONSUMER_BAND_END's
 * rule holds and a 4-consumer instance is built, else 2. */
int consumers_for_problem(const fc_attn_problem* p, const fc_cuda_context* context) {
  if (has_window(p)) {
    int widths[MAX_WIDTHS];
    const bool one_consumer_built = block_widths(p->head_dim, p->head_dim_v, 1, 0, widths) != 0; /* (d64 only) */
    if (attended_keys(p) > ONE_CONSUMER_MAX_ATTENDED_KEYS || !one_consumer_built) return 2;
    const int64_t tiles = count_tiles(p, ATTN_FWD_ROWS_PER_CONSUMER).tiles;
    return tiles >= ONE_CONSUMER_MIN_TILES_PER_SM * static_cast<int64_t>(fc_sm_count(context)) ? 1 : 2;
  }
  const bool in_four_consumer_band = p->seqlen_q < FOUR_CONSUMER_BAND_END && p->seqlen_k < FOUR_CONSUMER_BAND_END;
  const int consumers = p->seqlen_k < WIDE_TILE_MIN_SEQLEN   ? (p->seqlen_q >= FOUR_CONSUMER_MIN_SEQLEN_Q ? 4 : 2)
                        : p->seqlen_q < WIDE_TILE_MIN_SEQLEN ? 2
                        : in_four_consumer_band              ? 4
                                                             : 3;
  int widths[MAX_WIDTHS];
  return consumers != 2 && block_widths(p->head_dim, p->head_dim_v, consumers, 0, widths) != 0 ? consumers : 2;
}

/* The instance for problem p, (d, d_v) aside: its consumer count (consumers_for_problem's, or
 * 2 when paged KV fits only those widths) and key-block width; block_n = 0 when no built width
 * fits its pages. */
struct instance_choice {
  int consumers, block_n;
};

instance_choice instance_for_problem(const fc_attn_problem* p, const fc_cuda_context* context) {
  const int page_size = p->page_table ? p->page_size : 0;
  instance_choice choice;
  choice.consumers = consumers_for_problem(p, context);
  /* the keys a row attends to: seqlen_k without a mask */
  const int keys = attended_keys(p);
  const int narrow_up_to = masked_narrow_max_attended_keys(p);
  choice.block_n = block_n_for(p->head_dim, p->head_dim_v, choice.consumers, keys, narrow_up_to, page_size);
  if (choice.block_n == 0 && choice.consumers != 2) {
    choice.consumers = 2;
    choice.block_n = block_n_for(p->head_dim, p->head_dim_v, 2, keys, narrow_up_to, page_size);
  }
  return choice;
}

/* Is (d, d_v, BLOCK_N, consumers) built (ATTN_FWD_INSTANCES), and also with the stream-K tail
 * (ATTN_FWD_STREAM_K_INSTANCES)? */
#define ATTN_FWD_MATCH(d, dv, n, c) \
  if (head_dim == d && head_dim_v == dv && block_n == n && consumers == c) return true;
bool instance_built(int head_dim, int head_dim_v, int block_n, int consumers) {
  ATTN_FWD_INSTANCES(ATTN_FWD_MATCH)
  return false;
}

bool stream_k_built(int head_dim, int head_dim_v, int block_n, int consumers) {
  ATTN_FWD_STREAM_K_INSTANCES(ATTN_FWD_MATCH)
  return false;
}

#undef ATTN_FWD_MATCH

/* The narrow blocks a sequence of seqlen_k keys ends in on the narrow stream-K kernel of (d, d_v,
 * BLOCK_N, consumers) (attn_fwd_tile::narrow_blocks, the kernel's own rule); 0 when that kernel
 * is not built. */
int stream_k_narrow_blocks(int head_dim, int head_dim_v, int block_n, int consumers, int seqlen_k) {
#define ATTN_FWD_NARROW_BLOCKS(d, dv, n, c)                                  \
  if (head_dim == d && head_dim_v == dv && block_n == n && consumers == c) \
    return attn_fwd_tile<d, dv, n, c, ATTN_FWD_KIND_STREAM_K_NARROW>::narrow_blocks(seqlen_k);
  ATTN_FWD_STREAM_K_NARROW_INSTANCES(ATTN_FWD_NARROW_BLOCKS)
#undef ATTN_FWD_NARROW_BLOCKS
  return 0;
}

/* The kernel kind for problem p under plan (p, plan.stream_k): plain without the stream-K tail;
 * with it, the narrow stream-K kernel where one is built and p's sequences end in narrow blocks,
 * else the stream-K kernel without narrow blocks: the narrow kernel ran those 2 % slower
 * (2560 × 6, H200, 25th session). */
int kind_for(const fc_attn_problem* p, int block_n, int consumers, bool stream_k) {
  if (!stream_k) return ATTN_FWD_KIND_PLAIN;
  const bool narrow = narrow_tail_allowed(p) &&
                      stream_k_narrow_blocks(p->head_dim, p->head_dim_v, block_n, consumers, p->seqlen_k) > 0;
  return narrow ? ATTN_FWD_KIND_STREAM_K_NARROW : ATTN_FWD_KIND_STREAM_K;
}

/* The kernel for (dtype, d, d_v, BLOCK_N, consumers) of kind `kind` (attn_fwd_kind), or NULL
 * when it is not built. */
attn_fwd_launcher launcher_for(flashc_dtype dtype, int head_dim, int head_dim_v, int block_n, int consumers,
                               int kind) {
  const int bf16 = dtype == FLASHC_DTYPE_BF16;
#define ATTN_FWD_PICK_KIND(d, dv, n, c, k)                                                                        \
  if (head_dim == d && head_dim_v == dv && block_n == n && consumers == c && kind == k)                           \
    return bf16 ? attn_fwd_launch_kernel<ATTN_INPUT_BF16, d, dv, n, c, k> : attn_fwd_launch_kernel<ATTN_INPUT_F16, d, dv, n, c, k>;
#define ATTN_FWD_PICK(d, dv, n, c) ATTN_FWD_PICK_KIND(d, dv, n, c, ATTN_FWD_KIND_PLAIN)
#define ATTN_FWD_PICK_SK(d, dv, n, c) ATTN_FWD_PICK_KIND(d, dv, n, c, ATTN_FWD_KIND_STREAM_K)
#define ATTN_FWD_PICK_SKN(d, dv, n, c) ATTN_FWD_PICK_KIND(d, dv, n, c, ATTN_FWD_KIND_STREAM_K_NARROW)
  ATTN_FWD_INSTANCES(ATTN_FWD_PICK)
  ATTN_FWD_STREAM_K_INSTANCES(ATTN_FWD_PICK_SK)
  ATTN_FWD_STREAM_K_NARROW_INSTANCES(ATTN_FWD_PICK_SKN)
#undef ATTN_FWD_PICK
#undef ATTN_FWD_PICK_SK
#undef ATTN_FWD_PICK_SKN
#undef ATTN_FWD_PICK_KIND
  return nullptr;
}

/* Tile sizes of an instance (host side of attn_fwd_config.cuh). */
struct tile_info {
  int block_m, block_n, qk_box_inner, v_box_inner;
  fc_tensor_map_swizzle qk_swizzle, v_swizzle;
};

tile_info tile_for(int head_dim, int head_dim_v, int block_n, int consumers) {
  tile_info t;
  t.block_m = instance_built(head_dim, head_dim_v, block_n, consumers) ? consumers * ATTN_FWD_ROWS_PER_CONSUMER : 0;
  t.block_n = block_n;
  const smem_swizzle qk = attn_fwd_swizzle(head_dim * 2), v = attn_fwd_swizzle(head_dim_v * 2);
  t.qk_swizzle = static_cast<fc_tensor_map_swizzle>(static_cast<int>(qk));
  t.v_swizzle = static_cast<fc_tensor_map_swizzle>(static_cast<int>(v));
  t.qk_box_inner = static_cast<int>(qk) / 2;
  t.v_box_inner = static_cast<int>(v) / 2;
  return t;
}

/* "(64, 64), (96, 96), ...": each built (d, d_v) pair once. */
void list_head_dims(char* out, size_t cap) {
  size_t used = 0;
  int last_d = 0, last_dv = 0;
  out[0] = '\0';
#define ATTN_FWD_NAME(d, dv, n, c)                                                                        \
  if ((d != last_d || dv != last_dv) && used < cap)                                                      \
    used += (size_t)snprintf(out + used, cap - used, used ? ", (%d, %d)" : "(%d, %d)", d, dv);           \
  last_d = d, last_dv = dv;
  ATTN_FWD_INSTANCES(ATTN_FWD_NAME)
#undef ATTN_FWD_NAME
}

/* A 4-D map (dim, rows, heads, batches) over one of q, k, v. An extent of 1 gets a harmless
 * stride (never stepped); empty extents become 1 (nothing is loaded from them). */
flashc_status encode_tensor(const fc_cuda_context* context, flashc_dtype dtype, const void* base, int dim,
                            int64_t rows, int heads, int64_t batches, int64_t row_stride, int64_t head_stride,
                            int64_t batch_stride, uint32_t box_inner, uint32_t box_rows, fc_tensor_map_swizzle swizzle,
                            CUtensorMap* map) {
  fc_tensor_map_desc desc;
  fc_tensor_map_desc_init(&desc);
  desc.dtype = dtype;
  desc.rank = 4;
  desc.global_address = base;
  desc.global_dims[0] = static_cast<uint64_t>(dim);
  desc.global_dims[1] = static_cast<uint64_t>(rows > 0 ? rows : 1);
  desc.global_dims[2] = static_cast<uint64_t>(heads);
  desc.global_dims[3] = static_cast<uint64_t>(batches > 0 ? batches : 1);
  const int64_t element_bytes = static_cast<int64_t>(flashc_dtype_size(dtype));
  const int64_t unit = fc_tensor_map_unit_extent_stride(row_stride, element_bytes);
  desc.global_strides[0] = 1;
  desc.global_strides[1] = rows > 1 ? row_stride : unit;
  desc.global_strides[2] = heads > 1 ? head_stride : unit;
  desc.global_strides[3] = batches > 1 ? batch_stride : unit;
  desc.box_dims[0] = box_inner;
  desc.box_dims[1] = box_rows;
  desc.box_dims[2] = 1;
  desc.box_dims[3] = 1;
  desc.swizzle = swizzle;
  desc.l2_promotion = FC_TENSOR_MAP_L2_256B;
  desc.oob_fill = FC_TENSOR_MAP_OOB_ZERO;
  return fc_tensor_map_encode_tiled(&context->tensor_map_encoder, &desc, map);
}

/* Tiles of unequal cost (masks that cut tiles short, varlen) take the dynamic scheduler
 * (attn_fwd_scheduler.cuh), whose tile counter lives in the workspace; so do uniform plans that
 * leave the persistent grid's last round partial without the stream-K tail (tile_plan::dynamic). */
bool has_unequal_tiles(const fc_attn_problem* p) {
  return has_window(p) || p->cu_seqlens_q || p->cu_seqlens_k || p->seqused_q || p->seqused_k;
}

/* The dynamic scheduler's counter (an int) and ready flag (8 bytes, 8-aligned inside: a
 * caller's workspace pointer may be anything), padded to an allocation-friendly size. */
constexpr size_t TILE_COUNTER_BYTES = 256;

/* num_splits = 0 (automatic), FlashAttention-3's rule in its simplest form: split only when the
 * unsplit tiles fill less than AUTO_SPLIT_FILL_PERCENT of the SMs (FA3's 0.8 wave; a fuller
 * grid gains little and pays the partials' round trip and the combine), into as many splits
 * as one wave holds (floor(SMs / tiles): no second, partial wave), at most one split per
 * AUTO_SPLIT_MIN_KEY_BLOCKS key blocks (a split's fixed cost — Q load, pipeline fill, fp32
 * epilogue — is worth a couple of key blocks) and at most AUTO_SPLIT_MAX (FA3's cap). */
constexpr int AUTO_SPLIT_FILL_PERCENT = 80;
constexpr int AUTO_SPLIT_MIN_KEY_BLOCKS = 2;
constexpr int AUTO_SPLIT_MAX = 128;

/* Resident CTAs of an instance with `consumers` consumer warpgroups over the whole GPU
 * (SMs × attn_fwd_ctas_per_sm): the persistent grid's size, and the tail order's unit. */
int64_t cta_slots(const fc_cuda_context* context, int head_dim, int consumers) {
  return static_cast<int64_t>(fc_sm_count(context)) * attn_fwd_ctas_per_sm(head_dim, consumers);
}

/* Split count for a problem of `tiles` unsplit tiles with key blocks of block_n keys: the
 * caller's num_splits, or the automatic rule above for num_splits = 0. Its wave is one tile
 * per SM, as it was calibrated, for the one-consumer instances (three CTAs per SM) too:
 * counting their CTA slots instead split a causal GQA problem of 128 tiles 3 ways, and that
 * gained nothing (H200, 19th session: −3 % split, −2.7 % unsplit, both against the 2-consumer
 * instance, which ONE_CONSUMER_MIN_TILES_PER_SM now leaves it on). */
int splits_for_problem(const fc_attn_problem* p, const fc_cuda_context* context, int64_t tiles, int block_n) {
  if (!p->num_splits_auto) return p->num_splits;
  const int64_t sms = fc_sm_count(context);
  if (tiles <= 0 || tiles * 100 >= sms * AUTO_SPLIT_FILL_PERCENT) return 1;
  const int64_t key_blocks = (static_cast<int64_t>(p->seqlen_k) + block_n - 1) / block_n;
  int64_t splits = sms / tiles;
  if (splits > key_blocks / AUTO_SPLIT_MIN_KEY_BLOCKS) splits = key_blocks / AUTO_SPLIT_MIN_KEY_BLOCKS;
  if (splits > AUTO_SPLIT_MAX) splits = AUTO_SPLIT_MAX;
  return splits >= 2 ? static_cast<int>(splits) : 1;
}

/* The tail order (attn_fwd_scheduler.cuh) for longest-first (causal/local) unsplit problems:
 * the last head slots interleaved so that the grid ends on the shortest tiles. Its size: about
 * TAIL_TILES_PER_SM tiles per SM (a greedy-schedule simulation of the causal grids, 512 to
 * 16k keys, d64-d256: ~3 tiles per SM keeps the SMs busy to 96-99.6 % of the makespan where
 * longest-first per head gives 88-97 %; smaller tails end on a mix of lengths again; per CTA
 * slot for the one-consumer instances, three CTAs per SM), and at
 * most as many heads as have their K and V within TAIL_L2_BUDGET_BYTES (the tail's heads are
 * all in flight at once; half of the H100/H200's 50 MB L2). */
constexpr int64_t TAIL_TILES_PER_SM = 3;
constexpr int64_t TAIL_L2_BUDGET_BYTES = 24ll << 20;

struct tail_order {
  int first_tile, first_head, heads;
};

tail_order tail_order_for(const fc_attn_problem* p, const fc_cuda_context* context, int consumers,
                          int64_t m_blocks, int64_t head_slots, int64_t tile_count, int splits) {
  const tail_order none = {static_cast<int>(tile_count), 0, 1};
  if (p->window_right < 0 || splits > 1 || m_blocks <= 0 || head_slots <= 1) return none;
  const int64_t slots = cta_slots(context, p->head_dim, consumers);
  int64_t heads = (TAIL_TILES_PER_SM * slots + m_blocks - 1) / m_blocks;
  const int64_t kv_bytes_per_head = static_cast<int64_t>(p->seqlen_k) * (p->head_dim + p->head_dim_v) *
                                    static_cast<int64_t>(flashc_dtype_size(p->dtype));
  const int64_t heads_in_budget = kv_bytes_per_head > 0 ? TAIL_L2_BUDGET_BYTES / kv_bytes_per_head : head_slots;
  if (heads > heads_in_budget) heads = heads_in_budget;
  if (heads > head_slots) heads = head_slots;
  if (heads <= 1) return none;
  const tail_order tail = {static_cast<int>((head_slots - heads) * m_blocks), static_cast<int>(head_slots - heads),
                           static_cast<int>(heads)};
  return tail;
}

/* Q or O as 5-D (d, heads in a pack, rows, packs, batches): a box of `pack` heads × box_rows /
 * pack rows covers tile rows in (row, head) order, row-major (attn_fwd_params.cuh). pack = 1 is
 * the plain layout. Q's box is the whole tile (BLOCK_M rows), O's one consumer's 64 rows. */
flashc_status encode_packed(const fc_cuda_context* context, flashc_dtype dtype, const void* base, int dim,
                            int64_t row_stride, int64_t head_stride, int64_t batch_stride, int heads, int64_t rows,
                            int64_t batches, int pack, int box_inner, int box_rows, fc_tensor_map_swizzle swizzle,
                            CUtensorMap* map) {
  fc_tensor_map_desc desc;
  fc_tensor_map_desc_init(&desc);
  desc.dtype = dtype;
  desc.rank = 5;
  desc.global_address = base;
  const int packs = heads / pack;
  desc.global_dims[0] = static_cast<uint64_t>(dim);
  desc.global_dims[1] = static_cast<uint64_t>(pack);
  desc.global_dims[2] = static_cast<uint64_t>(rows > 0 ? rows : 1);
  desc.global_dims[3] = static_cast<uint64_t>(packs);
  desc.global_dims[4] = static_cast<uint64_t>(batches > 0 ? batches : 1);
  const int64_t unit = fc_tensor_map_unit_extent_stride(row_stride, static_cast<int64_t>(flashc_dtype_size(dtype)));
  desc.global_strides[0] = 1;
  desc.global_strides[1] = pack > 1 ? head_stride : unit;
  desc.global_strides[2] = rows > 1 ? row_stride : unit;
  desc.global_strides[3] = packs > 1 ? head_stride * pack : unit;
  desc.global_strides[4] = batches > 1 ? batch_stride : unit;
  desc.box_dims[0] = static_cast<uint32_t>(box_inner);
  desc.box_dims[1] = static_cast<uint32_t>(pack);
  desc.box_dims[2] = static_cast<uint32_t>(box_rows / pack);
  desc.box_dims[3] = 1;
  desc.box_dims[4] = 1;
  desc.swizzle = swizzle;
  desc.l2_promotion = FC_TENSOR_MAP_L2_256B;
  desc.oob_fill = FC_TENSOR_MAP_OOB_ZERO;
  return fc_tensor_map_encode_tiled(&context->tensor_map_encoder, &desc, map);
}


/* The stream-K tail (attn_fwd_stream_k.cuh) of a uniform grid: tiles [first_tile, tiles) are
 * split into units of one key block, tile_blocks per tile, `units` in all, spread over the
 * plan's grid of CTAs (tile_plan::grid: the kernel's run arithmetic uses gridDim.x). */
struct stream_k_plan {
  bool on;
  int64_t first_tile, tile_blocks, units;
};

/* How a problem maps onto the instance's tiles: its tile count (count_tiles: the pack, query
 * blocks per head slot, unsplit tiles), the split count, the persistent grid (a CTA per slot,
 * cta_slots; at most one per tile of every split; fewer where round robin's rounds allow) and
 * the stream-K tail. Shared by the
 * workspace query and the launch so that both agree. */
struct tile_plan : tile_count {
  int block_n, consumers;
  tile_info tile;
  int num_splits;
  int64_t grid;
  stream_k_plan stream_k;
  /* Tiles handed out by the dynamic scheduler's counter rather than round robin: those of
   * unequal cost (has_unequal_tiles), and equal unsplit ones whose last round is partial
   * without the stream-K tail — there the SMs that are ahead take the last round's tiles,
   * where round robin gives them to fixed CTAs whatever their SM's speed (per-SM speed differs
   * by ~2.6 %, 22nd session). Only up to DYNAMIC_UNIFORM_MAX_HEAD_DIM. */
  bool dynamic;
};

/* The widest head dim whose uniform plans without the stream-K tail take the dynamic counter
 * (tile_plan::dynamic). H200, ab_attn against round robin, bf16, two calls (23rd session):
 * d128 full 512 / 1k +0.6–1.0 / +0.8–1.3 %, d64 full 512 +1.3–1.6 %, d96 1k ±0; d192 1k ±0,
 * d256 512 −0.6 % in both calls (not investigated).
 * With stream-K planned the tail wins (d64 1k −2.2 % dynamic instead). */
constexpr int DYNAMIC_UNIFORM_MAX_HEAD_DIM = 128;

/* The stream-K cost model, in key-block times of one CTA. A whole round of tiles takes
 * B + TILE_OVERHEAD (Q load, pipeline fill and drain, epilogue: ~2.5 blocks, the
 * per-tile fixed cost the schedule simulation of the causal tail order fitted, 15th session);
 * the split last round ⌈r · B / grid⌉ + 2 · TILE_OVERHEAD (a run touches up to two tiles) +
 * HANDOVER (publish O and the rows, wait, merge: ~1 block). Calibrated on the H200 (15th
 * session, bf16, ab_attn against whole tiles): on where the model predicts ≥ MIN_GAIN it won
 * 0.6–3.7 % (d128 full 2k–16k, d256 4k–16k, d64 1k and 4k); at 1k keys for d128/d192/d256
 * (8 or fewer blocks per tile) it predicts < 1 % and measured −1.1 to −3.3 %. */
constexpr double STREAM_K_TILE_OVERHEAD_BLOCKS = 2.5;
constexpr double STREAM_K_HANDOVER_BLOCKS = 1.0;
constexpr double STREAM_K_MIN_GAIN = 0.01;

stream_k_plan plan_stream_k(const fc_attn_problem* p, const fc_cuda_context* context, int64_t tiles, int splits,
                            int block_n, int consumers, int64_t grid) {
  stream_k_plan plan = {false, tiles, 0, 0};
  const int mode = context->attn_stream_k;
  if (mode < 0 || splits > 1 || has_unequal_tiles(p) || !stream_k_built(p->head_dim, p->head_dim_v, block_n, consumers))
    return plan;
  if (grid <= 0) return plan;
  const int64_t rest = tiles % grid, rounds = tiles / grid;
  const int64_t blocks = (static_cast<int64_t>(p->seqlen_k) + block_n - 1) / block_n;
  /* ⌈units / grid⌉ ≤ blocks holds since rest < grid: a run touches at most two tiles. The
   * device's run arithmetic stays in 32 bits (attn_fwd_stream_k_run_begin: cta · rest). */
  const int64_t units = rest * blocks, int_max = 0x7fffffff;
  if (rest == 0 || blocks < 2 || units > int_max || grid * grid > int_max) return plan;
  const double whole = static_cast<double>(rounds + 1) * (static_cast<double>(blocks) + STREAM_K_TILE_OVERHEAD_BLOCKS);
  const double split = static_cast<double>(rounds) * (static_cast<double>(blocks) + STREAM_K_TILE_OVERHEAD_BLOCKS) +
                       static_cast<double>((units + grid - 1) / grid) + 2.0 * STREAM_K_TILE_OVERHEAD_BLOCKS +
                       STREAM_K_HANDOVER_BLOCKS;
  if (mode == 0 && whole - split < STREAM_K_MIN_GAIN * whole) return plan;
  plan.on = true;
  plan.first_tile = rounds * grid;
  plan.tile_blocks = blocks;
  plan.units = units;
  return plan;
}

tile_plan plan_for(const fc_attn_problem* p, const fc_cuda_context* context) {
  tile_plan plan;
  const instance_choice instance = instance_for_problem(p, context);
  plan.block_n = instance.block_n;
  plan.consumers = instance.consumers;
  plan.tile = tile_for(p->head_dim, p->head_dim_v, plan.block_n, plan.consumers);
  if (plan.tile.block_m == 0) { /* no instance (fc_attn_fwd_hopper_check refuses it): no tiles */
    static_cast<tile_count&>(plan) = tile_count{0, 0, 0, 0};
    plan.num_splits = 1;
    plan.grid = 0;
    plan.stream_k = stream_k_plan{false, 0, 0, 0};
    plan.dynamic = false;
    return plan;
  }
  static_cast<tile_count&>(plan) = count_tiles(p, plan.tile.block_m);
  plan.num_splits = splits_for_problem(p, context, plan.tiles, plan.block_n);
  const int64_t split_tiles = plan.tiles * plan.num_splits;
  const int64_t slots = cta_slots(context, p->head_dim, plan.consumers);
  plan.grid = split_tiles < slots ? split_tiles : slots;
  plan.stream_k = plan_stream_k(p, context, plan.tiles, plan.num_splits, plan.block_n, plan.consumers, plan.grid);
  plan.dynamic = has_unequal_tiles(p) || (p->head_dim <= DYNAMIC_UNIFORM_MAX_HEAD_DIM && !plan.stream_k.on &&
                                          plan.num_splits == 1 && plan.grid > 0 && split_tiles > plan.grid &&
                                          split_tiles % plan.grid != 0);
  /* Round robin over a partial last round (no stream-K tail, no counter: d > 128): the fewest
   * CTAs that take the tiles in the same number of rounds, as the GEMM's persistent_grid does
   * (every CTA runs the same number of tiles; the makespan in tiles is unchanged). H200, ab_attn
   * against 132 CTAs, bf16, two calls (33rd session): d256 full 512 +0.6 / +0.8 %, 1k +0.8 /
   * +1.5 %, with unchanged controls at −0.7 to +0.8 %. With the dynamic counter it lost (d64 /
   * d128 full 512–2k −0.4 to −1.9 %): there the SMs that run ahead take the extra tiles. */
  if (!plan.dynamic && !plan.stream_k.on) plan.grid = fc_round_robin_grid(split_tiles, slots);
  return plan;
}

/* The workspace: the dynamic scheduler's tile counter at offset 0, then (split-KV) the fp32
 * partials in flashc_attn_combine's default layout, o_partial (S, batch, seqlen_q, heads_q,
 * d_v) and lse_partial (S, batch, heads_q, seqlen_q), each PARTIALS_ALIGNMENT-aligned (the
 * kernel stores float2; the slack covers a caller's workspace pointer that is not) — or, in the
 * same place (a split plan has no stream-K tail), the tail's slots and then its flags. */
constexpr size_t PARTIALS_ALIGNMENT = 256;

size_t round_up(size_t bytes, size_t alignment) { return (bytes + alignment - 1) / alignment * alignment; }

struct workspace_layout {
  size_t counter_bytes;     /* 0 or TILE_COUNTER_BYTES */
  size_t o_partial_bytes;   /* rounded up to PARTIALS_ALIGNMENT; 0 unsplit */
  size_t lse_partial_bytes; /* 0 unsplit */
  size_t sk_slot_bytes;     /* stream-K: the pieces' slots (then their flags), 0 without */
  size_t sk_flag_bytes;
  size_t total;             /* FLASHC_ATTN_TIMELINE builds: + 8 bytes of slack + the event
                               timeline, the last ATTN_FWD_TIMELINE_BYTES (attn_fwd_timeline.h) */
};

workspace_layout workspace_layout_for(const fc_attn_problem* p, const tile_plan& plan) {
  workspace_layout w;
  w.counter_bytes = plan.dynamic ? TILE_COUNTER_BYTES : 0;
  w.o_partial_bytes = w.lse_partial_bytes = 0;
  w.total = w.counter_bytes;
  if (plan.num_splits > 1) {
    const size_t rows = static_cast<size_t>(plan.num_splits) * static_cast<size_t>(p->batch) *
                        static_cast<size_t>(p->seqlen_q) * static_cast<size_t>(p->heads_q);
    w.o_partial_bytes = round_up(rows * static_cast<size_t>(p->head_dim_v) * sizeof(float), PARTIALS_ALIGNMENT);
    w.lse_partial_bytes = rows * sizeof(float);
    w.total += PARTIALS_ALIGNMENT + w.o_partial_bytes + w.lse_partial_bytes;
  }
  w.sk_slot_bytes = w.sk_flag_bytes = 0;
  if (plan.stream_k.on) { /* a slot and a flag per (CTA, consumer), PARTIALS_ALIGNMENT-aligned */
    const size_t slots = static_cast<size_t>(plan.grid) * static_cast<size_t>(plan.tile.block_m / ATTN_FWD_ROWS_PER_CONSUMER);
    w.sk_slot_bytes = slots * static_cast<size_t>(attn_fwd_stream_k_slot_bytes(p->head_dim_v));
    w.sk_flag_bytes = slots * sizeof(uint64_t);
    w.total += PARTIALS_ALIGNMENT + w.sk_slot_bytes + w.sk_flag_bytes;
  }
  /* 8-byte entries: a caller's workspace pointer may be anything, so 8 bytes of slack. */
  if (FLASHC_ATTN_TIMELINE) w.total += sizeof(uint64_t) + ATTN_FWD_TIMELINE_BYTES;
  return w;
}

}  // namespace

extern "C" void fc_attn_fwd_hopper_describe(char* out, size_t capacity) {
  char pairs[128];
  list_head_dims(pairs, sizeof pairs);
  snprintf(out, capacity,
           "hopper TMA+WGMMA (fp16/bf16; (d, d_v) %s; masks, softcap, GQA, varlen, paged KV, split-KV + combine; no e4m3 "
           "yet)",
           pairs);
}

extern "C" void fc_attn_fwd_hopper_plan_info(const fc_attn_problem* problem, const fc_cuda_context* context,
                                             fc_attn_fwd_plan_info* info) {
  const tile_plan plan = plan_for(problem, context);
  info->consumers = plan.consumers;
  info->block_n = plan.block_n;
  info->ctas_per_sm = attn_fwd_ctas_per_sm(problem->head_dim, plan.consumers);
  info->num_splits = plan.num_splits;
  info->tiles = plan.tiles;
  info->grid = plan.grid;
}

/* Valid for problems fc_attn_fwd_hopper_check accepts (the caller checks first). */
extern "C" size_t fc_attn_fwd_hopper_workspace_size(const fc_attn_problem* problem, const fc_cuda_context* context) {
  return workspace_layout_for(problem, plan_for(problem, context)).total;
}

extern "C" flashc_status fc_attn_fwd_hopper_check(const fc_attn_problem* p, const fc_cuda_context* context,
                                                  fc_reason* why_not) {
  if (context->cc_major != 9 || context->cc_minor != 0) {
    snprintf(why_not->text, sizeof why_not->text,
             "the attention forward kernel needs compute capability 9.0 (sm_90a, Hopper); this device is %d.%d",
             context->cc_major, context->cc_minor);
    return FLASHC_STATUS_NOT_SUPPORTED_ARCH;
  }
  if (!context->tensor_map_encoder.encode_tiled) {
    snprintf(why_not->text, sizeof why_not->text, "the CUDA driver offers no cuTensorMapEncodeTiled (TMA)");
    return FLASHC_STATUS_NOT_SUPPORTED;
  }
  if (p->dtype != FLASHC_DTYPE_FP16 && p->dtype != FLASHC_DTYPE_BF16) {
    snprintf(why_not->text, sizeof why_not->text,
             "the GPU attention forward takes fp16 or bf16 inputs in this build, not %s", flashc_dtype_name(p->dtype));
    return FLASHC_STATUS_NOT_SUPPORTED_DTYPE;
  }
  if (p->out_dtype != p->dtype) {
    snprintf(why_not->text, sizeof why_not->text,
             "out_dtype %s: the GPU attention forward writes o in the input dtype (%s)",
             flashc_dtype_name(p->out_dtype), flashc_dtype_name(p->dtype));
    return FLASHC_STATUS_NOT_SUPPORTED_DTYPE;
  }
  if (!head_dims_built(p->head_dim, p->head_dim_v)) {
    char built[128];
    list_head_dims(built, sizeof built);
    snprintf(why_not->text, sizeof why_not->text,
             "head_dim %d with head_dim_v %d is not built for the GPU; (head_dim, head_dim_v) pairs: %s", p->head_dim,
             p->head_dim_v, built);
    return FLASHC_STATUS_NOT_SUPPORTED_HEAD_DIM;
  }
  if (p->softmax_scale < 0.0f) {
    snprintf(why_not->text, sizeof why_not->text,
             "softmax_scale %g: the GPU kernel's online softmax assumes a positive scale", (double)p->softmax_scale);
    return FLASHC_STATUS_NOT_SUPPORTED;
  }
  if (p->page_table && instance_for_problem(p, context).block_n == 0) {
    snprintf(why_not->text, sizeof why_not->text,
             "page_size %d: the GPU kernel loads key blocks whole, so page_size must be a multiple of 8 that divides "
             "one of the key-block widths built for head dims (%d, %d), or a multiple of one (128 works for every "
             "head dim but 256: 80, 160, 240, ...)",
             p->page_size, p->head_dim, p->head_dim_v);
    return FLASHC_STATUS_NOT_SUPPORTED;
  }
  return FLASHC_STATUS_SUCCESS;
}

extern "C" flashc_status fc_attn_fwd_hopper_run(const fc_attn_problem* p, const fc_cuda_context* context,
                                                void* workspace, void* stream) {
  fc_reason why_not = {{0}};
  flashc_status status = fc_attn_fwd_hopper_check(p, context, &why_not);
  if (status != FLASHC_STATUS_SUCCESS) return fc_fail(status, "attention forward: %s", why_not.text);

  const tile_plan plan = plan_for(p, context);
  const int block_n = plan.block_n;
  const tile_info tile = plan.tile;
  const int splits = plan.num_splits;
  attn_fwd_params params;
  memset(&params, 0, sizeof params);
  const int varlen_q = p->cu_seqlens_q != NULL, varlen_k = p->cu_seqlens_k != NULL;
  const int64_t q_rows = varlen_q ? p->total_q : p->seqlen_q, k_rows = varlen_k ? p->total_k : p->seqlen_k;
  const int64_t q_batches = varlen_q ? 1 : p->batch, k_batches = varlen_k ? 1 : p->batch;
  params.pack_shift = plan.pack_shift;
  const int pack = 1 << params.pack_shift;
  status = encode_packed(context, p->dtype, p->q.data, p->head_dim, p->q.row_stride, p->q.head_stride,
                         p->q.batch_stride, p->heads_q, q_rows, q_batches, pack, tile.qk_box_inner, tile.block_m,
                         tile.qk_swizzle, &params.map_q);
  if (status != FLASHC_STATUS_SUCCESS) return status;
  /* O through a TMA store from the staging buffer (its own, or a V slot at d192/d256) when every
   * row the tensor map holds belongs to this tile's sequence: fixed lengths, no seqused_q.
   * TMA clips rows ≥ seqlen_q; with varlen the next rows are another sequence's. */
  params.o_tma_store = splits == 1 && !varlen_q && !p->seqused_q && ATTN_FWD_ROWS_PER_CONSUMER % pack == 0;
  if (params.o_tma_store) {
    status = encode_packed(context, p->dtype, p->o.data, p->head_dim_v, p->o.row_stride, p->o.head_stride,
                           p->o.batch_stride, p->heads_q, p->seqlen_q, p->batch, pack, tile.v_box_inner,
                           ATTN_FWD_ROWS_PER_CONSUMER, tile.v_swizzle, &params.map_o);
    if (status != FLASHC_STATUS_SUCCESS) return status;
  }
  /* K and V: (d, rows, heads, batch), or with paged KV (d, page rows, heads, pages) — the
   * batch stride is then the page stride — loaded min(page_size, BLOCK_N) rows per box. */
  const int paged = p->page_table != NULL;
  const int64_t kv_rows = paged ? p->page_size : k_rows, kv_batches = paged ? p->num_pages : k_batches;
  const int kv_box_rows = paged && p->page_size < tile.block_n ? p->page_size : tile.block_n;
  status = encode_tensor(context, p->dtype, p->k.data, p->head_dim, kv_rows, p->heads_kv, kv_batches,
                         p->k.row_stride, p->k.head_stride, p->k.batch_stride, tile.qk_box_inner,
                         static_cast<uint32_t>(kv_box_rows), tile.qk_swizzle, &params.map_k);
  if (status != FLASHC_STATUS_SUCCESS) return status;
  status = encode_tensor(context, p->dtype, p->v.data, p->head_dim_v, kv_rows, p->heads_kv, kv_batches,
                         p->v.row_stride, p->v.head_stride, p->v.batch_stride, tile.v_box_inner,
                         static_cast<uint32_t>(kv_box_rows), tile.v_swizzle, &params.map_v);
  if (status != FLASHC_STATUS_SUCCESS) return status;
  params.page_table = p->page_table;
  params.page_table_batch_stride = p->page_table_batch_stride;
  params.page_size = p->page_size;
  params.max_pages = p->max_pages;
  params.kv_box_rows = kv_box_rows;

  params.o = p->o.data;
  params.o_batch_stride = p->o.batch_stride;
  params.o_row_stride = p->o.row_stride;
  params.o_head_stride = p->o.head_stride;
  params.lse = p->lse;
  params.lse_batch_stride = p->lse_batch_stride;
  params.lse_head_stride = p->lse_head_stride;
  params.cu_seqlens_q = p->cu_seqlens_q;
  params.cu_seqlens_k = p->cu_seqlens_k;
  params.seqused_q = p->seqused_q;
  params.seqused_k = p->seqused_k;
  params.batch = p->batch;
  params.heads_q = p->heads_q;
  params.heads_kv = p->heads_kv;
  params.heads_per_kv = p->heads_q / p->heads_kv;
  params.tile_heads = p->heads_q >> params.pack_shift;
  params.seqlen_q = p->seqlen_q;
  params.seqlen_k = p->seqlen_k;
  if (plan.packed_rows > 0x7fffffff)
    return fc_fail(FLASHC_STATUS_NOT_SUPPORTED, "attention forward: seqlen_q %d × %d packed query heads exceeds int range",
                   p->seqlen_q, 1 << params.pack_shift);
  params.m_blocks = static_cast<int>(plan.m_blocks);
  const int64_t tiles = plan.tiles * splits;
  if (tiles > 0x7fffffff)
    return fc_fail(FLASHC_STATUS_NOT_SUPPORTED, "attention forward: %lld tiles (%d splits) exceed the scheduler's int range",
                   (long long)tiles, splits);
  params.tile_count = static_cast<int>(tiles);
  params.reverse_m_order = p->window_right >= 0;
  const tail_order tail =
      tail_order_for(p, context, plan.consumers, plan.m_blocks, static_cast<int64_t>(params.tile_heads) * p->batch, tiles, splits);
  params.tail_first_tile = tail.first_tile;
  params.tail_first_head = tail.first_head;
  params.tail_heads = tail.heads;

  const float log2e = 1.4426950408889634f;
  params.softcap = p->softcap;
  params.softcap_input_scale = p->softcap > 0.0f ? p->softmax_scale / p->softcap : 0.0f;
  params.softmax_scale_log2 = p->softcap > 0.0f ? log2e : p->softmax_scale * log2e;
  params.logit_scale = p->softcap > 0.0f ? 1.0f : p->softmax_scale;
  params.window_left = p->window_left;
  params.window_right = p->window_right;
  params.zero_v_tail = varlen_k || p->seqused_k != NULL || paged; /* a page's rows past seqlen_k: unused cache */
  params.narrow_tail = narrow_tail_allowed(p);

  if (params.tile_count == 0) return FLASHC_STATUS_SUCCESS;
  const workspace_layout layout = workspace_layout_for(p, plan);
  if (layout.total && !workspace)
    return fc_fail(FLASHC_STATUS_INTERNAL_ERROR, "attention forward: no workspace (%zu bytes needed)", layout.total);
  params.num_splits = splits;
  /* After the counter: the split-KV partials or the stream-K slots (a split plan has no tail). */
  uint8_t* region = reinterpret_cast<uint8_t*>(
      round_up(reinterpret_cast<uintptr_t>(workspace) + layout.counter_bytes, PARTIALS_ALIGNMENT));
  if (splits > 1) {
    params.o_partial = reinterpret_cast<float*>(region);
    params.lse_partial = reinterpret_cast<float*>(region + layout.o_partial_bytes);
  }
  params.sk_first_tile = params.tile_count;
  if (plan.stream_k.on) {
    params.sk_first_tile = static_cast<int>(plan.stream_k.first_tile);
    params.sk_tile_blocks = static_cast<int>(plan.stream_k.tile_blocks);
    params.sk_run_length = static_cast<int>(plan.stream_k.units / plan.grid);
    params.sk_run_rest = static_cast<int>(plan.stream_k.units % plan.grid);
    params.sk_partials = reinterpret_cast<float*>(region);
    params.sk_flags = reinterpret_cast<uint64_t*>(region + layout.sk_slot_bytes);
  }
  if (plan.dynamic) { /* no memset: CTA 0 zeroes it (attn_fwd_reset_tile_counter) */
    uint8_t* counter_area = reinterpret_cast<uint8_t*>(round_up(reinterpret_cast<uintptr_t>(workspace), sizeof(uint64_t)));
    params.tile_counter_ready = reinterpret_cast<uint64_t*>(counter_area);
    params.tile_counter = reinterpret_cast<int*>(counter_area + sizeof(uint64_t));
  }
  if (plan.stream_k.on || plan.dynamic) params.launch_tag = fc_launch_tag(context);
#if FLASHC_ATTN_TIMELINE
  {
    /* The timeline's entries are the workspace's last ATTN_FWD_TIMELINE_BYTES, 8-byte aligned
     * inside the slack (bench/attn_timeline.c reads them back from the end). */
    const uintptr_t end = reinterpret_cast<uintptr_t>(workspace) + layout.total;
    params.timeline = reinterpret_cast<uint64_t*>((end - ATTN_FWD_TIMELINE_BYTES) & ~static_cast<uintptr_t>(7));
    const cudaError_t error =
        cudaMemsetAsync(params.timeline, 0, ATTN_FWD_TIMELINE_BYTES, static_cast<cudaStream_t>(stream));
    if (error != cudaSuccess)
      return fc_fail(FLASHC_STATUS_CUDA_ERROR, "attention forward: clearing the timeline failed: %s",
                     cudaGetErrorString(error));
  }
#endif
  /* The plan's grid: the stream-K runs were cut for exactly this many CTAs. */
  const int kind = kind_for(p, block_n, plan.consumers, plan.stream_k.on);
  const cudaError_t error = launcher_for(p->dtype, p->head_dim, p->head_dim_v, block_n, plan.consumers, kind)(
      params, static_cast<int>(plan.grid), static_cast<cudaStream_t>(stream), context);
  if (error != cudaSuccess)
    return fc_fail(FLASHC_STATUS_CUDA_ERROR, "attention forward launch failed: %s", cudaGetErrorString(error));
  if (splits == 1) return FLASHC_STATUS_SUCCESS;

  /* Split-KV: merge the partials into o and lse (after the kernel: same stream). Every used
   * row of every split was written (an empty split as O = 0, LSE = −inf); rows past a
   * sequence's used length were not, and the combine skips them (cu_seqlens / seqused). */
  fc_combine_problem combine;
  memset(&combine, 0, sizeof combine);
  combine.out_dtype = p->out_dtype;
  combine.num_splits = splits;
  combine.batch = p->batch;
  combine.seqlen = p->seqlen_q;
  combine.heads = p->heads_q;
  combine.head_dim_v = p->head_dim_v;
  combine.o_partial = params.o_partial;
  combine.lse_partial = params.lse_partial;
  combine.o = p->o.data;
  combine.lse = p->lse;
  fc_combine_set_packed_partial_strides(&combine); /* the layout workspace_layout_for sized */
  combine.o_batch_stride = varlen_q ? 0 : p->o.batch_stride;
  combine.o_row_stride = p->o.row_stride;
  combine.o_head_stride = p->o.head_stride;
  combine.lse_batch_stride = varlen_q ? 0 : p->lse_batch_stride;
  combine.lse_head_stride = p->lse_head_stride;
  combine.cu_seqlens = p->cu_seqlens_q;
  combine.seqused = p->seqused_q;
  combine.after_forward = 1;
  return fc_attn_combine_cuda_run(&combine, context, stream);
}
