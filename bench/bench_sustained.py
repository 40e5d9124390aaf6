#!/usr/bin/env python3
"""bench_sustained.py — flashc against its peers in the GPU's steady state: each player runs back
to back for about a second per block, the players' blocks taking turns (bench_timing.
time_cuda_sustained), while nvidia-smi samples the SM clock, the power and the temperature.
The other benchmarks (bench_gemm.c/.py, bench_attn.py) time ~1 ms samples with the GPU idling
between them, below the power limit; a training or inference loop runs at it (700 W on the H200),
where each kernel's clock falls by how much power it draws per cycle. Both figures are reported
in docs/PERF.md; this one is what a loop that keeps the GPU busy sees.

Cases (default: the issue targets' shapes):
  GEMM  D (M×N) = A (M×K) · Wᵀ, inputs rotated past the L2 (bench_gemm.py's inputs):
        flashc (auto: the Hopper kernel), flashc --algo portable, and the peer torch.matmul
        (cuBLAS) — or torch._scaled_mm for e4m3 (bf16 out, scales 1).
  attention forward, FA3's grid (batch = 16384 / seqlen, heads = 2048 / d): flashc against
        torch SDPA's cuDNN backend.

    python3 bench/bench_sustained.py [--block-s 1.0] [--rounds 4] [--json FILE]
        [--gemm DTYPE:MxNxK ...] [--attn DTYPE:dD:SEQLEN[:causal] ...] [--no-portable]
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import flashc  # noqa: E402
from bench_attn import DTYPES as ATTN_DTYPES, HIDDEN, TOKENS, make_forward  # noqa: E402
from bench_gemm import DTYPES as GEMM_DTYPES, make_inputs, rotating  # noqa: E402
from bench_timing import record_header, time_cuda_sustained  # noqa: E402

DEFAULT_GEMM = ["bf16:4096x4096x4096", "bf16:8192x8192x8192", "fp16:4096x4096x4096", "fp16:8192x8192x8192",
                "bf16:8192x14336x4096", "e4m3:4096x4096x4096", "e4m3:8192x8192x8192"]
DEFAULT_ATTN = ["bf16:d64:4096", "bf16:d128:4096", "bf16:d128:16384", "bf16:d256:4096", "bf16:d128:4096:causal",
                "fp16:d128:4096"]


class Sampler:
    """nvidia-smi's SM clock, power and temperature every 50 ms, with host timestamps."""

    def __init__(self):
        self.rows = []
        try:
            self.process = subprocess.Popen(
                ["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu", "--format=csv,noheader,nounits",
                 "-lms", "50", "-i", str(torch.cuda.current_device())],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            self.process = None
            return
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.process.stdout:
            try:
                self.rows.append((time.time(), *(float(x) for x in line.split(","))))
            except ValueError:
                pass

    def during(self, t0, t1):
        """Median clock (MHz), power (W), temperature (°C) over the block's second half."""
        middle = t0 + (t1 - t0) / 2
        rows = [r for r in self.rows if middle <= r[0] <= t1]
        if not rows:
            return None
        return tuple(sorted(r[i] for r in rows)[len(rows) // 2] for i in (1, 2, 3))

    def stop(self):
        if self.process:
            self.process.terminate()


def gemm_players(spec, portable):
    dtype_name, shape = spec.split(":")
    m, n, k = (int(x) for x in shape.split("x"))
    dtype = GEMM_DTYPES[dtype_name]
    inputs = make_inputs(m, n, k, dtype)
    one = torch.ones((), device="cuda", dtype=torch.float32)
    if dtype == torch.float8_e4m3fn:
        players = {"flashc": [lambda a=a, w=w: flashc.gemm(a, w.t(), scale_a=one, scale_b=one) for a, w in inputs],
                   "peer": [lambda a=a, w=w: torch._scaled_mm(a, w.t(), scale_a=one, scale_b=one,
                                                              out_dtype=torch.bfloat16) for a, w in inputs]}
        peer = "torch._scaled_mm"
    else:
        players = {"flashc": [lambda a=a, w=w: flashc.gemm(a, w.t()) for a, w in inputs]}
        if portable:
            players["flashc portable"] = [lambda a=a, w=w: flashc.gemm(a, w.t(), algo="portable") for a, w in inputs]
        players["peer"] = [lambda a=a, w=w: torch.matmul(a, w.t()) for a, w in inputs]
        peer = "torch.matmul (cuBLAS)"
    return f"gemm {dtype_name} {m}x{n}x{k}", 2.0 * m * n * k, peer, {name: rotating(c) for name, c in players.items()}


def attn_players(spec):
    parts = spec.split(":")
    dtype_name, d, seqlen = parts[0], int(parts[1].lstrip("d")), int(parts[2])
    causal = len(parts) > 3 and parts[3] == "causal"
    batch, heads = TOKENS // seqlen, HIDDEN // d
    players = {}
    for method, name in (("flashc", "flashc"), ("cudnn", "peer")):
        q, k, v = (torch.randn(batch, seqlen, heads, d, device="cuda", dtype=ATTN_DTYPES[dtype_name])
                   for _ in range(3))
        players[name] = make_forward(method, q, k, v, causal)
    flop = 4.0 * batch * heads * seqlen * seqlen * d / (2 if causal else 1)
    label = f"attn fwd {dtype_name} d{d} {seqlen} {'causal' if causal else 'full'}"
    return label, flop, "SDPA cuDNN", players


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--block-s", type=float, default=1.0, help="seconds per player per round")
    parser.add_argument("--rounds", type=int, default=4, help="rounds of blocks; the first is warm-up")
    parser.add_argument("--gemm", action="append", help="DTYPE:MxNxK (default: the issue's shapes)")
    parser.add_argument("--attn", action="append", help="DTYPE:dD:SEQLEN[:causal]")
    parser.add_argument("--no-portable", action="store_true", help="leave the portable GEMM out")
    parser.add_argument("--json")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench_sustained.py needs a CUDA GPU")
    gemm_specs = args.gemm if args.gemm is not None else ([] if args.attn else DEFAULT_GEMM)
    attn_specs = args.attn if args.attn is not None else ([] if args.gemm else DEFAULT_ATTN)
    header = record_header("sustained", f"bench_timing.time_cuda_sustained: blocks of ~{args.block_s} s per player, "
                           f"{args.rounds} rounds, the first not counted; median over blocks",
                           cudnn=torch.backends.cudnn.version())
    print(f"# {header['gpu']}; torch {header['torch']}; flashc {header['flashc']}; blocks of {args.block_s} s, "
          f"{args.rounds} rounds (first = warm-up); clock/power/temperature: nvidia-smi, medians of block halves")
    print(f"{'case':<36} {'player':<22} {'TFLOP/s':>8} {'ratio':>6} {'MHz':>5} {'W':>4} {'°C':>3}")
    sampler = Sampler()
    records = []
    for spec, kind in [(s, "gemm") for s in gemm_specs] + [(s, "attn") for s in attn_specs]:
        label, flop, peer, players = gemm_players(spec, not args.no_portable) if kind == "gemm" else attn_players(spec)
        names = list(players)
        blocks = {name: [] for name in names}

        def on_block(index, round_index, t0, t1, ms):
            if round_index > 0:
                blocks[names[index]].append(sampler.during(t0, t1))
        with torch.no_grad():
            times = time_cuda_sustained([players[n] for n in names], args.block_s, args.rounds, on_block)
        record = {"case": label, "flops": flop, "peer": peer}
        peer_ms = times[names.index("peer")]
        for name, ms in zip(names, times):
            if not isinstance(ms, float):
                print(f"{label:<36} {name:<22} {str(ms)[:60]}")
                continue
            seen = [b for b in blocks[name] if b]
            clock, power, temp = (tuple(sorted(b[i] for b in seen)[len(seen) // 2] for i in range(3))
                                  if seen else (float("nan"),) * 3)
            ratio = peer_ms / ms if isinstance(peer_ms, float) else float("nan")
            shown = peer if name == "peer" else name
            record[name] = {"ms": ms, "tflops": flop / ms / 1e9, "ratio": ratio, "mhz": clock, "watts": power,
                            "celsius": temp}
            print(f"{label:<36} {shown[:22]:<22} {flop / ms / 1e9:8.1f} {ratio:6.3f} {clock:5.0f} {power:4.0f} "
                  f"{temp:3.0f}", flush=True)
        records.append(record)
        del players
        torch.cuda.empty_cache()
    sampler.stop()
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({**header, "results": records}, handle, indent=1)
        print(f"# wrote {args.json}")


if __name__ == "__main__":
    main()
