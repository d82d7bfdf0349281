// tc_prims.cuh: the few machine primitives the tensor-core convolutions (tc_core.cuh) use: TF32
// rounding, mma.sync m16n8k8, wgmma, cp.async, TMA tensor loads and their mbarriers, barriers, warp
// shuffles, fences and atomics, memsets and launches. Compiled for the GPU,
// or, with VOLUA_TC_EMULATE, for the host, where each block runs as fibers of one CPU thread and a warp's mma is
// computed from its lanes' fragments: bench/tc_emulate.cpp checks the index arithmetic without a GPU.
#ifndef VOLUA_KERNELS_TC_PRIMS_CUH
#define VOLUA_KERNELS_TC_PRIMS_CUH

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// A switch for measuring: on unless the environment variable `name` is "0".
static inline bool tc_switch_on(const char *name) {
  const char *v = getenv(name);
  return !(v && strcmp(v, "0") == 0);
}
// Programmatic dependent launches (tc_launch_pdl, below) on the tensor-core path: the GEMM after
// the weight preparation (tc_core.cuh), the gated gather after the GEMM (conv_transpose3d.cu).
// VOLUA_TC_PDL=0 (for measuring): plain launches. Read once.
static inline bool tc_pdl(void) {
  static const bool on = tc_switch_on("VOLUA_TC_PDL");
  return on;
}

// Where element (n, k) of an N x 8 wgmma operand (k: 0..7 of a k-step) is, in floats: core matrix
// (n / 8, k / 4), 8 rows of 4 floats (16 bytes) each, 128 bytes apart along K and 256 along N.
static inline
#ifndef VOLUA_TC_EMULATE
__host__ __device__
#endif
int tc_wg_index(int n, int k) { return (n >> 3) * 64 + (k >> 2) * 32 + (n & 7) * 4 + (k & 3); }

#ifndef VOLUA_TC_EMULATE

// -- on the GPU ----

#include <cuda_runtime.h>

#define TC_DEVICE __device__ __forceinline__
#define TC_GLOBAL static __global__
#define TC_BOUNDS(threads, blocks) __launch_bounds__(threads, blocks)
#define TC_GRID_CONST const __grid_constant__ // a kernel parameter whose address TMA reads (the tensor map)
#define TC_SMEM_DECL(name) extern __shared__ __align__(128) unsigned char name[] // 128: TMA destinations
#define TC_SYNC() __syncthreads()
#define tc_syncwarp() __syncwarp()
#define TC_LAUNCH(kernel, grid, block, smem, stream, ...) kernel<<<(grid), (block), (smem), (stream)>>>(__VA_ARGS__)
typedef cudaStream_t tc_stream;
typedef dim3 tc_dim3;

// float -> TF32 (round to nearest, ties away), returned as the bits of a float whose low 13
// mantissa bits are zero: the form mma reads.
TC_DEVICE uint32_t tc_tf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

// c += a * b for one m16n8k8 tile (a: 16x8 row-major fragment, b: 8x8 column fragment).
TC_DEVICE void tc_mma(float c[4], const uint32_t a[4], const uint32_t b[2]) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// 4-byte asynchronous copy global -> shared; when !ok the destination is filled with zeros
// (src-size 0 reads nothing, so `g` only has to be some valid address).
TC_DEVICE void tc_cp4(void *s, const void *g, bool ok) {
  const unsigned sa = (unsigned)__cvta_generic_to_shared(s);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(sa), "l"(g), "r"(ok ? 4 : 0) : "memory");
}

// 16-byte asynchronous copy (both addresses 16-byte aligned), bypassing L1.
TC_DEVICE void tc_cp16(void *s, const void *g) {
  const unsigned sa = (unsigned)__cvta_generic_to_shared(s);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(sa), "l"(g) : "memory");
}

// 16-byte asynchronous copy with zero fill: when !ok the 16 destination bytes become zeros.
TC_DEVICE void tc_cp16z(void *s, const void *g, bool ok) {
  const unsigned sa = (unsigned)__cvta_generic_to_shared(s);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(sa), "l"(g), "r"(ok ? 16 : 0) : "memory");
}

TC_DEVICE void tc_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

// Waits until at most N of this thread's committed groups are still in flight.
template <int N> TC_DEVICE void tc_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// -- TMA: a box of a 5-dimensional tensor copied to shared memory by the copy engine, elements
// outside the tensor read as zeros; completion is counted in bytes on an mbarrier ----
// The driver's CUtensorMap: 128 opaque bytes (declared here: src/ has a cuda.h of its own, which
// an include of the driver's header finds first).
struct alignas(128) tc_tmap {
  unsigned long long opaque[16];
};

TC_DEVICE unsigned tc_smem_addr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

// An mbarrier that completes a phase when `count` threads have arrived and the bytes they announced
// have landed.
TC_DEVICE void tc_mbar_init(uint64_t *bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(tc_smem_addr(bar)), "r"(count) : "memory");
}
// After the inits, before any other thread or the copy engine uses the barriers (then a block barrier).
TC_DEVICE void tc_mbar_fence_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
// This thread's arrival, announcing `bytes` more to land in the current phase.
TC_DEVICE void tc_mbar_expect_tx(uint64_t *bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(tc_smem_addr(bar)), "r"(bytes) : "memory");
}
// Waits until the phase of parity `parity` (the barrier's 0th, 2nd, ... phase: 0; 1st, 3rd: 1) has completed.
TC_DEVICE void tc_mbar_wait(uint64_t *bar, int parity) {
  const unsigned a = tc_smem_addr(bar);
  unsigned done = 0;
  do {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                 : "=r"(done)
                 : "r"(a), "r"(parity)
                 : "memory");
  } while (!done);
}
// The box of `map` at coordinates (c0 innermost .. c4) into dst (128-byte aligned), completing on bar.
TC_DEVICE void tc_tma_load5(void *dst, const tc_tmap *map, int c0, int c1, int c2, int c3, int c4, uint64_t *bar) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, "
               "%6}], [%7];" ::"r"(tc_smem_addr(dst)),
               "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(tc_smem_addr(bar))
               : "memory");
}

