#!/usr/bin/env python3
"""profile_scaled_mm.py — one torch._scaled_mm call (cuBLASLt FP8, e4m3 in, bf16 out, per-tensor
scales: the peer of bench_gemm.py --dtype e4m3) on M = N = K = SIZE, after one warm-up call, for
Nsight Compute to profile cuBLASLt's kernel at ncu's fixed clock next to flashc's:

    ncu -k regex:nvjet --launch-skip 1 -c 1 python3 bench/profile_scaled_mm.py 8192
"""
import sys

import torch

size = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
a = torch.randn(size, size, device="cuda").to(torch.float8_e4m3fn)
w = torch.randn(size, size, device="cuda").to(torch.float8_e4m3fn)
one = torch.ones((), device="cuda")
for _ in range(2):
    torch._scaled_mm(a, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
torch.cuda.synchronize()
