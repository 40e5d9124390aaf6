/*
 * ptx.cuh — flashc's PTX layer: inline-PTX wrappers shared by the Hopper GEMM and attention
 * kernels. Include this one header.
 *
 *   ptx_arch.cuh      FC_PTX_HAS_* target switches, smem_u32()
 *   ptx_misc.cuh      setmaxnreg, proxy fences, named barriers, elect, ldmatrix/stmatrix,
 *                     clusters, float packing, PDL, cp.async + mma.sync (portable path)
 *   ptx_mbarrier.cuh  mbarrier init / arrive / expect_tx / parity waits / remote arrive
 *   ptx_tma.cuh       TMA tile loads (1–5D, L2 hints, multicast), stores, reduce-add, plain
 *                     bulk copies, commit / wait groups, tensor-map prefetch
 *   ptx_desc.cuh      WGMMA shared-memory descriptors, swizzle addressing, k-step advance
 *   ptx_wgmma.cuh     wgmma fence / commit / wait, fragment layouts; the multiplies are
 *                     generated into ptx_wgmma_ops.cuh by gen_ptx_wgmma.py
 *
 * Each wrapper documents the exact PTX it emits. Instructions the current target lacks
 * (wgmma on sm_80, say) compile to a trap, so these headers can be included by every kernel.
 * Tested by tests/ptx/gpu_ptx_*.cu.
 */
#ifndef FLASHC_KERNELS_COMMON_PTX_CUH
#define FLASHC_KERNELS_COMMON_PTX_CUH

#include "kernels/common/ptx_arch.cuh"
#include "kernels/common/ptx_misc.cuh"
#include "kernels/common/ptx_mbarrier.cuh"
#include "kernels/common/ptx_tma.cuh"
#include "kernels/common/ptx_desc.cuh"
#include "kernels/common/ptx_wgmma.cuh"

#endif
