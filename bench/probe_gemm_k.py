#!/usr/bin/env python3
"""probe_gemm_k.py — one GEMM family's time per output tile as K grows, against torch.matmul in
the same process: separates a fixed cost per tile (pipeline fill, epilogue, block start) from
the main loop's cost per K (the slope). Used to find where the portable GEMM loses its time.

    python3 bench/probe_gemm_k.py [--algo portable|hopper|auto] [--mn 8192] [--dtype bf16]
                                  [--k 1024,2048,4096,8192,16384] [--tile 128x256] [--once K]
                                  [--epilogue plain|bias_gelu|c]

Per K: TFLOP/s of flashc and torch, the ratio, and flashc's microseconds per wave of tiles
(one tile per SM: tiles / SMs waves, the last partial wave counted whole); then the
least-squares line µs/wave = fixed + slope·K and the TFLOP/s the slope alone would give.
--once K runs one call at that K and exits (for a profiler: ncu -k regex:gemm_portable -c 1).
--epilogue adds a bias and GELU (torch: matmul + bias + gelu(tanh), three kernels) or C with
beta = 1 (torch: addmm) to both sides.
"""
import argparse
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import torch  # noqa: E402

import flashc  # noqa: E402
from bench_timing import time_cuda_alternating  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--algo", default="portable")
    ap.add_argument("--mn", type=int, default=8192)
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp16"])
    ap.add_argument("--k", default="1024,2048,4096,8192,16384")
    ap.add_argument("--tile", default="128x256", help="the tile the heuristic picks (for waves)")
    ap.add_argument("--once", type=int, default=0)
    ap.add_argument("--epilogue", default="plain", choices=["plain", "bias_gelu", "c"])
    args = ap.parse_args()
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    mn = args.mn
    bias = torch.randn(mn, device="cuda", dtype=dtype)
    c = torch.randn(mn, mn, device="cuda", dtype=dtype)

    def flashc_call(a, w):
        if args.epilogue == "bias_gelu":
            return flashc.gemm(a, w.t(), bias=bias, activation="gelu", algo=args.algo)
        if args.epilogue == "c":
            return flashc.gemm(a, w.t(), c=c, beta=1.0, algo=args.algo)
        return flashc.gemm(a, w.t(), algo=args.algo)

    def torch_call(a, w):
        if args.epilogue == "bias_gelu":
            return torch.nn.functional.gelu(torch.matmul(a, w.t()) + bias, approximate="tanh")
        if args.epilogue == "c":
            return torch.addmm(c, a, w.t())
        return torch.matmul(a, w.t())

    if args.once:
        a = torch.randn(mn, args.once, device="cuda", dtype=dtype)
        w = torch.randn(mn, args.once, device="cuda", dtype=dtype)
        flashc_call(a, w)
        torch.cuda.synchronize()
        return
    tile_m, tile_n = (int(x) for x in args.tile.split("x"))
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    waves = math.ceil(math.ceil(mn / tile_m) * math.ceil(mn / tile_n) / sms)
    print(f"{torch.cuda.get_device_name(0)}; {args.algo} {args.dtype} M = N = {mn}, epilogue {args.epilogue}; "
          f"{waves} waves of {sms} {args.tile} tiles")
    print(f"{'K':>6} {'flashc TF/s':>12} {'torch TF/s':>11} {'ratio':>6} {'us/wave':>8}")
    points = []
    for k in (int(x) for x in args.k.split(",")):
        a = torch.randn(mn, k, device="cuda", dtype=dtype)
        w = torch.randn(mn, k, device="cuda", dtype=dtype)
        ms_f, ms_t = time_cuda_alternating([lambda: flashc_call(a, w), lambda: torch_call(a, w)], 3, 15)
        for result in (ms_f, ms_t):
            if isinstance(result, Exception):
                raise result
        flop = 2.0 * mn * mn * k
        us_wave = ms_f * 1000.0 / waves
        points.append((k, us_wave))
        print(f"{k:>6} {flop / ms_f / 1e9:>12.1f} {flop / ms_t / 1e9:>11.1f} {ms_t / ms_f:>6.3f} {us_wave:>8.1f}")
        del a, w
    n = len(points)
    if n >= 2:
        mean_k = sum(p[0] for p in points) / n
        mean_t = sum(p[1] for p in points) / n
        slope = sum((p[0] - mean_k) * (p[1] - mean_t) for p in points) / sum((p[0] - mean_k) ** 2 for p in points)
        fixed = mean_t - slope * mean_k
        slope_tflops = 2.0 * tile_m * tile_n * sms / (slope * 1e-6) / 1e12
        print(f"fit: us/wave = {fixed:.1f} + {slope * 1000:.2f} ns * K  (slope alone: {slope_tflops:.0f} TFLOP/s)")


if __name__ == "__main__":
    main()
