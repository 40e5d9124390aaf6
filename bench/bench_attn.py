#!/usr/bin/env python3
"""bench_attn.py — flashc attention against torch SDPA (cuDNN and flash backends), same process,
same GPU, same inputs (DESIGN.md §7, FlashAttention-3's benchmark grid).

Grid: 16k tokens per batch (batch = 16384 / seqlen), hidden 2048 (heads = 2048 / d), seqlen
512 ... 16384, d in {64, 128, 256}, causal and not, bf16 and fp16, forward and backward.
FLOPs = 4 · batch · heads · seqlen² · d, halved for causal; backward = 2.5 × forward.
Method: inputs in (batch, seqlen, heads, d), passed to SDPA as transposed views (no copies
for anyone; each method its own copy); warm-up runs, then timed samples between two CUDA events
(back-to-back calls filling about 1 ms, so Python overhead does not pad small cases), the
methods' samples alternating (same clocks and temperature for all); the median per call. The
inputs of one case (3 × 64 MB at 16k tokens) exceed the L2, so every run reads from HBM.
The forward is timed alone; the backward is timed as autograd.grad on a retained graph.
flashc's forward output is compared with cuDNN's (max |Δ|) as a sanity check.
Cases flashc (or a peer) refuses are reported with the reason, not dropped.

    python3 bench/bench_attn.py [--quick] [--json FILE] [--runs N] [--dtype bf16|fp16]
            [--direction fwd|bwd] [--d 64,128] [--seqlen 1024,4096]

Prints a progress line on stderr and a table on stdout: TFLOP/s of flashc, SDPA-cuDNN and
SDPA-flash (FA2), and flashc's ratio to each; geometric means last. The library is the one
`import flashc` finds (FLASHC_LIBRARY, the package, the repository's build directories).
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
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

import flashc  # noqa: E402
from bench_timing import record_header, time_cuda_alternating  # noqa: E402

TOKENS = 16384
HIDDEN = 2048
SEQLENS = [512, 1024, 2048, 4096, 8192, 16384]
HEAD_DIMS = [64, 128, 256]
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
PEERS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "fa2": SDPBackend.FLASH_ATTENTION}
METHODS = ["flashc", "cudnn", "fa2"]


def flops(batch, heads, seqlen, d, causal, direction):
    forward = 4.0 * batch * heads * seqlen * seqlen * d / (2 if causal else 1)
    return forward * (2.5 if direction == "bwd" else 1.0)




def short_reason(error):
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return text[:160]


def make_forward(method, q, k, v, causal):
    """A zero-argument callable running one forward, and the output tensor it produces."""
    if method == "flashc":
        return lambda: flashc.flash_attn_func(q, k, v, causal=causal)
    backend = PEERS[method]
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))  # (batch, heads, seqlen, d) views

    def run():
        with sdpa_kernel([backend]):
            return torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal).transpose(1, 2)
    return run


def make_grad(forward, q, k, v):
    """A zero-argument callable running one backward (autograd.grad on a retained graph)."""
    out = forward()
    dout = torch.randn_like(out)
    grad = lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True)  # noqa: E731
    grad()
    return grad


def bench_case(dtype, d, seqlen, causal, directions, warmup, runs, reference):
    """{method: {'fwd': ms or reason, 'bwd': ...}} for one case. Every method gets its own copy of
    the same inputs, and the methods' samples alternate (bench_timing.time_cuda_alternating), so
    none of them is timed in another's power or thermal state. `reference` collects the forward
    outputs to compare."""
    batch, heads = TOKENS // seqlen, HIDDEN // d
    needs_grad = "bwd" in directions
    results = {method: {} for method in METHODS}
    forwards, inputs = {}, {}
    for method in METHODS:
        generator = torch.Generator(device="cuda").manual_seed(seqlen * 1000 + d)
        q, k, v = (torch.randn(batch, seqlen, heads, d, device="cuda", dtype=dtype, generator=generator)
                   .requires_grad_(needs_grad) for _ in range(3))
        forward = make_forward(method, q, k, v, causal)
        try:
            with torch.no_grad():
                out = forward()
                torch.cuda.synchronize()
            reference[method] = out.float()
            forwards[method], inputs[method] = forward, (q, k, v)
        except Exception as error:  # flashc's NOT_SUPPORTED, a backend that refuses the shape, ...
            reason = short_reason(error)
            results[method] = {direction: reason for direction in directions}
    def time_direction(direction, calls):
        """The methods' calls of one direction timed together; ms or the reason per method."""
        for method, value in zip(calls, time_cuda_alternating(list(calls.values()), warmup, runs)):
            results[method][direction] = value if isinstance(value, float) else short_reason(value)

    if "fwd" in directions and forwards:
        with torch.no_grad():
            time_direction("fwd", forwards)
    if needs_grad:
        grads = {}
        for method, forward in forwards.items():
            try:
                grads[method] = make_grad(forward, *inputs[method])
            except Exception as error:
                results[method]["bwd"] = short_reason(error)
        if grads:
            time_direction("bwd", grads)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="seqlen 1024, 4096, 16384; bf16; fewer runs")
    parser.add_argument("--json", help="write the full record here")
    parser.add_argument("--runs", type=int, help="timed runs per case (default 20, quick 8)")
    parser.add_argument("--dtype", choices=sorted(DTYPES), action="append")
    parser.add_argument("--direction", choices=["fwd", "bwd"], action="append")
    parser.add_argument("--d", help="comma-separated head dims")
    parser.add_argument("--seqlen", help="comma-separated sequence lengths")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench_attn.py needs a CUDA GPU (torch.cuda.is_available() is False)")

    seqlens = [1024, 4096, 16384] if args.quick else SEQLENS
    dtypes = ["bf16"] if args.quick else ["bf16", "fp16"]
    runs = args.runs or (8 if args.quick else 20)
    warmup = 2 if args.quick else 3
    if args.dtype:
        dtypes = args.dtype
    if args.seqlen:
        seqlens = [int(s) for s in args.seqlen.split(",")]
    head_dims = [int(x) for x in args.d.split(",")] if args.d else HEAD_DIMS
    directions = args.direction or ["fwd", "bwd"]

    header = record_header("attention", f"CUDA events, median of {runs} runs after {warmup} warm-ups; tokens {TOKENS}, "
                           f"hidden {HIDDEN}", cudnn=torch.backends.cudnn.version())
    print(f"# {header['gpu']}; torch {header['torch']}, cuDNN {header['cudnn']}; flashc {header['flashc']} "
          f"({header['flashc_library']})", flush=True)
    print(f"# flashc kernels: {header['flashc_kernels']}", flush=True)

    cases = [(dt, d, causal, s) for dt in dtypes for d in head_dims for causal in (False, True) for s in seqlens]
    records = []
    started = time.time()
    for index, (dtype_name, d, causal, seqlen) in enumerate(cases):
        batch, heads = TOKENS // seqlen, HIDDEN // d
        label = f"{dtype_name} d{d} {'causal' if causal else 'full'} seqlen {seqlen}"
        reference = {}
        print(f"\r[{index + 1:3d}/{len(cases)}] {label:<32} {time.time() - started:6.1f}s ",
              end="", file=sys.stderr, flush=True)
        per_method = bench_case(DTYPES[dtype_name], d, seqlen, causal, directions, warmup, runs, reference)
        torch.cuda.empty_cache()
        max_diff = None
        if "flashc" in reference and "cudnn" in reference:
            max_diff = (reference["flashc"] - reference["cudnn"]).abs().max().item()
        for direction in directions:
            record = {"dtype": dtype_name, "d": d, "causal": causal, "seqlen": seqlen, "batch": batch,
                      "heads": heads, "direction": direction,
                      "flops": flops(batch, heads, seqlen, d, causal, direction)}
            for method in METHODS:
                value = per_method[method].get(direction)
                if isinstance(value, float):
                    record[f"{method}_ms"] = value
                    record[f"{method}_tflops"] = record["flops"] / (value * 1e-3) / 1e12
                else:
                    record[f"{method}_error"] = value
            if direction == "fwd" and max_diff is not None:
                record["max_abs_diff_vs_cudnn"] = max_diff
            records.append(record)
    print(f"\r{'':<80}\r", end="", file=sys.stderr)
    print_table(records, directions)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({**header, "results": records}, handle, indent=1)
        print(f"# wrote {args.json}")
    print(f"# {len(cases)} cases in {time.time() - started:.0f} s")


