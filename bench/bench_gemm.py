#!/usr/bin/env python3
"""bench_gemm.py — flashc.gemm against torch.matmul (cuBLAS) from Python, same process, same GPU,
same inputs (DESIGN.md §7). The C benchmark bench_gemm.c measures against cuBLASLt directly;
this one is what a PyTorch user sees, Python call overhead included.

Shapes: squares 1024 ... 16384 and the LLM shapes tokens 512 ... 16384 × (N, K) in
(4096, 4096), (14336, 4096), (4096, 14336), (28672, 8192), (8192, 28672); fp16 and bf16, and
float8_e4m3fn (bf16 out, per-tensor scales) at 4096³ and 8192³ against torch._scaled_mm.
Layout: D (M×N) = A (M×K) · Wᵀ with W an (N×K) weight — a linear layer; both libraries read
W.t() as a column-major view, no copies. FLOPs = 2·M·N·K.
Method: several copies of the inputs rotated so the working set exceeds the L2, warm-up, then
timed samples between CUDA events (back-to-back calls filling about 1 ms), flashc's and torch's
samples alternating; the median per call.
flashc's result is checked against torch's (max relative difference) on the first copy.

    python3 bench/bench_gemm.py [--quick] [--json FILE] [--runs N] [--dtype bf16|fp16|e4m3]
"""
import argparse
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import torch  # noqa: E402

import flashc  # noqa: E402
from bench_timing import record_header, time_cuda_alternating  # noqa: E402

SQUARES = [1024, 2048, 4096, 8192, 16384]
TOKENS = [512, 1024, 2048, 4096, 8192, 16384]
LLM_NK = [(4096, 4096), (14336, 4096), (4096, 14336), (28672, 8192), (8192, 28672)]
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "e4m3": torch.float8_e4m3fn}
ROTATION_BYTES = 256 << 20


def shapes(quick, dtype_name):
    if dtype_name == "e4m3":
        return [(4096, 4096, 4096, "square"), (8192, 8192, 8192, "square")]
    squares = [1024, 4096, 8192] if quick else SQUARES
    tokens = [1024, 8192] if quick else TOKENS
    nk = LLM_NK[:3] + LLM_NK[4:] if quick else LLM_NK
    return ([(s, s, s, "square") for s in squares] +
            [(m, n, k, f"llm N{n} K{k}") for (n, k) in nk for m in tokens])


def rotating(calls):
    """A callable that cycles through `calls` (one per input copy)."""
    state = {"i": 0}

    def run():
        result = calls[state["i"] % len(calls)]()
        state["i"] += 1
        return result
    return run


def make_inputs(m, n, k, dtype):
    bytes_per = (m * k + n * k) * (1 if dtype == torch.float8_e4m3fn else 2)
    copies = max(2, min(16, math.ceil(ROTATION_BYTES / bytes_per)))
    inputs = []
    for _ in range(copies):
        a = (torch.randn(m, k, device="cuda") * 0.5).to(dtype)
        w = (torch.randn(n, k, device="cuda") * 0.5).to(dtype)
        inputs.append((a, w))
    return inputs