// `bytes` (a multiple of 16; both addresses 16-byte aligned) from global to shared memory by the copy
// engine, completing on bar (whose expected bytes must include them).
TC_DEVICE void tc_bulk_load(void *dst, const void *src, unsigned bytes, uint64_t *bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   tc_smem_addr(dst)),
               "l"(src), "r"(bytes), "r"(tc_smem_addr(bar))
               : "memory");
}

TC_DEVICE double tc_shfl_xor(double v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }
TC_DEVICE double tc_shfl(double v, int lane) { return __shfl_sync(0xffffffffu, v, lane); } // lane's v
TC_DEVICE bool tc_all(bool v) { return __all_sync(0xffffffffu, v); } // v on every lane of the (whole) warp
TC_DEVICE void tc_threadfence() { __threadfence(); }
TC_DEVICE int tc_atomic_add(int *p, int v) { return atomicAdd(p, v); } // the old value
TC_DEVICE double tc_ld_l2(const double *p) { return __ldcg(p); }      // past L1: another block's writes
TC_DEVICE float tc_ld_l2f(const float *p) { return __ldcg(p); }
TC_DEVICE int tc_sync_or(int v) { return __syncthreads_or(v); } // a block barrier; whether v was set on any thread

// Named barriers (ids 1..15; 0 is __syncthreads): `count` threads, whole warps, take part.
// tc_bar_sync waits for the phase to complete; tc_bar_arrive counts towards it without waiting.
TC_DEVICE void tc_bar_sync(int id, int count) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory"); }
TC_DEVICE void tc_bar_arrive(int id, int count) { asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(count) : "memory"); }


// -- wgmma (sm_90a): a warpgroup's (4 warps') 64 x N x 8 product, D += A * B. A from registers, in
// mma.sync's m16n8k8 fragment order, warp w of the group holding rows 16w..16w+15; B from shared
// memory, N x 8 in the no-swizzle K-major core-matrix layout (tc_wg_index), named by a descriptor;
// D in mma.sync's C order per n8 tile. Asynchronous: tc_wg_fence before the first product that
// reads registers written since, tc_wg_commit after a batch, tc_wg_wait<n> until at most n batches
// are in flight (before A or D registers are written or read again). bench/wgmma_probe.cu checked
// these layouts on an H200. Built only into the sm_90a code: the host takes this path on compute
// capability 9.0 only (Env::wg), where the runtime loads that code.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TC_WG_ASM(...) asm volatile(__VA_ARGS__)
#define TC_WG_OP(text) asm volatile(text ::: "memory")
#else
#define TC_WG_ASM(...) __trap()
#define TC_WG_OP(text) __trap()
#endif
typedef uint64_t tc_wg_ref; // B's shared-memory descriptor: address, LBO 128 (along K), SBO 256 (along N), no swizzle
TC_DEVICE tc_wg_ref tc_wg_make(const float *b) {
  return (uint64_t)((tc_smem_addr(b) >> 4) & 0x3fffu) | (uint64_t)(128 >> 4) << 16 | (uint64_t)(256 >> 4) << 32;
}
TC_DEVICE tc_wg_ref tc_wg_at(tc_wg_ref r, unsigned bytes) { return r + (bytes >> 4); } // (no carry: shared offsets < 2^18)
TC_DEVICE void tc_wg_fence() { TC_WG_OP("wgmma.fence.sync.aligned;"); }
TC_DEVICE void tc_wg_commit() { TC_WG_OP("wgmma.commit_group.sync.aligned;"); }
template <int N> TC_DEVICE void tc_wg_wait() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
#else
  __trap();
