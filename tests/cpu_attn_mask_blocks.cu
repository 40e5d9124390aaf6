/*
 * cpu_attn_mask_blocks.cu — the Hopper attention forward's key-block geometry
 * (src/kernels/attn/attn_fwd_mask.cuh), run on the host against a per-key brute force over
 * random tiles: sequence lengths (seqlen_q ≠ seqlen_k), causal / local windows, pack-GQA
 * shifts, every built (BLOCK_M, BLOCK_N) shape class.
 *
 *   - attn_fwd_key_blocks: every key a row of the tile may see lies in a block of
 *     [first, end) — a block outside it holds no visible key for any of the tile's rows;
 *   - attn_fwd_masked_blocks_of: block n is in the masked set (n ≥ from or n < below)
 *     exactly when some (row, key) pair of the tile's rows × the block's keys is invisible,
 *     for every n the key loop can visit;
 *   - without windows, the windowless form (Windows = false, the 3-consumer instances') finds
 *     the same bounds.
 * A wrong bound shows as a block the kernel skips although a row sees a key in it (wrong
 * results) or as an unmasked block with an invisible key (a row sees a key it must not).
 * Runs without a GPU (it is built with nvcc because the header is CUDA C++).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attn/attn_fwd_mask.cuh"
extern "C" {
#include "oracle.h"
}

/* The visibility rule of DESIGN §5 for query row `row`, key `key`. */
static bool visible(const attn_fwd_params& p, const attn_fwd_sequence& s, int row, int key) {
  const int diagonal = row + s.seqlen_k - s.seqlen_q;
  if (key < 0 || key >= s.seqlen_k) return false;
  if (p.window_left >= 0 && key < diagonal - p.window_left) return false;
  if (p.window_right >= 0 && key > diagonal + p.window_right) return false;
  return true;
}

template <int BlockM, int BlockN>
static int check_tile(const attn_fwd_params& p, const attn_fwd_sequence& s, int m0, char* why, size_t why_size) {
  /* The rows the kernel treats as the tile's: packed rows m0 .. m0 + BlockM − 1, query row =
   * packed >> pack_shift (rows past seqlen_q included, as the bounds include them). */
  const int first_row = m0 >> p.pack_shift, last_row = (m0 + BlockM - 1) >> p.pack_shift;
  const int packed_rows = s.seqlen_q << p.pack_shift;
  const int used_last_row = ((m0 + BlockM < packed_rows ? m0 + BlockM : packed_rows) - 1) >> p.pack_shift;
  int first, end;
  attn_fwd_key_blocks<BlockM, BlockN>(p, s, m0, &first, &end);
  const attn_fwd_masked_blocks masked = attn_fwd_masked_blocks_of<BlockM, BlockN, true>(p, s, m0);
  /* An instance without windows (attn_fwd_tile::WINDOWS, Windows = false) runs only problems
   * without one: there it must find the same blocks. */
  if (p.window_left < 0 && p.window_right < 0) {
    const attn_fwd_masked_blocks windowless = attn_fwd_masked_blocks_of<BlockM, BlockN, false>(p, s, m0);
    if (windowless.below != masked.below || windowless.from != masked.from) {
      snprintf(why, why_size, "without windows: below %d, from %d; the windowed bounds: below %d, from %d",
               windowless.below, windowless.from, masked.below, masked.from);
      return 1;
    }
  }
  const int blocks = (s.seqlen_k + BlockN - 1) / BlockN;
  for (int n = 0; n < blocks + 1; ++n) {
    bool any_visible = false, any_invisible = false;
    for (int row = first_row; row <= last_row; ++row)
      for (int key = n * BlockN; key < (n + 1) * BlockN; ++key) {
        const bool v = visible(p, s, row, key);
        if (row <= used_last_row) any_visible |= v;
        any_invisible |= !v;
      }
    if (any_visible && (n < first || n >= end)) {
      snprintf(why, why_size, "block %d holds a visible key but the tile visits [%d, %d)", n, first, end);
      return 1;
    }
    if (n >= first && n < end && masked.contains(n) != any_invisible) {
      snprintf(why, why_size, "block %d: masked set says %d (below %d, from %d), brute force %d", n,
               (int)masked.contains(n), masked.below, masked.from, (int)any_invisible);
      return 1;
    }
  }
  return 0;
}

int main(void) {
  const uint64_t seed = test_seed();
  test_rng rng = test_rng_make(seed, 0);
  long cases = 0, failed = 0;
  for (int i = 0; i < 20000; ++i) {
    attn_fwd_params p;
    memset(&p, 0, sizeof p);
    attn_fwd_sequence s;
    memset(&s, 0, sizeof s);
    s.seqlen_q = test_rng_int(&rng, 1, 700);
    s.seqlen_k = test_rng_uniform(&rng) < 0.1 ? 0 : test_rng_int(&rng, 1, 700);
    p.pack_shift = test_rng_uniform(&rng) < 0.3 ? test_rng_int(&rng, 1, 3) : 0;
    const double mask = test_rng_uniform(&rng);
    if (mask < 0.3) { /* causal */
      p.window_left = -1, p.window_right = 0;
    } else if (mask < 0.6) { /* local */
      p.window_left = test_rng_uniform(&rng) < 0.2 ? -1 : test_rng_int(&rng, 0, 300);
      p.window_right = test_rng_uniform(&rng) < 0.2 ? -1 : test_rng_int(&rng, 0, 300);
    } else {
      p.window_left = p.window_right = -1;
    }
    const int shape = test_rng_int(&rng, 0, 3);
    const int packed_rows = s.seqlen_q << p.pack_shift;
    char why[256];
    int bad = 0;
    /* The (BLOCK_M, BLOCK_N) classes of the built instances: 2 consumers with 80–192 keys,
     * 3 consumers with 112. */
    switch (shape) {
      case 0:
        for (int m0 = 0; m0 < packed_rows && !bad; m0 += 128) bad = check_tile<128, 128>(p, s, m0, why, sizeof why);
        break;
      case 1:
        for (int m0 = 0; m0 < packed_rows && !bad; m0 += 128) bad = check_tile<128, 160>(p, s, m0, why, sizeof why);
        break;
      case 2:
        for (int m0 = 0; m0 < packed_rows && !bad; m0 += 192) bad = check_tile<192, 112>(p, s, m0, why, sizeof why);
        break;
      default:
        for (int m0 = 0; m0 < packed_rows && !bad; m0 += 128) bad = check_tile<128, 80>(p, s, m0, why, sizeof why);
        break;
    }
    ++cases;
    if (bad) {
      ++failed;
      if (failed <= 10)
        printf("FAIL seqlen_q %d seqlen_k %d pack_shift %d window (%d, %d) shape %d: %s\n", s.seqlen_q, s.seqlen_k,
               p.pack_shift, p.window_left, p.window_right, shape, why);
    }
  }
  printf("cpu_attn_mask_blocks: %ld cases, %ld failed (seed %llu)\n", cases, failed, (unsigned long long)seed);
  return failed ? 1 : 0;
}