def ratio(record, peer):
    a, b = record.get("flashc_tflops"), record.get(f"{peer}_tflops")
    return a / b if a and b else None


def fmt(value, spec):
    return format(value, spec) if value is not None else "—"


def print_table(records, directions):
    for direction in directions:
        rows = [r for r in records if r["direction"] == direction]
        print(f"\n## attention {direction} (TFLOP/s; ratio = flashc / peer)")
        print(f"{'dtype':<5} {'d':>4} {'mask':<6} {'seqlen':>6} | {'flashc':>7} {'cuDNN':>7} {'FA2':>7} | "
              f"{'vs cuDNN':>8} {'vs FA2':>7} | note")
        for r in rows:
            notes = []
            for method in METHODS:
                if f"{method}_error" in r:
                    notes.append(f"{method}: {r[method + '_error']}")
            if "max_abs_diff_vs_cudnn" in r:
                notes.append(f"max|Δ| vs cuDNN {r['max_abs_diff_vs_cudnn']:.2g}")
            print(f"{r['dtype']:<5} {r['d']:>4} {'causal' if r['causal'] else 'full':<6} {r['seqlen']:>6} | "
                  f"{fmt(r.get('flashc_tflops'), '7.1f')} {fmt(r.get('cudnn_tflops'), '7.1f')} "
                  f"{fmt(r.get('fa2_tflops'), '7.1f')} | {fmt(ratio(r, 'cudnn'), '8.3f')} "
                  f"{fmt(ratio(r, 'fa2'), '7.3f')} | {'; '.join(notes)}")
        for peer in ("cudnn", "fa2"):
            ratios = [x for x in (ratio(r, peer) for r in rows) if x]
            if ratios:
                mean = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
                print(f"# geometric mean flashc / {peer} ({direction}, {len(ratios)} cases): {mean:.3f}")
            else:
                print(f"# flashc / {peer} ({direction}): no case where both ran")


if __name__ == "__main__":
    main()
