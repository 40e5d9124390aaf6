/*
 * cpu_attn_tile_order.cu — the Hopper attention forward's tile order (attn_fwd_tile_at in
 * src/kernels/attn/attn_fwd_scheduler.cuh), run on the host over random grids: query blocks,
 * head slots, batches, split counts, with and without the tail order.
 *
 *   - every tile index 0 .. tile_count − 1 decodes to a distinct (m_block, head, batch, split)
 *     inside the grid, so the scheduler visits each tile once (a missing tile leaves its O
 *     unwritten, a repeated one does a tile's work twice);
 *   - before tail_first_tile the order is the plain one (query block fastest, longest first
 *     when reversed);
 *   - in the tail, the head slots tail_first_head .. interleave query block by query block:
 *     a tile's query block is never longer (reversed: never later) than the one before it, so
 *     the grid ends on its shortest tiles.
 * And the stream-K tail's decomposition (attn_fwd_stream_k.cuh) over random (whole rounds,
 * grid, partial-round tiles, key blocks per tile), walked with the producer's
 * attn_fwd_stream_k_next_piece and the finisher's attn_fwd_stream_k_previous_publisher:
 *   - every unit (key block of a tail tile) is in exactly one piece, inside its CTA's run;
 *   - a CTA runs at most two pieces, its later tile first, and a publishing piece is its first
 *     (it publishes before it waits: no deadlock);
 *   - roles: publish iff the piece ends before its tile's last block; otherwise whole (from
 *     block 0) or finish with the tile's first unit; each tile has one non-publishing piece;
 *   - a finisher collects from exactly the CTAs that published pieces of its tile.
 * Runs without a GPU (built with nvcc because the headers are CUDA C++).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "kernels/attn/attn_fwd_scheduler.cuh"
#include "kernels/attn/attn_fwd_stream_k.cuh"
extern "C" {
#include "oracle.h"
}

static int check_grid(int m_blocks, int tile_heads, int heads_per_kv, int batch, int splits, int tail_heads,
                      int reverse, char* why, size_t why_size) {
  attn_fwd_params p;
  memset(&p, 0, sizeof(p));
  p.m_blocks = m_blocks;
  p.tile_heads = tile_heads;
  p.heads_per_kv = heads_per_kv;
  p.batch = batch;
  p.num_splits = splits;
  p.reverse_m_order = reverse;
  p.tile_count = m_blocks * tile_heads * batch * splits;
  const int head_slots = tile_heads * batch;
  p.tail_first_tile = p.tile_count; /* no tail unless drawn (the launcher's rule: unsplit only) */
  p.tail_first_head = 0;
  p.tail_heads = 1;
  if (tail_heads > 1 && splits == 1) {
    p.tail_first_head = head_slots - tail_heads;
    p.tail_first_tile = p.tail_first_head * m_blocks;
    p.tail_heads = tail_heads;
  }
  std::vector<char> seen(static_cast<size_t>(p.tile_count), 0);
  int previous_m = -1;
  for (int linear = 0; linear < p.tile_count; ++linear) {
    const attn_fwd_tile_coord t = attn_fwd_tile_at(p, linear);
    if (t.m_block < 0 || t.m_block >= m_blocks || t.q_head0 < 0 || t.q_head0 >= tile_heads || t.batch < 0 ||
        t.batch >= batch || t.split < 0 || t.split >= splits) {
      snprintf(why, why_size, "tile %d decodes outside the grid: m %d head %d batch %d split %d", linear, t.m_block,
               t.q_head0, t.batch, t.split);
      return 1;
    }
    const size_t index = ((static_cast<size_t>(t.batch) * tile_heads + t.q_head0) * splits + t.split) * m_blocks +
                         t.m_block;
    if (seen[index]++) {
      snprintf(why, why_size, "tile %d repeats (m %d head %d batch %d split %d)", linear, t.m_block, t.q_head0,
               t.batch, t.split);
      return 1;
    }
    if (t.kv_head != t.q_head0 / heads_per_kv || t.out_batch != t.split * batch + t.batch) {
      snprintf(why, why_size, "tile %d: kv_head %d, out_batch %d", linear, t.kv_head, t.out_batch);
      return 1;
    }
    const int order_m = reverse ? m_blocks - 1 - t.m_block : t.m_block; /* 0 = handed out first */
    if (linear < p.tail_first_tile) {
      const int plain_m = linear % m_blocks;
      if (order_m != plain_m) {
        snprintf(why, why_size, "tile %d before the tail: query block %d, plain order %d", linear, t.m_block,
                 reverse ? m_blocks - 1 - plain_m : plain_m);
        return 1;
      }
    } else {
      const int head_slot = t.batch * tile_heads + t.q_head0;
      if (head_slot < p.tail_first_head || (linear > p.tail_first_tile && order_m < previous_m)) {
        snprintf(why, why_size, "tail tile %d: head slot %d (tail from %d), order %d after %d", linear, head_slot,
                 p.tail_first_head, order_m, previous_m);
        return 1;
      }
      previous_m = order_m;
    }
  }
  return 0;
}

