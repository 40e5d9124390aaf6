#!/usr/bin/env python3
"""profile_attn_peer.py — three forward calls of one attention problem through flashc and through
torch SDPA's cuDNN backend, for Nsight Compute to profile both kernels at its locked clock side by
side (bench/profile_attn_peer.sh runs it; the third call of each is the one profiled):

    python3 bench/profile_attn_peer.py [d,seqlen,batch,heads[,causal]]     (default 128,4096,4,16)
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import torch  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

import flashc  # noqa: E402

fields = (sys.argv[1] if len(sys.argv) > 1 else "128,4096,4,16").split(",")
d, seqlen, batch, heads = (int(x) for x in fields[:4])
causal = len(fields) > 4 and fields[4] == "1"
q, k, v = (torch.randn(batch, seqlen, heads, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
for _ in range(3):
    flashc.flash_attn_func(q, k, v, causal=causal)
torch.cuda.synchronize()
with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
    for _ in range(3):
        torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
torch.cuda.synchronize()