def short_reason(error):
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return text[:160]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer shapes and runs")
    parser.add_argument("--json", help="write the full record here")
    parser.add_argument("--runs", type=int)
    parser.add_argument("--dtype", choices=sorted(DTYPES), action="append")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench_gemm.py needs a CUDA GPU (torch.cuda.is_available() is False)")
    dtypes = args.dtype or ["bf16", "fp16", "e4m3"]
    runs = args.runs or (8 if args.quick else 20)
    warmup = 2 if args.quick else 5
    header = record_header("gemm", f"CUDA events, median of {runs} samples after {warmup} warm-ups; inputs rotated "
                           f"over >= {ROTATION_BYTES >> 20} MB")
    print(f"# {header['gpu']}; torch {header['torch']}; flashc {header['flashc']} ({header['flashc_library']})",
          flush=True)
    cases = [(dt, s) for dt in dtypes for s in shapes(args.quick, dt)]
    records = []
    started = time.time()
    for index, (dtype_name, (m, n, k, label)) in enumerate(cases):
        print(f"\r[{index + 1:3d}/{len(cases)}] {dtype_name} {m}x{n}x{k} {time.time() - started:6.1f}s ",
              end="", file=sys.stderr, flush=True)
        dtype = DTYPES[dtype_name]
        inputs = make_inputs(m, n, k, dtype)
        record = {"dtype": dtype_name, "m": m, "n": n, "k": k, "label": label, "flops": 2.0 * m * n * k}
        one = torch.ones((), device="cuda", dtype=torch.float32)
        if dtype == torch.float8_e4m3fn:
            peer_calls = [lambda a=a, w=w: torch._scaled_mm(a, w.t(), scale_a=one, scale_b=one,
                                                            out_dtype=torch.bfloat16) for a, w in inputs]
            flashc_calls = [lambda a=a, w=w: flashc.gemm(a, w.t(), scale_a=one, scale_b=one) for a, w in inputs]
        else:
            peer_calls = [lambda a=a, w=w: torch.matmul(a, w.t()) for a, w in inputs]
            flashc_calls = [lambda a=a, w=w: flashc.gemm(a, w.t()) for a, w in inputs]
        outputs = {}
        players = []
        for method, calls in (("flashc", flashc_calls), ("torch", peer_calls)):
            try:
                outputs[method] = calls[0]().float()
                players.append((method, rotating(calls)))
            except Exception as error:
                record[f"{method}_error"] = short_reason(error)
        # The two libraries' samples alternate (bench_timing.time_cuda_alternating).
        times = time_cuda_alternating([run for _, run in players], warmup, runs)
        for (method, _), ms in zip(players, times):
            if isinstance(ms, float):
                record[f"{method}_ms"] = ms
                record[f"{method}_tflops"] = record["flops"] / (ms * 1e-3) / 1e12
            else:
                record[f"{method}_error"] = short_reason(ms)
        if len(outputs) == 2:
            scale = outputs["torch"].abs().max().item() or 1.0
            record["max_rel_diff_vs_torch"] = (outputs["flashc"] - outputs["torch"]).abs().max().item() / scale
        records.append(record)
        del inputs, outputs
        torch.cuda.empty_cache()
    print(f"\r{'':<70}\r", end="", file=sys.stderr)
    print_table(records)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({**header, "results": records}, handle, indent=1)
        print(f"# wrote {args.json}")
    print(f"# {len(cases)} shapes in {time.time() - started:.0f} s")


def print_table(records):
    print("\n## GEMM D = A·Wᵀ (TFLOP/s; ratio = flashc / torch)")
    print(f"{'dtype':<5} {'M':>6} {'N':>6} {'K':>6} | {'flashc':>7} {'torch':>7} | {'ratio':>6} | note")
    ratios = {}
    for r in records:
        a, b = r.get("flashc_tflops"), r.get("torch_tflops")
        value = a / b if a and b else None
        if value:
            ratios.setdefault(r["dtype"], []).append(value)
        notes = [f"{m}: {r[m + '_error']}" for m in ("flashc", "torch") if m + "_error" in r]
        if "max_rel_diff_vs_torch" in r:
            notes.append(f"max rel Δ {r['max_rel_diff_vs_torch']:.2g}")
        f = lambda x, spec: format(x, spec) if x is not None else "—"  # noqa: E731
        print(f"{r['dtype']:<5} {r['m']:>6} {r['n']:>6} {r['k']:>6} | {f(a, '7.1f')} {f(b, '7.1f')} | "
              f"{f(value, '6.3f')} | {'; '.join(notes)}")
    for dtype, values in ratios.items():
        mean = math.exp(sum(math.log(x) for x in values) / len(values))
        print(f"# geometric mean flashc / torch ({dtype}, {len(values)} shapes): {mean:.3f}")


if __name__ == "__main__":
    main()
