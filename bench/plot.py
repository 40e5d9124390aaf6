#!/usr/bin/env python3
"""plot.py — PNG charts from the --json records of bench_attn.py and bench_gemm.py.

    python3 bench/plot.py RECORD.json [RECORD.json ...] [--out-dir docs]

Attention: for each direction (fwd, bwd) and dtype, one figure docs/bench_attn_<dir>_<dtype>.png
with a panel per (head dim, mask): TFLOP/s against seqlen for flashc, SDPA-cuDNN and SDPA-flash
(FA2). GEMM: docs/bench_gemm.png, TFLOP/s of flashc and torch.matmul (cuBLAS) per shape and
dtype. Each chart's title names the GPU, the date and the software. Points a method refused are
left out (the tables of the benchmarks say why). Without matplotlib it says so and exits 0.
"""
import argparse
import json
import os
import sys

COLORS = {"flashc": "#d62728", "cudnn": "#1f77b4", "fa2": "#2ca02c", "torch": "#1f77b4"}
LABELS = {"flashc": "flashc", "cudnn": "SDPA cuDNN", "fa2": "SDPA flash (FA2)", "torch": "torch.matmul (cuBLAS)"}


def subtitle(record):
    software = f"torch {record.get('torch')}"
    if record.get("cudnn"):
        software += f", cuDNN {record['cudnn']}"
    return f"{record.get('gpu')} · {record.get('date', '')[:10]} · flashc {record.get('flashc')} · {software}"


def plot_attention(plt, record, out_dir):
    results = record["results"]
    written = []
    for direction in sorted({r["direction"] for r in results}):
        for dtype in sorted({r["dtype"] for r in results}):
            rows = [r for r in results if r["direction"] == direction and r["dtype"] == dtype]
            head_dims = sorted({r["d"] for r in rows})
            masks = [False, True]
            figure, axes = plt.subplots(len(masks), len(head_dims), figsize=(4.2 * len(head_dims), 6.4),
                                        squeeze=False, sharey=True)
            top = 0.0  # the shared y range is set once, from every panel's points
            for row_index, causal in enumerate(masks):
                for column, d in enumerate(head_dims):
                    axis = axes[row_index][column]
                    points = sorted((r for r in rows if r["d"] == d and r["causal"] == causal),
                                    key=lambda r: r["seqlen"])
                    seqlens = [r["seqlen"] for r in points]
                    for method in ("flashc", "cudnn", "fa2"):
                        xs = [s for s, r in zip(seqlens, points) if r.get(f"{method}_tflops")]
                        ys = [r[f"{method}_tflops"] for r in points if r.get(f"{method}_tflops")]
                        if xs:
                            axis.plot(xs, ys, marker="o", color=COLORS[method], label=LABELS[method])
                            top = max(top, max(ys))
                    if not any(r.get("flashc_tflops") for r in points) and points:
                        reason = next((r.get("flashc_error") for r in points if r.get("flashc_error")), "")
                        reason = reason.split(": ", 1)[-1]  # drop the C function's name
                        axis.text(0.5, 0.5, "flashc: not run\n" + _wrap(reason), transform=axis.transAxes,
                                  ha="center", va="center", fontsize=7, color=COLORS["flashc"])
                    axis.set_xscale("log", base=2)
                    axis.set_xticks(seqlens)
                    axis.set_xticklabels([f"{s // 1024}k" if s >= 1024 else str(s) for s in seqlens])
                    axis.set_title(f"d = {d}, {'causal' if causal else 'no mask'}", fontsize=10)
                    axis.grid(True, alpha=0.3)
                    if column == 0:
                        axis.set_ylabel("TFLOP/s")
                    if row_index == len(masks) - 1:
                        axis.set_xlabel("sequence length (16k tokens per batch)")
            axes[0][0].set_ylim(0, top * 1.08 if top > 0 else 1.0)
            handles, labels = axes[0][0].get_legend_handles_labels()
            if handles:
                figure.legend(handles, labels, loc="lower center", ncol=3, frameon=False)
            figure.suptitle(f"attention {'forward' if direction == 'fwd' else 'backward'}, {dtype}, hidden 2048\n"
                            f"{subtitle(record)}", fontsize=10)
            figure.tight_layout(rect=(0, 0.05, 1, 1))
            path = os.path.join(out_dir, f"bench_attn_{direction}_{dtype}.png")
            figure.savefig(path, dpi=110)
            plt.close(figure)
            written.append(path)
    return written


def _wrap(text, width=40):
    words, lines, line = (text or "").split(), [], ""
    for word in words:
        if len(line) + len(word) + 1 > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    lines.append(line)
    return "\n".join(lines[:4])


def plot_gemm(plt, record, out_dir):
    results = record["results"]
    dtypes = [d for d in ("bf16", "fp16", "e4m3") if any(r["dtype"] == d for r in results)]
    figure, axes = plt.subplots(len(dtypes), 1, figsize=(12, 3.6 * len(dtypes)), squeeze=False)
    for axis, dtype in zip(axes[:, 0], dtypes):
        rows = [r for r in results if r["dtype"] == dtype]
        labels = [f"{r['m']}×{r['n']}×{r['k']}" for r in rows]
        positions = range(len(rows))
        width = 0.4
        for offset, method in ((-width / 2, "flashc"), (width / 2, "torch")):
            axis.bar([p + offset for p in positions], [r.get(f"{method}_tflops") or 0 for r in rows], width,
                     color=COLORS[method], label=LABELS[method])
        axis.set_xticks(list(positions))
        axis.set_xticklabels(labels, rotation=60, ha="right", fontsize=7)
        axis.set_ylabel("TFLOP/s")
        axis.set_title(f"GEMM D = A·Wᵀ, {dtype}", fontsize=10)
        axis.grid(True, axis="y", alpha=0.3)
        axis.legend(fontsize=8)
    figure.suptitle(subtitle(record), fontsize=10)
    figure.tight_layout()
    path = os.path.join(out_dir, "bench_gemm.png")
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return [path]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("records", nargs="+", help="JSON files written by bench_attn.py / bench_gemm.py --json")
    parser.add_argument("--out-dir", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                          "docs"))
    args = parser.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot.py: matplotlib is not installed; no charts written (pip install matplotlib)")
        return 0
    os.makedirs(args.out_dir, exist_ok=True)
    for path in args.records:
        with open(path) as handle:
            record = json.load(handle)
        kind = record.get("benchmark")
        if kind == "attention":
            written = plot_attention(plt, record, args.out_dir)
        elif kind == "gemm":
            written = plot_gemm(plt, record, args.out_dir)
        else:
            print(f"plot.py: {path} is not a bench_attn.py / bench_gemm.py record", file=sys.stderr)
            return 1
        for chart in written:
            print(f"wrote {chart}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
