/*
 * attn_fwd_timeline.h — the layout of the Hopper attention forward's optional event timeline,
 * shared by the kernel (attn_fwd_timeline.cuh) and its reader (bench/attn_timeline.c). Plain C.
 *
 * A build configured with -DCMAKE_CUDA_FLAGS=-DFLASHC_ATTN_TIMELINE=1 records, for CTA 0 only,
 * lane 0 of every consumer warp: ATTN_FWD_TIMELINE_CAPACITY 64-bit entries per warp, entry =
 * clock64() << 4 | event, in the order the warp passed the events; unused entries stay 0. The
 * entries are the last ATTN_FWD_TIMELINE_BYTES of the call's workspace (the launcher adds them
 * to the workspace size and clears them before the launch). Other builds record nothing and
 * their workspace has no such tail. FLASHC_ATTN_TIMELINE=2 writes only the CTA spans below: CTA
 * 0's stamps slow it, and the CTAs that merge its stream-K partials wait for it, so the grid's
 * end spread is measured without them (docs/NOTES-attn-fwd.md, 26th session).
 */
#ifndef FLASHC_KERNELS_ATTN_FWD_TIMELINE_H
#define FLASHC_KERNELS_ATTN_FWD_TIMELINE_H

#ifndef FLASHC_ATTN_TIMELINE
#define FLASHC_ATTN_TIMELINE 0
#endif

#define ATTN_FWD_TIMELINE_WARPS 12 /* consumer warps of the widest instance (3 warpgroups) */
#define ATTN_FWD_TIMELINE_CAPACITY 8192
/* After the warps' entries, from entry ATTN_FWD_TIMELINE_CTA_AREA: CTA c's start and end on
 * %globaltimer (ns) at entries 2c and 2c + 1, for where the grid waits at its start and in its
 * tail (attn_fwd_timeline_cta_start / _end; bench/attn_timeline reads them). */
#define ATTN_FWD_TIMELINE_CTAS 1024
#define ATTN_FWD_TIMELINE_CTA_AREA ((unsigned long long)ATTN_FWD_TIMELINE_WARPS * ATTN_FWD_TIMELINE_CAPACITY)
#define ATTN_FWD_TIMELINE_BYTES ((ATTN_FWD_TIMELINE_CTA_AREA + 2ull * ATTN_FWD_TIMELINE_CTAS) * 8ull)
#define ATTN_FWD_TIMELINE_EVENT_BITS 4

/* What a consumer warp had just done when it stamped. */
enum attn_fwd_event {
  ATTN_EVENT_TILE = 1,      /* got the tile's Q (q_full) */
  ATTN_EVENT_TURN = 2,      /* its turn to issue wgmmas began (ping-pong off: it is about to issue) */
  ATTN_EVENT_ISSUED = 3,    /* issued S (and P·V) and passed the turn on */
  ATTN_EVENT_S_READY = 4,   /* S of the block is in its registers */
  ATTN_EVENT_SOFTMAX = 5,   /* the softmax of the block is done (the pin stored) */
  ATTN_EVENT_PV_READY = 6,  /* P·V of the previous block completed */
  ATTN_EVENT_EPILOGUE = 7,  /* the tile's O and LSE are out */
  ATTN_EVENT_O_STAGED = 8,  /* the epilogue staged O in shared memory (unsplit tiles), before its store */
  ATTN_EVENT_FINISHED = 9,  /* the epilogue has 1/l and the LSE (attn_softmax_normalizer, _lse) */
  ATTN_EVENT_BUFFER = 10,   /* the epilogue may write its staging buffer (waits and barrier passed) */
  ATTN_EVENT_WRITTEN = 11,  /* the epilogue wrote O (first pass) into the staging buffer */
  ATTN_EVENT_FENCED = 12,   /* ... and fenced it for the TMA store (before the warpgroup's barrier) */
  ATTN_EVENT_PROLOGUE = 13, /* the key loop's set-up is done (descriptors, masked blocks), before its first K wait */
  ATTN_EVENT_COUNT = 14
};

#endif