#endif
}
// Orders this thread's generic-proxy writes to shared memory (st.shared, cp.async) before later
// reads by the async proxy (wgmma's B operand).
TC_DEVICE void tc_fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
template <int WN> TC_DEVICE void tc_wg_mma(float (&d)[WN][4], const uint32_t (&a)[4], tc_wg_ref b);
template <> TC_DEVICE void tc_wg_mma<1>(float (&d)[1][4], const uint32_t (&a)[4], tc_wg_ref b) {
  TC_WG_ASM("wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, 1, 1, 1;"
            : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
template <> TC_DEVICE void tc_wg_mma<2>(float (&d)[2][4], const uint32_t (&a)[4], tc_wg_ref b) {
  TC_WG_ASM("wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, %12, 1, 1, 1;"
            : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
template <> TC_DEVICE void tc_wg_mma<3>(float (&d)[3][4], const uint32_t (&a)[4], tc_wg_ref b) {
  TC_WG_ASM("wgmma.mma_async.sync.aligned.m64n24k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11}, {%12, %13, %14, %15}, %16, 1, 1, 1;"
            : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
template <> TC_DEVICE void tc_wg_mma<4>(float (&d)[4][4], const uint32_t (&a)[4], tc_wg_ref b) {
  TC_WG_ASM("wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, %20, 1, 1, 1;"
            : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
template <> TC_DEVICE void tc_wg_mma<8>(float (&d)[8][4], const uint32_t (&a)[4], tc_wg_ref b) {
  TC_WG_ASM("wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, 1, 1, 1;"
            : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}


// -- wgmma with both operands from shared memory (sm_90a; conv3d_cl.cu): A (64 x 8, rows of M) and
// B (N x 8) K-major in the 128-byte swizzle that TMA writes with CU_TENSOR_MAP_SWIZZLE_128B: rows of
// 32 floats (128 bytes), the 16-byte chunk c of row r at chunk c ^ (r & 7), groups of 8 rows 1024
// bytes apart (the buffers 1024-byte aligned). A k-step of 8 is a 32-byte step of the start address.
TC_DEVICE uint64_t tc_wg_desc128(const void *p) {
  return (uint64_t)((tc_smem_addr(p) >> 4) & 0x3fffu) | (uint64_t)1 << 16 | (uint64_t)(1024 >> 4) << 32 | (uint64_t)1 << 62;
}
template <int WN> TC_DEVICE void tc_wg_mma_ss(float (&d)[WN][4], uint64_t a, uint64_t b);
template <> TC_DEVICE void tc_wg_mma_ss<8>(float (&d)[8][4], uint64_t a, uint64_t b) {
  TC_WG_ASM("wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, 1, 1, 1;"
            : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])
            : "l"(a), "l"(b));
}
template <> TC_DEVICE void tc_wg_mma_ss<16>(float (&d)[16][4], uint64_t a, uint64_t b) {
  TC_WG_ASM("wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, 1, 1, 1;"
            : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3])
            : "l"(a), "l"(b));
}
template <> TC_DEVICE void tc_wg_mma_ss<20>(float (&d)[20][4], uint64_t a, uint64_t b) {
  TC_WG_ASM("wgmma.mma_async.sync.aligned.m64n160k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79}, %80, %81, 1, 1, 1;"
            : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]), "+f"(d[16][0]), "+f"(d[16][1]), "+f"(d[16][2]), "+f"(d[16][3]), "+f"(d[17][0]), "+f"(d[17][1]), "+f"(d[17][2]), "+f"(d[17][3]), "+f"(d[18][0]), "+f"(d[18][1]), "+f"(d[18][2]), "+f"(d[18][3]), "+f"(d[19][0]), "+f"(d[19][1]), "+f"(d[19][2]), "+f"(d[19][3])
            : "l"(a), "l"(b));
}
template <> TC_DEVICE void tc_wg_mma_ss<24>(float (&d)[24][4], uint64_t a, uint64_t b) {
  TC_WG_ASM("wgmma.mma_async.sync.aligned.m64n192k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, %96, %97, 1, 1, 1;"
            : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]), "+f"(d[16][0]), "+f"(d[16][1]), "+f"(d[16][2]), "+f"(d[16][3]), "+f"(d[17][0]), "+f"(d[17][1]), "+f"(d[17][2]), "+f"(d[17][3]), "+f"(d[18][0]), "+f"(d[18][1]), "+f"(d[18][2]), "+f"(d[18][3]), "+f"(d[19][0]), "+f"(d[19][1]), "+f"(d[19][2]), "+f"(d[19][3]), "+f"(d[20][0]), "+f"(d[20][1]), "+f"(d[20][2]), "+f"(d[20][3]), "+f"(d[21][0]), "+f"(d[21][1]), "+f"(d[21][2]), "+f"(d[21][3]), "+f"(d[22][0]), "+f"(d[22][1]), "+f"(d[22][2]), "+f"(d[22][3]), "+f"(d[23][0]), "+f"(d[23][1]), "+f"(d[23][2]), "+f"(d[23][3])
            : "l"(a), "l"(b));
}
template <> TC_DEVICE void tc_wg_mma_ss<28>(float (&d)[28][4], uint64_t a, uint64_t b) {
  TC_WG_ASM("wgmma.mma_async.sync.aligned.m64n224k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111}, %112, %113, 1, 1, 1;"
            : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]), "+f"(d[16][0]), "+f"(d[16][1]), "+f"(d[16][2]), "+f"(d[16][3]), "+f"(d[17][0]), "+f"(d[17][1]), "+f"(d[17][2]), "+f"(d[17][3]), "+f"(d[18][0]), "+f"(d[18][1]), "+f"(d[18][2]), "+f"(d[18][3]), "+f"(d[19][0]), "+f"(d[19][1]), "+f"(d[19][2]), "+f"(d[19][3]), "+f"(d[20][0]), "+f"(d[20][1]), "+f"(d[20][2]), "+f"(d[20][3]), "+f"(d[21][0]), "+f"(d[21][1]), "+f"(d[21][2]), "+f"(d[21][3]), "+f"(d[22][0]), "+f"(d[22][1]), "+f"(d[22][2]), "+f"(d[22][3]), "+f"(d[23][0]), "+f"(d[23][1]), "+f"(d[23][2]), "+f"(d[23][3]), "+f"(d[24][0]), "+f"(d[24][1]), "+f"(d[24][2]), "+f"(d[24][3]), "+f"(d[25][0]), "+f"(d[25][1]), "+f"(d[25][2]), "+f"(d[25][3]), "+f"(d[26][0]), "+f"(d[26][1]), "+f"(d[26][2]), "+f"(d[26][3]), "+f"(d[27][0]), "+f"(d[27][1]), "+f"(d[27][2]), "+f"(d[27][3])
            : "l"(a), "l"(b));
}
template <> TC_DEVICE void tc_wg_mma_ss<32>(float (&d)[32][4], uint64_t a, uint64_t b) {
  TC_WG_ASM("wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, 1, 1, 1;"
            : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]), "+f"(d[16][0]), "+f"(d[16][1]), "+f"(d[16][2]), "+f"(d[16][3]), "+f"(d[17][0]), "+f"(d[17][1]), "+f"(d[17][2]), "+f"(d[17][3]), "+f"(d[18][0]), "+f"(d[18][1]), "+f"(d[18][2]), "+f"(d[18][3]), "+f"(d[19][0]), "+f"(d[19][1]), "+f"(d[19][2]), "+f"(d[19][3]), "+f"(d[20][0]), "+f"(d[20][1]), "+f"(d[20][2]), "+f"(d[20][3]), "+f"(d[21][0]), "+f"(d[21][1]), "+f"(d[21][2]), "+f"(d[21][3]), "+f"(d[22][0]), "+f"(d[22][1]), "+f"(d[22][2]), "+f"(d[22][3]), "+f"(d[23][0]), "+f"(d[23][1]), "+f"(d[23][2]), "+f"(d[23][3]), "+f"(d[24][0]), "+f"(d[24][1]), "+f"(d[24][2]), "+f"(d[24][3]), "+f"(d[25][0]), "+f"(d[25][1]), "+f"(d[25][2]), "+f"(d[25][3]), "+f"(d[26][0]), "+f"(d[26][1]), "+f"(d[26][2]), "+f"(d[26][3]), "+f"(d[27][0]), "+f"(d[27][1]), "+f"(d[27][2]), "+f"(d[27][3]), "+f"(d[28][0]), "+f"(d[28][1]), "+f"(d[28][2]), "+f"(d[28][3]), "+f"(d[29][0]), "+f"(d[29][1]), "+f"(d[29][2]), "+f"(d[29][3]), "+f"(d[30][0]), "+f"(d[30][1]), "+f"(d[30][2]), "+f"(d[30][3]), "+f"(d[31][0]), "+f"(d[31][1]), "+f"(d[31][2]), "+f"(d[31][3])
            : "l"(a), "l"(b));
}
// An arrival on an mbarrier (no bytes).
TC_DEVICE void tc_mbar_arrive(uint64_t *bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(tc_smem_addr(bar)) : "memory");
}

