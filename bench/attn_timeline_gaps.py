#!/usr/bin/env python3
"""attn_timeline_gaps.py — who waits for whom in an attention-forward event timeline.

Reads the CSV that bench/attn_timeline writes with --csv (warp,cycle,event; CTA 0, lane 0 of
every consumer warp) and prints, per consumer warpgroup, the distribution (mean, median, 10th
and 90th percentile, in cycles) of the gaps that decide the key-block period:

  turn - previous warpgroup's issued   how long after the other warpgroup passed the turn this
                                       one took it (small: it was waiting for the turn; large:
                                       its own chain was late). Only meaningful with ping-pong.
  turn - own pv_ready                  from its last P·V wait to its next issue (P's pack, the
                                       loop top's waits)
  issued - own turn                    how long issuing its wgmmas took (the issue blocks while
                                       earlier wgmmas execute)
  s_ready - own issued, softmax - own s_ready

    python3 bench/attn_timeline_gaps.py TIMELINE.csv [--skip N] [--count N]

--skip/--count pick the periods (default: skip the first 100 turns, use the next 1400), so a
tile's start and the timeline's capacity limit stay out of the figures. The first warp of each
warpgroup stands for it (warps 0, 4, 8). Events are attn_fwd_timeline.h's names.
"""
import argparse
import bisect
import collections
import csv


def gaps(later, earlier, skip, count):
    """For each event time in `later` (a window of them), the time since the last `earlier`."""
    values = []
    for t in later[skip:skip + count]:
        k = bisect.bisect_left(earlier, t) - 1
        if k >= 0:
            values.append(t - earlier[k])
    return sorted(values)


def describe(values):
    if not values:
        return "no data"
    n = len(values)
    return "mean %5d  median %5d  p10 %5d  p90 %5d  (%d)" % (
        sum(values) / n, values[n // 2], values[n // 10], values[9 * n // 10], n)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("csv")
    parser.add_argument("--skip", type=int, default=100)
    parser.add_argument("--count", type=int, default=1400)
    args = parser.parse_args()

    events = collections.defaultdict(lambda: collections.defaultdict(list))
    with open(args.csv) as f:
        for row in csv.reader(f):
            if not row or not row[0].isdigit():
                continue  # header
            warp, cycle, event = int(row[0]), int(row[1]), row[2]
            events[warp][event].append(cycle)
    warpgroups = sorted({w // 4 for w in events})
    for wg in warpgroups:
        own = events[4 * wg]
        prev = events[4 * warpgroups[(warpgroups.index(wg) - 1) % len(warpgroups)]]
        print("wg%d" % wg)
        rows = [("turn - previous wg's issued", own["turn"], prev["issued"]),
                ("turn - own pv_ready", own["turn"], own["pv_ready"]),
                ("issued - own turn", own["issued"], own["turn"]),
                ("s_ready - own issued", own["s_ready"], own["issued"]),
                ("softmax - own s_ready", own["softmax"], own["s_ready"])]
        for name, later, earlier in rows:
            print("  %-28s %s" % (name, describe(gaps(later, earlier, args.skip, args.count))))


if __name__ == "__main__":
    main()
