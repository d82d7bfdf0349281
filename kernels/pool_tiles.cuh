// pool_tiles.cuh: what the pooling kernels that stage input slices in shared memory share: the
// tile of outputs a block owns (the max_pool3d stream and ring kernels, kernels/max_pool3d.cu, and
// avg_pool3d's ring kernel, kernels/avg_pool3d.cu), cp.async and the staging of a slice, the plan
// of tiles and output-depth chunks, and the raising of a kernel's shared-memory limit.
#ifndef VOLUA_POOL_TILES_CUH
#define VOLUA_POOL_TILES_CUH

#include <stdint.h>
#include <stdlib.h>

#include "common.cuh"

// A block's tile (the stream and ring kernels), by the launcher's code TILE: 4, 2, 1 for WX warps
// across, 32 lanes a row and RT0 rows a thread; 16 for one warp across, 16 lanes a row (a warp
// takes two rows) and one row a thread, for outputs of 16 columns or fewer. 8 / WX warps down.
template <int TILE, int RT0>
struct PoolTile {
  static constexpr int WX = TILE == 16 ? 1 : TILE, LW = TILE == 16 ? 16 : 32, RT = TILE == 16 ? 1 : RT0;
  static constexpr int LS = 32 / LW, WY = 8 / WX, TH = WY * LS * RT, TW = LW * WX;
};
// A buffer's pitch from `base` floats: with 16 lanes a row, one where the warp's two rows (`step`
// rows apart) fall on the two halves of the banks.
__host__ __device__ constexpr int pool_pitch(int base, int step, bool half) {
  if (half)
    while ((step * base) % 32 != 16) base += 4;
  return base;
}

// cp.async, 16 and 4 bytes a copy, in groups (scripts/pool_emulate.cpp defines VOLUA_POOL_EMU and
// its own versions, which land each copy at its issue or at its wait, to test both orders).
#ifndef VOLUA_POOL_EMU
__device__ __forceinline__ void pool_cp_async16(float *dst, const float *src) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(a), "l"(src) : "memory");
}
__device__ __forceinline__ void pool_cp_async4(float *dst, const float *src) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(a), "l"(src) : "memory");
}
__device__ __forceinline__ void pool_cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void pool_cp_wait1() { asm volatile("cp.async.wait_group 1;" ::: "memory"); }
__device__ __forceinline__ void pool_cp_wait0() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }
#endif

// The staging of input slices into a buffer of SN floats, SC a row, by 256 threads in units of E
// floats (4: whole float4 rows; 1), NS units a thread: unit e covers floats e E .. e E + E - 1
// of the buffer, whose row 0 and column 0 are the input's row h0 and column w0.
// pool_stage_offsets sets soff[k], the in-slice offset of the thread's k-th unit, or -1 for a unit
// past the buffer or outside the input; for each one outside, it calls outside(e E), which sets
// what the buffers hold there (once: no copy ever writes it). avg_pool3d's ring kernel uses these
// two; max_pool3d's stream and ring kernels still have the same code inline: written with these,
// 48 of max_pool3d.cu's 74 kernels compile to other PTX (registers renumbered, instructions
// reordered, parameters addressed anew), which needs a GPU run to time before it replaces code
// that was measured.
template <int NS, int E, int SC, int SN, typename F>
__device__ __forceinline__ void pool_stage_offsets(int (&soff)[NS], int h0, int w0, int IH, int IW, F outside) {
#pragma unroll
  for (int k = 0; k < NS; k++) {
    const int e = threadIdx.x + 256 * k, r = e * E / SC, c = e * E - r * SC;
    const int h = h0 + r, w = w0 + c;
    soff[k] = -1;
    if (e * E < SN && h >= 0 && h < IH && w >= 0 && w < IW) soff[k] = h * IW + w;
    if (e * E < SN && soff[k] < 0) outside(e * E);
  }
}
// pool_stage_slice copies the thread's units of slice sp into buffer dst (cp.async; the caller
// commits the group).
template <int NS, bool VEC>
__device__ __forceinline__ void pool_stage_slice(float *dst, const float *sp, const int (&soff)[NS]) {
#pragma unroll
  for (int k = 0; k < NS; k++) {
    const int e = threadIdx.x + 256 * k;
    if (soff[k] >= 0) {
      if (VEC) pool_cp_async16(dst + e * 4, sp + soff[k]);
      else pool_cp_async4(dst + e, sp + soff[k]);
    }
  }
}

// Blocks in the stream or ring kernel's grid (G: any struct with tiles_w, tiles_h and dchunk) for OD output depths of a
// plane.
template <typename G>
static int64_t pool_tiles_blocks(const G *t, int64_t OD) {
  return (int64_t)t->tiles_w * t->tiles_h * ((OD + t->dchunk - 1) / t->dchunk);
}

// The stream and ring kernels' tiles (PoolTile<TILE, RT0>) for g's outputs, into t's tiles_w,
// tiles_h and dchunk: *tile is PoolTile's code (4, 2, 1 for more than 64, 32, 16 output columns, 16
// for fewer; left as it is where blockIdx.x would not fit), and a block's output depths are all of
// its plane's, unless that leaves fewer blocks than the number `want` spells (NULL: 16 an SM, two
// waves of 8): then chunks of 4 or more depths (each chunk reads the slices its first windows share
// with the chunk before again).
template <int RT0, typename G>
static cudaError_t pool_tiles_plan(const volua_pool3d_geom *g, const char *want, G *t, int *tile) {
  const int w = g->out[2] > 64 ? 4 : g->out[2] > 32 ? 2 : g->out[2] > 16 ? 1 : 16;
  const int TH = w == 4   ? PoolTile<4, RT0>::TH
                 : w == 2 ? PoolTile<2, RT0>::TH
                 : w == 1 ? PoolTile<1, RT0>::TH
                          : PoolTile<16, RT0>::TH;
  const int TW = w == 16 ? 16 : 32 * w;
  int sms = 0;
  cudaError_t e = volua_sm_count(&sms);
  if (e != cudaSuccess) return e;
  const int64_t tiles_w = (g->out[2] + TW - 1) / TW, tiles_h = (g->out[1] + TH - 1) / TH, OD = g->out[0];
  const int64_t blocks = tiles_w * tiles_h * g->planes, target = want ? atoll(want) : 16 * (int64_t)sms;
  int64_t chunks = (target + blocks - 1) / blocks, most = (OD + 3) / 4;
  if (chunks > most) chunks = most;
  if (chunks < 1) chunks = 1;
  const int64_t dchunk = (OD + chunks - 1) / chunks;
  if (tiles_w * tiles_h * ((OD + dchunk - 1) / dchunk) >= ((int64_t)1 << 31)) return cudaSuccess;
  t->tiles_w = (int)tiles_w, t->tiles_h = (int)tiles_h, t->dchunk = (int)dchunk;
  *tile = w;
  return cudaSuccess;
}

// Raises KERNEL's dynamic shared-memory limit to `bytes`, once for each kernel instantiation.
template <auto KERNEL>
static cudaError_t pool_smem_limit(int bytes) {
  static bool done = false;
  if (done) return cudaSuccess;
  const cudaError_t e = cudaFuncSetAttribute(KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  done = e == cudaSuccess;
  return e;
}

#endif