static int check_stream_k(int rounds, int grid, int rest, int blocks, char* why, size_t why_size) {
  attn_fwd_params p;
  memset(&p, 0, sizeof(p));
  p.sk_first_tile = rounds * grid;
  p.tile_count = p.sk_first_tile + rest;
  p.sk_tile_blocks = blocks;
  const int units = rest * blocks;
  p.sk_run_length = units / grid;
  p.sk_run_rest = units % grid;
  std::vector<int> owner(static_cast<size_t>(units), -1), finisher(static_cast<size_t>(rest), -1);
  std::vector<std::vector<int>> publishers(static_cast<size_t>(rest));
  for (int cta = 0; cta < grid; ++cta) {
    const int run_begin = attn_fwd_stream_k_run_begin(p, cta, grid), run_end = attn_fwd_stream_k_run_begin(p, cta + 1, grid);
    int cursor = ATTN_FWD_STREAM_K_NOT_STARTED, count = 0, previous_tile = rest;
    attn_fwd_stream_k_piece piece;
    while (attn_fwd_stream_k_next_piece(p, cta, grid, cursor, piece)) {
      const int tile = piece.linear - p.sk_first_tile;
      if (++count > 2 || tile < 0 || tile >= previous_tile || piece.first < 0 || piece.first >= piece.end ||
          piece.end > blocks) {
        snprintf(why, why_size, "cta %d piece %d: tile %d (previous %d), blocks [%d, %d) of %d", cta, count, tile,
                 previous_tile, piece.first, piece.end, blocks);
        return 1;
      }
      previous_tile = tile;
      for (int u = tile * blocks + piece.first; u < tile * blocks + piece.end; ++u) {
        if (owner[static_cast<size_t>(u)] >= 0 || u < run_begin || u >= run_end) {
          snprintf(why, why_size, "unit %d: cta %d (run [%d, %d)), already cta %d", u, cta, run_begin, run_end,
                   owner[static_cast<size_t>(u)]);
          return 1;
        }
        owner[static_cast<size_t>(u)] = cta;
      }
      const int role = piece.end < blocks ? ATTN_FWD_PIECE_PUBLISH : piece.first > 0 ? tile * blocks : ATTN_FWD_PIECE_WHOLE;
      if (piece.role != role || (role == ATTN_FWD_PIECE_PUBLISH && count != 1)) {
        snprintf(why, why_size, "cta %d piece %d of tile %d [%d, %d): role %d, expected %d", cta, count, tile,
                 piece.first, piece.end, piece.role, role);
        return 1;
      }
      if (role == ATTN_FWD_PIECE_PUBLISH) {
        publishers[static_cast<size_t>(tile)].push_back(cta);
      } else if (finisher[static_cast<size_t>(tile)] >= 0) {
        snprintf(why, why_size, "tile %d ends twice (ctas %d, %d)", tile, finisher[static_cast<size_t>(tile)], cta);
        return 1;
      } else {
        finisher[static_cast<size_t>(tile)] = cta;
      }
    }
  }
  for (int u = 0; u < units; ++u)
    if (owner[static_cast<size_t>(u)] < 0) {
      snprintf(why, why_size, "unit %d (tile %d, block %d) in no piece", u, u / blocks, u % blocks);
      return 1;
    }
  for (int tile = 0; tile < rest; ++tile) {
    std::vector<int> collected;
    const int end_cta = finisher[static_cast<size_t>(tile)];
    for (int cta = attn_fwd_stream_k_previous_publisher(p, grid, tile * blocks, end_cta); cta >= 0;
         cta = attn_fwd_stream_k_previous_publisher(p, grid, tile * blocks, cta))
      collected.push_back(cta);
    std::vector<int> expected = publishers[static_cast<size_t>(tile)];
    std::sort(expected.rbegin(), expected.rend()); /* nearest first, as collected */
    if (end_cta < 0 || collected != expected) {
      snprintf(why, why_size, "tile %d: finisher cta %d collects %zu pieces, %zu published", tile, end_cta,
               collected.size(), expected.size());
      return 1;
    }
  }
  return 0;
}

int main(void) {
  const uint64_t seed = test_seed();
  test_rng rng = test_rng_make(seed, 0);
  int cases = 0, failed = 0;
  char why[256];
  for (int i = 0; i < 3000; ++i) {
    const int m_blocks = test_rng_int(&rng, 1, 40);
    const int heads_per_kv = 1 << test_rng_int(&rng, 0, 2);
    const int tile_heads = heads_per_kv * test_rng_int(&rng, 1, 6);
    const int batch = test_rng_int(&rng, 1, 5);
    const int splits = test_rng_uniform(&rng) < 0.25 ? test_rng_int(&rng, 2, 4) : 1;
    const int head_slots = tile_heads * batch;
    const int tail_heads = test_rng_uniform(&rng) < 0.25 ? 1 : test_rng_int(&rng, 1, head_slots);
    const int reverse = test_rng_int(&rng, 0, 1);
    ++cases;
    if (check_grid(m_blocks, tile_heads, heads_per_kv, batch, splits, tail_heads, reverse, why, sizeof(why))) {
      if (++failed <= 10)
        printf("FAIL m_blocks %d tile_heads %d heads_per_kv %d batch %d splits %d tail %d reverse %d: %s\n", m_blocks,
               tile_heads, heads_per_kv, batch, splits, tail_heads, reverse, why);
    }
  }
  for (int i = 0; i < 3000; ++i) {
    const int grid = test_rng_uniform(&rng) < 0.5 ? test_rng_int(&rng, 1, 16) : test_rng_int(&rng, 100, 140);
    const int rounds = test_rng_int(&rng, 0, 20);
    const int rest = test_rng_int(&rng, 1, grid > 1 ? grid - 1 : 1); /* the launcher's plan: rest < grid */
    const int blocks = test_rng_uniform(&rng) < 0.3 ? test_rng_int(&rng, 1, 4) : test_rng_int(&rng, 2, 300);
    if (rest >= grid) continue;
    ++cases;
    if (check_stream_k(rounds, grid, rest, blocks, why, sizeof(why)) && ++failed <= 10)
      printf("FAIL stream-K rounds %d grid %d rest %d blocks %d: %s\n", rounds, grid, rest, blocks, why);
  }
  printf("cpu_attn_tile_order: %d cases, %d failed (seed %llu)\n", cases, failed, (unsigned long long)seed);
  return failed ? 1 : 0;
}