static inline cudaError_t tc_memset_async(void *p, int v, size_t n, tc_stream s) { return cudaMemsetAsync(p, v, n, s); }

// -- programmatic dependent launch (sm_90; conv3d_cl.cu's chain of kernels). A kernel launched by
// tc_launch_pdl may start before the kernel before it in the stream has finished: as soon as every
// block of that one has run tc_grid_launch_dependents (or exited). tc_grid_wait then waits until
// that kernel has completed and its writes are visible (at once where there is none).
TC_DEVICE void tc_grid_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
TC_DEVICE void tc_grid_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
template <class... P, class... A>
static inline cudaError_t tc_launch_pdl(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t s, A... args) {
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  at[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cfg.attrs = at;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, kernel, args...);
}

#else

// -- on the host, for bench/tc_emulate.cpp ----

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <vector>
#include <sys/mman.h>
#if defined(__x86_64__) && !defined(TC_EMU_UCONTEXT) // (-DTC_EMU_UCONTEXT tries the other way)
#define TC_EMU_SWITCH_ASM 1
#else
#define TC_EMU_SWITCH_ASM 0
#include <ucontext.h>
#endif

struct tc_dim3 {
  unsigned x = 1, y = 1, z = 1;
  tc_dim3() {}
  tc_dim3(unsigned a, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
typedef void *tc_stream;

// A block's threads are fibers of one CPU thread, switched only where they wait: at a barrier, a
// warp's exchange (mma, shuffle, vote) or an mbarrier. A switch saves the callee-saved registers
// and the stack pointer (x86-64: a few instructions, no system call; elsewhere: ucontext). A CPU
// thread per GPU thread, with std::barrier, spent most of its time in the kernel's futex calls: one
// case that took 162 s takes 12 s this way. Waiting fibers resume round robin, forwards on even
// blocks and backwards on odd ones, so that a missing barrier has two orders in which to show.
struct tc_emu_barrier;
struct tc_emu_named;
struct tc_emu_warp;
struct tc_emu_thread {
  tc_dim3 tid, bid, bdim, gdim;
  unsigned char *smem;
  tc_emu_barrier *block_bar;
  tc_emu_named *named;
  tc_emu_warp *warp;
};
#if TC_EMU_SWITCH_ASM
extern "C" void tc_emu_switch(void **save_sp, void *to_sp);
asm(R"(
  .text
  .p2align 4
  .type tc_emu_switch, @function
tc_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size tc_emu_switch, .-tc_emu_switch
)");
#endif

struct tc_emu_fiber {
#if TC_EMU_SWITCH_ASM
  void *sp = nullptr;
#else
  ucontext_t uc;
#endif
  unsigned char *stack = nullptr;
  bool done = false;
  tc_emu_thread ctx; // its tc_emu while another fiber runs
};

struct tc_emu_sched_t {
  static constexpr size_t STACK = 256 * 1024, GUARD = 4096; // a fiber's stack, above a page no one may touch
  std::vector<tc_emu_fiber> f;
  int n = 0, cur = -1, live = 0, dir = 1;
  uint64_t idle = 0; // yields since the last arrival or exit (a deadlock shows as many)
  const std::function<void(int)> *body = nullptr;
#if TC_EMU_SWITCH_ASM
  void *main_sp = nullptr;
#else
  ucontext_t main_uc;
#endif
  ~tc_emu_sched_t() {
    for (auto &x : f)
      if (x.stack) munmap(x.stack, GUARD + STACK);
  }
};
inline tc_emu_sched_t tc_emu_sched;

extern thread_local tc_emu_thread tc_emu;
static inline void tc_emu_enter(int j);
// An arrival (or an exit): the deadlock check's count of fruitless yields starts again.
static inline void tc_emu_progress() { tc_emu_sched.idle = 0; }
static void tc_emu_fiber_main() {
  tc_emu_sched_t &S = tc_emu_sched;
  (*S.body)(S.cur);
  S.f[(size_t)S.cur].done = true;
  S.live--;
  tc_emu_progress();
  tc_emu_enter(-1); // never returns
  abort();
}

// Leaves the running fiber (or the scheduler, cur -1) for fiber j, or for the scheduler when j is
// -1 and no fiber is left; picks the next live fiber round robin when j is -1.
static inline void tc_emu_enter(int j) {
  tc_emu_sched_t &S = tc_emu_sched;
  const int from = S.cur;
  if (j < 0 && S.live > 0) {
    j = from;
    do j = (j + S.dir + S.n) % S.n;
    while (S.f[(size_t)j].done);
  }
  if (j == from) return;
  S.cur = j;
  if (from >= 0) S.f[(size_t)from].ctx = tc_emu;
#if TC_EMU_SWITCH_ASM
  void **save = from < 0 ? &S.main_sp : &S.f[(size_t)from].sp;
  tc_emu_switch(save, j < 0 ? S.main_sp : S.f[(size_t)j].sp);
#else
  ucontext_t *save = from < 0 ? &S.main_uc : &S.f[(size_t)from].uc;
  swapcontext(save, j < 0 ? &S.main_uc : &S.f[(size_t)j].uc);
#endif
  if (from >= 0) tc_emu = S.f[(size_t)from].ctx; // resumed
}

// A waiting fiber lets the others run.
static inline void tc_emu_yield() {
  tc_emu_sched_t &S = tc_emu_sched;
  if (++S.idle > (uint64_t)(S.n + 1) * 64u) { // every live fiber has found its wait unmet 64 times
    fprintf(stderr, "emulate: every thread of the block waits (a deadlock)\n");
    abort();
  }
  tc_emu_enter(-1);
}

// Runs body(t) for t in [0, n) as fibers until all have returned.
static void tc_emu_run_fibers(int n, int dir, const std::function<void(int)> &body) {
  tc_emu_sched_t &S = tc_emu_sched;
  while ((int)S.f.size() < n) {
    tc_emu_fiber x;
    void *m = mmap(nullptr, tc_emu_sched_t::GUARD + tc_emu_sched_t::STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      fprintf(stderr, "emulate: no memory for a fiber's stack\n");
      abort();
    }
    mprotect(m, tc_emu_sched_t::GUARD, PROT_NONE);
    x.stack = static_cast<unsigned char *>(m);
    S.f.push_back(x);
  }
  S.n = n, S.live = n, S.dir = dir, S.body = &body, S.idle = 0;
  for (int t = 0; t < n; t++) {
    tc_emu_fiber &x = S.f[(size_t)t];
    x.done = false;
#if TC_EMU_SWITCH_ASM
    // the initial stack as tc_emu_switch leaves it: mxcsr and x87 control word, six registers, the
    // entry as return address and a slot that keeps the entry's stack 16-byte aligned as the ABI says
    uint64_t *top = reinterpret_cast<uint64_t *>(x.stack + tc_emu_sched_t::GUARD + tc_emu_sched_t::STACK);
    uint64_t *sp = top - 9;
    uint32_t csr;
    uint16_t cw;
    asm volatile("stmxcsr %0" : "=m"(csr));
    asm volatile("fnstcw %0" : "=m"(cw));
    sp[0] = (uint64_t)csr | (uint64_t)cw << 32;
    for (int r = 1; r <= 6; r++) sp[r] = 0;
    sp[7] = (uint64_t)(uintptr_t)&tc_emu_fiber_main;
    sp[8] = 0;
    x.sp = sp;
#else
    getcontext(&x.uc);
    x.uc.uc_stack.ss_sp = x.stack + tc_emu_sched_t::GUARD;
    x.uc.uc_stack.ss_size = tc_emu_sched_t::STACK;
    x.uc.uc_link = nullptr;
    makecontext(&x.uc, tc_emu_fiber_main, 0);
#endif
  }
  tc_emu_enter(dir > 0 ? 0 : n - 1);
  S.cur = -1;
}

// A barrier of `count` fibers: the last arrival opens it.
struct tc_emu_barrier {
  int count, arrived = 0;
  unsigned gen = 0;
  explicit tc_emu_barrier(int c) : count(c) {}
  void arrive() {
    tc_emu_progress();
    if (++arrived == count) arrived = 0, gen++;
  }
  void arrive_and_wait() {
    const unsigned g = gen;
    arrive();
    while (gen == g) tc_emu_yield();
  }
};

// One warp's exchange area: every lane posts its fragments, then each computes its own outputs.
struct tc_emu_warp {
  uint32_t a[32][4], b[32][2];
  float c[32][4];
  double d[32];
  tc_emu_barrier *bar;
};

// A block's named barriers, made at their first use with that use's count.
struct tc_emu_named {
  tc_emu_barrier *bar[16] = {};
  int any = 0; // tc_sync_or's
  ~tc_emu_named() {
    for (auto *b : bar) delete b;
  }
};

#define threadIdx (tc_emu.tid)
#define blockIdx (tc_emu.bid)
#define blockDim (tc_emu.bdim)
#define gridDim (tc_emu.gdim)
#define TC_DEVICE static inline
#define TC_GLOBAL static
#define TC_BOUNDS(threads, blocks)
#define TC_SMEM_DECL(name) unsigned char *name = tc_emu.smem
#define TC_GRID_CONST const
#define TC_SYNC() tc_emu.block_bar->arrive_and_wait()
#define tc_syncwarp() tc_emu.warp->bar->arrive_and_wait()
#define __restrict__
#define __ldg(p) (*(p))
#ifndef VOLUA_ERR_MAX
#define VOLUA_ERR_MAX 512
#endif
struct int2 { int x, y; };
struct float2 { float x, y; };
struct float4 { float x, y, z, w; };
static inline float4 make_float4(float a, float b, float c, float d) { return float4{a, b, c, d}; }
static inline float2 make_float2(float a, float b) { return float2{a, b}; }
static inline uint32_t __float_as_uint(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float __uint_as_float(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static inline uint32_t tc_tf32(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u; // finite: round half away
  return u;
}

static inline float tc_bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// The tensor core's sum of C and 8 products as Hopper's mma forms it (microsoft/MMA-Sim's model,
// bench/NOTES.md "Accuracy of split TF32"): each term truncated toward zero to 25 fractional bits
// below the largest term's leading bit, the exact sum of those rounded toward zero to float32.
// The truncation is biased (toward zero), so a long-lived accumulator drifts: the emulator shows
// the k-loops' accuracy as the GPU has it. VOLUA_EMU_MMA_ROUND=1: the old model (one rounding to
// nearest of the exact sum), for comparison.
static inline float tc_emu_mma_sum(double c, const double (&p)[8]) {
  static const int exact = [] {
    const char *v = getenv("VOLUA_EMU_MMA_ROUND");
    return v && v[0] == '1';
  }();
  double exact_sum = c;
  for (int k = 0; k < 8; k++) exact_sum += p[k];
  if (exact || !std::isfinite(exact_sum)) return (float)exact_sum;
  int top = INT32_MIN;
  auto see = [&](double t) {
    if (t != 0.0) top = std::max(top, std::ilogb(t));
  };
  see(c);
  for (int k = 0; k < 8; k++) see(p[k]);
  if (top == INT32_MIN) return 0.0f;
  const double q = std::ldexp(1.0, top - 25); // the last bit kept
  auto cut = [&](double t) { return std::trunc(t / q) * q; };
  double s = cut(c); // exact: every term is a multiple of q below 2^(top + 1); nine of them fit a double
  for (int k = 0; k < 8; k++) s += cut(p[k]);
  float f = (float)s; // round to nearest, then step toward zero where that went away from it
  if (std::fabs((double)f) > std::fabs(s)) f = std::nextafter(f, 0.0f);
  return f;
}

// The tensor core's tf32 inputs drop the low 13 bits; products are exact in double; the sum as
// tc_emu_mma_sum.
static inline void tc_mma(float c[4], const uint32_t a[4], const uint32_t b[2]) {
  tc_emu_warp *w = tc_emu.warp;
  const int lane = (int)(tc_emu.tid.x & 31);
  memcpy(w->a[lane], a, sizeof w->a[lane]);
  memcpy(w->b[lane], b, sizeof w->b[lane]);
  memcpy(w->c[lane], c, sizeof w->c[lane]);
  w->bar->arrive_and_wait();
  float A[16][8], B[8][8];
  for (int l = 0; l < 32; l++) {
    const int g = l >> 2, t = l & 3;
    A[g][t] = tc_bits_float(w->a[l][0] & 0xffffe000u);
    A[g + 8][t] = tc_bits_float(w->a[l][1] & 0xffffe000u);
    A[g][t + 4] = tc_bits_float(w->a[l][2] & 0xffffe000u);
    A[g + 8][t + 4] = tc_bits_float(w->a[l][3] & 0xffffe000u);
    B[t][g] = tc_bits_float(w->b[l][0] & 0xffffe000u);
    B[t + 4][g] = tc_bits_float(w->b[l][1] & 0xffffe000u);
  }
  const int g = lane >> 2, t = lane & 3;
  float out[4];
  for (int r = 0; r < 4; r++) {
    const int row = g + (r >= 2 ? 8 : 0), col = 2 * t + (r & 1);
    double prod[8];
    for (int k = 0; k < 8; k++) prod[k] = (double)A[row][k] * (double)B[k][col];
    out[r] = tc_emu_mma_sum(w->c[lane][r], prod);
  }
  w->bar->arrive_and_wait();
  memcpy(c, out, sizeof out);
}

static inline void tc_cp4(void *s, const void *g, bool ok) {
  if (ok) memcpy(s, g, 4);
  else memset(s, 0, 4);
}
static inline void tc_cp16(void *s, const void *g) { memcpy(s, g, 16); }
static inline void tc_cp16z(void *s, const void *g, bool ok) {
  if (ok) memcpy(s, g, 16);
  else memset(s, 0, 16);
}
static inline void tc_commit() {}
template <int N> static inline void tc_wait() {}

static inline double tc_shfl_xor(double v, int mask) {
  tc_emu_warp *w = tc_emu.warp;
  const int lane = (int)(tc_emu.tid.x & 31);
  w->d[lane] = v;
  w->bar->arrive_and_wait();
  const double r = w->d[lane ^ mask];
  w->bar->arrive_and_wait();
  return r;
}

static inline double tc_shfl(double v, int src) {
  tc_emu_warp *w = tc_emu.warp;
  const int lane = (int)(tc_emu.tid.x & 31);
  w->d[lane] = v;
  w->bar->arrive_and_wait();
  const double r = w->d[src & 31];
  w->bar->arrive_and_wait();
  return r;
}

static inline bool tc_all(bool v) {
  tc_emu_warp *w = tc_emu.warp;
  const int lane = (int)(tc_emu.tid.x & 31);
  w->d[lane] = v ? 1.0 : 0.0;
  w->bar->arrive_and_wait();
  bool all = true;
  for (int l = 0; l < 32; l++) all = all && w->d[l] != 0.0;
  w->bar->arrive_and_wait();
  return all;
}

static inline void tc_threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
static inline int tc_atomic_add(int *p, int v) { return std::atomic_ref<int>(*p).fetch_add(v); }
static inline double tc_ld_l2(const double *p) { return *p; }
static inline float tc_ld_l2f(const float *p) { return *p; }
// (three barriers: the previous call's reads are done before v is set, and the set before the read;
// thread 0 clears the flag before it reaches the next call's first barrier)
static inline int tc_sync_or(int v) {
  tc_emu.block_bar->arrive_and_wait();
  if (v) tc_emu.named->any = 1;
  tc_emu.block_bar->arrive_and_wait();
  const int r = tc_emu.named->any;
  tc_emu.block_bar->arrive_and_wait();
  if (tc_emu.tid.x == 0) tc_emu.named->any = 0;
  return r;
}

static inline tc_emu_barrier *tc_emu_bar(int id, int count) {
  tc_emu_named *nb = tc_emu.named;
  if (!nb->bar[id]) nb->bar[id] = new tc_emu_barrier(count);
  return nb->bar[id];
}
static inline void tc_bar_sync(int id, int count) { tc_emu_bar(id, count)->arrive_and_wait(); }
static inline void tc_bar_arrive(int id, int count) { tc_emu_bar(id, count)->arrive(); }

// TMA, emulated: the issuing thread copies at once (a box: zeros outside the tensor). A barrier
// word holds its completed phases (bits 0-15), its arrival count (16-23), the arrivals still
// missing in this phase (24-31) and the bytes still expected (32-63, signed); a phase completes
// when both reach 0; waiters spin on the phase count. The map holds what cuTensorMapEncodeTiled is
// given (tc_core.cuh's tc_encode_map); swz non-zero: the box lands in the 128-byte swizzle
// (tc_emu_swz), as the GPU's CU_TENSOR_MAP_SWIZZLE_128B.
struct tc_tmap {
  const float *base;
  int64_t dim[5], stride[5]; // elements; stride[0] = 1
  int box[5], estride[5];
  int swz;
};
// A shared-memory address: the offset from the block's shared memory (0: as 1024-byte aligned as
// the GPU's swizzle needs).
static inline unsigned tc_smem_addr(const void *p) { return (unsigned)(static_cast<const unsigned char *>(p) - tc_emu.smem); }
// The 128-byte swizzle of a shared-memory byte address: chunk (bits 4-6) ^= row within the 1024-byte group (bits 7-9).
static inline unsigned tc_emu_swz(unsigned a) { return a ^ (((a >> 7) & 7u) << 4); }
static inline void tc_emu_mbar_update(uint64_t *bar, int arrivals, int64_t bytes) {
  tc_emu_progress();
  uint64_t v = std::atomic_ref<uint64_t>(*bar).load();
  uint64_t phase = v & 0xffffu, count = (v >> 16) & 0xffu, missing = (v >> 24) & 0xffu;
  int64_t tx = (int32_t)(uint32_t)(v >> 32);
  missing -= (uint64_t)arrivals;
  tx += bytes;
  if (missing == 0 && tx == 0) phase = (phase + 1) & 0xffffu, missing = count;
  v = phase | count << 16 | (missing & 0xffu) << 24 | (uint64_t)(uint32_t)(int32_t)tx << 32;
  std::atomic_ref<uint64_t>(*bar).store(v);
}
static inline void tc_mbar_init(uint64_t *bar, unsigned count) {
  std::atomic_ref<uint64_t>(*bar).store((uint64_t)count << 16 | (uint64_t)count << 24);
}
static inline void tc_mbar_fence_init() {}
static inline void tc_mbar_expect_tx(uint64_t *bar, unsigned bytes) { tc_emu_mbar_update(bar, 1, bytes); }
static inline void tc_mbar_arrive(uint64_t *bar) { tc_emu_mbar_update(bar, 1, 0); }
static inline void tc_emu_tx_done(uint64_t *bar, unsigned bytes) { tc_emu_mbar_update(bar, 0, -(int64_t)bytes); }
static inline void tc_mbar_wait(uint64_t *bar, int parity) {
  while ((int)(std::atomic_ref<uint64_t>(*bar).load() & 1) == parity) tc_emu_yield();
}
static inline void tc_tma_load5(void *dst, const tc_tmap *m, int c0, int c1, int c2, int c3, int c4, uint64_t *bar) {
  const int c[5] = {c0, c1, c2, c3, c4};
  int n[5];
  for (int d = 0; d < 5; d++) n[d] = (m->box[d] + m->estride[d] - 1) / m->estride[d];
  const unsigned a0 = tc_smem_addr(dst);
  unsigned o = 0; // bytes from dst
  for (int i4 = 0; i4 < n[4]; i4++)
    for (int i3 = 0; i3 < n[3]; i3++)
      for (int i2 = 0; i2 < n[2]; i2++)
        for (int i1 = 0; i1 < n[1]; i1++)
          for (int i0 = 0; i0 < n[0]; i0++, o += 4) {
            const int ii[5] = {i0, i1, i2, i3, i4};
            int64_t off = 0;
            bool in = true;
            for (int d = 0; d < 5; d++) {
              const int64_t x = (int64_t)c[d] + (int64_t)ii[d] * m->estride[d];
              in = in && x >= 0 && x < m->dim[d];
              off += x * m->stride[d];
            }
            const unsigned at = m->swz ? tc_emu_swz(a0 + o) : a0 + o;
            const float v = in ? m->base[off] : 0.0f;
            memcpy(tc_emu.smem + at, &v, 4);
          }
  tc_emu_tx_done(bar, o);
}
static inline void tc_bulk_load(void *dst, const void *src, unsigned bytes, uint64_t *bar) {
  memcpy(dst, src, bytes);
  tc_emu_tx_done(bar, bytes);
}


// wgmma, emulated: each warp's 16 rows by the emulated mma, B read from shared memory by its
// core-matrix index (the layout the GPU's descriptor names).
typedef const float *tc_wg_ref;
static inline tc_wg_ref tc_wg_make(const float *b) { return b; }
static inline tc_wg_ref tc_wg_at(tc_wg_ref r, unsigned bytes) { return r + bytes / 4; }
static inline void tc_wg_fence() {}
static inline void tc_wg_commit() {}
template <int N> static inline void tc_wg_wait() {}
static inline void tc_fence_proxy_async() {}
template <int WN> static inline void tc_wg_mma(float (&d)[WN][4], const uint32_t (&a)[4], tc_wg_ref b) {
  const int lane = (int)(tc_emu.tid.x & 31), g = lane >> 2, t = lane & 3;
  for (int j = 0; j < WN; j++) {
    const uint32_t bb[2] = {__float_as_uint(b[tc_wg_index(8 * j + g, t)]), __float_as_uint(b[tc_wg_index(8 * j + g, t + 4)])};
    tc_mma(d[j], a, bb);
  }
}

// Both operands from shared memory (tc_wg_desc128's layout): the descriptor holds the start
// address (16-byte units) and the 8-row group stride; element (r, k) is at start + (r / 8) * SBO +
// (r % 8) * 128 + 4 k, swizzled.
static inline uint64_t tc_wg_desc128(const void *p) {
  return (uint64_t)((tc_smem_addr(p) >> 4) & 0x3fffu) | (uint64_t)1 << 16 | (uint64_t)(1024 >> 4) << 32 | (uint64_t)1 << 62;
}
static inline uint32_t tc_emu_desc_ld(uint64_t desc, int r, int k) {
  const unsigned start = (unsigned)(desc & 0x3fffu) << 4, sbo = (unsigned)((desc >> 32) & 0x3fffu) << 4;
  uint32_t v;
  memcpy(&v, tc_emu.smem + tc_emu_swz(start + (unsigned)(r >> 3) * sbo + (unsigned)(r & 7) * 128u + 4u * (unsigned)k), 4);
  return v;
}
template <int WN> static inline void tc_wg_mma_ss(float (&d)[WN][4], uint64_t a, uint64_t b) {
  const int lane = (int)(tc_emu.tid.x & 31), g = lane >> 2, t = lane & 3, r = (int)((tc_emu.tid.x >> 5) & 3) * 16 + g;
  const uint32_t aa[4] = {tc_emu_desc_ld(a, r, t), tc_emu_desc_ld(a, r + 8, t), tc_emu_desc_ld(a, r, t + 4),
                          tc_emu_desc_ld(a, r + 8, t + 4)};
  for (int j = 0; j < WN; j++) {
    const uint32_t bb[2] = {tc_emu_desc_ld(b, 8 * j + g, t), tc_emu_desc_ld(b, 8 * j + g, t + 4)};
    tc_mma(d[j], aa, bb);
  }
}

static inline int tc_memset_async(void *p, int v, size_t n, tc_stream) {
  memset(p, v, n);
  return 0;
}

// Runs kernel(args...) on grid x block fibers, one block after another; nothing where
// tc_emu_plan_only (bench/tc_emulate.cpp's `plans`: the host's plan and its report line only).
inline bool tc_emu_plan_only = false;
template <class... P, class... A>
static void tc_emu_launch(void (*kernel)(P...), tc_dim3 grid, tc_dim3 block, size_t smem, A... args) {
  if (tc_emu_plan_only) return;
  const unsigned nthreads = block.x;
  std::vector<unsigned char> mem(smem + 16);
  uint64_t nblock = 0;
  for (unsigned bz = 0; bz < grid.z; bz++)
    for (unsigned by = 0; by < grid.y; by++)
      for (unsigned bx = 0; bx < grid.x; bx++, nblock++) {
        // fresh shared memory per block, poisoned so that a read of unwritten memory shows
        memset(mem.data(), 0xff, mem.size());
        tc_emu_barrier block_bar((int)nthreads);
        tc_emu_named named;
        const unsigned nwarps = (nthreads + 31) / 32;
        std::vector<tc_emu_warp> warps(nwarps);
        std::vector<tc_emu_barrier> wbars;
        wbars.reserve(nwarps);
        for (unsigned w = 0; w < nwarps; w++) wbars.emplace_back((int)(nthreads - w * 32 < 32 ? nthreads - w * 32 : 32));
        for (unsigned w = 0; w < nwarps; w++) warps[w].bar = &wbars[w];
        const std::function<void(int)> body = [&](int t) {
          tc_emu.tid = tc_dim3((unsigned)t);
          tc_emu.bid = tc_dim3(bx, by, bz);
          tc_emu.bdim = block;
          tc_emu.gdim = grid;
          tc_emu.smem = mem.data();
          tc_emu.block_bar = &block_bar;
          tc_emu.named = &named;
          tc_emu.warp = &warps[(unsigned)t / 32];
          kernel(args...);
        };
        tc_emu_run_fibers((int)nthreads, nblock % 2 ? -1 : 1, body);
      }
}
#define TC_LAUNCH(kernel, grid, block, smem, stream, ...) \
  tc_emu_launch(kernel, tc_dim3(grid), tc_dim3(block), (size_t)(smem), __VA_ARGS__)
// (kernels run one after another here: no early starts)
static inline void tc_grid_launch_dependents() {}
static inline void tc_grid_wait() {}
template <class... P, class... A>
static inline int tc_launch_pdl(void (*kernel)(P...), tc_dim3 grid, tc_dim3 block, size_t smem, tc_stream, A... args) {
  tc_emu_launch(kernel, grid, block, smem, args...);
  return 0;
}

#endif

// -- on both ----

// Math "fp32" (split TF32): an operand's big part, the bits the tensor core keeps of a float (it
// truncates), and the rest, exact in a float; the rest is read as TF32 in turn.
TC_DEVICE uint32_t tc_tf32_big(float v) { return __float_as_uint(v) & 0xffffe000u; }
TC_DEVICE float tc_tf32_small(float v) { return v - __uint_as_float(tc_tf32_big(v)); }

// Math "fp32": a value from two sums, big + small where big is finite, else big. (Until the
// thirty-sixth session big held the big products and small the small ones, and this kept an
// infinite big sum from the NaN that an infinite input's small part (inf - inf) put into small.
// Now the k-loops leave acc at 0 and the whole sum in corr (tc_promote), so tc_join(acc, corr) is
// corr, and a sum that is not finite makes the op redo its output instead: fast.h,
// volua_cuda_nf_begin.)
TC_DEVICE float tc_join(float big, float small) { return fabsf(big) < INFINITY ? big + small : big; }

// Math "fp32" (split TF32): a k-step's three products (big big, big small, small big) all go to
// acc, and every TC_PROMOTE k-steps, and at the end of a chunk, acc is added to corr on the CUDA
// cores (rounded to nearest) and cleared; corr is the sum the epilogues take (acc is then 0, so
// tc_join(acc, corr) = corr). Why: the tensor core truncates its sums toward zero (bench/NOTES.md,
// "Accuracy of split TF32"), and an accumulator that holds the whole running sum drifts by about an
// ulp of it per product: with K = 1728 (L2-61's 64 -> 128 k3) the output was off by up to 1.5e-5 of
// its scale, 10 times PyTorch's float32, and GroupNorm after it failed the fp32 tolerance. A sum
// restarted every 16 k-steps stays small and its truncation errors change sign from one to the
// next. It costs 2 to 15 % of the "fp32" time on the H200 (bench/NOTES.md, thirty-sixth session);
// every 8 k-steps halved the error again for 1 to 5 % more (each promotion waits for the
// warpgroup's products in flight). An infinite input or weight now makes NaN in the one
// accumulator (inf times a small part of 0, or inf - inf): the op redoes such outputs (fast.h).
// (Before the thirty-sixth session the small products had a long-lived accumulator of their own,
// corr, and acc the big ones over the whole K.) conv3d_cl.cu and conv3d_pointwise.cu do the same.
#define TC_PROMOTE 16
template <int WM, int WN>
TC_DEVICE void tc_promote(float (&acc)[WM][WN][4], float (&corr)[WM][WN][4]) {
#pragma unroll
  for (int i = 0; i < WM; i++)
#pragma unroll
    for (int j = 0; j < WN; j++)
#pragma unroll
      for (int r = 0; r < 4; r++) {
        corr[i][j][r] += acc[i][j][r];
        acc[i][j][r] = 0.0f;
      }
}

// Math "fp32": where one of a thread's sums is not finite, the call's stamp to the non-finite flag
// (fast.h, volua_cuda_nf_begin: the op then redoes its output); flag NULL: nothing.
template <int WM, int WN>
TC_DEVICE void tc_note_nonfinite(const float (&sum)[WM][WN][4], int *flag, int stamp) {
  if (!flag) return;
  unsigned bad = 0;
#pragma unroll
  for (int i = 0; i < WM; i++)
#pragma unroll
    for (int j = 0; j < WN; j++)
#pragma unroll
      for (int r = 0; r < 4; r++) bad |= (unsigned)!(fabsf(sum[i][j][r]) < INFINITY);
  if (bad) *flag = stamp;
}


#endif
