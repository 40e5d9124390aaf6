# kernel_tools.sh — sourced by the scripts that compile kernel translation units outside the
# build (ptxas_report.sh, sass_attn.sh, sass_diff.sh), so all of them see what the build does:
#   KERNEL_NVCC_FLAGS   nvcc flags of the library's kernel objects (Release, sm_90a), run from
#                       the repository root
#   find_nvdisasm       prints $NVDISASM, the toolkit's nvdisasm, bench/get_nvdisasm.sh's copy
#                       from PyPI or triton's; nothing when there is none
KERNEL_NVCC_FLAGS=(-std=c++17 -O3 -DNDEBUG -DFLASHC_WITH_CUDA=1 -I include -I src --expt-relaxed-constexpr
                   -gencode=arch=compute_90a,code=sm_90a)

find_nvdisasm() {
  if [ -n "${NVDISASM:-}" ]; then echo "$NVDISASM"; return; fi
  command -v nvdisasm || ls /usr/local/cuda/bin/nvdisasm /tmp/nvdisasm-wheel/nvidia/cu*/bin/nvdisasm \
    "$(python3 -c 'import triton, os; print(os.path.dirname(triton.__file__))' 2>/dev/null)"/backends/nvidia/bin/nvdisasm \
    2>/dev/null | head -1
}
