#!/usr/bin/env bash
# get_nvdisasm.sh — nvdisasm for a build machine whose CUDA toolkit lacks it (this project's:
# nvcc and ptxas only): NVIDIA's nvidia-cuda-nvdisasm wheel from PyPI, unpacked into
# /tmp/nvdisasm-wheel. Prints the binary's path; bench/sass_attn.sh and bench/sass_diff.sh take
# it as $NVDISASM (sass_diff.sh also looks there by itself).
#
#   export NVDISASM=$(bash bench/get_nvdisasm.sh)
set -eu
DIR=/tmp/nvdisasm-wheel
found=$(ls "$DIR"/nvidia/cu*/bin/nvdisasm 2>/dev/null | head -1 || true)
if [ -z "$found" ]; then
  mkdir -p "$DIR"
  python3 -m pip download -q --no-deps -d "$DIR" nvidia-cuda-nvdisasm >&2
  (cd "$DIR" && python3 -m zipfile -e nvidia_cuda_nvdisasm-*.whl .)
  found=$(ls "$DIR"/nvidia/cu*/bin/nvdisasm | head -1)
  chmod +x "$found"
fi
echo "$found"
