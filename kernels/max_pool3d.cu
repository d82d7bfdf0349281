// max_pool3d.cu: max_pool3d with ceil_mode, padding, dilation, int64 indices and PyTorch's NaN
// rule (src/cpu/max_pool3d.c is the reference). Kernels, by the launcher's choice: tiled (windows
// that tile the input, kW 2), stream (k 3 s 1: a tile's input slices in order, each once), ring
// (k 3 and 5 s 2 along h and w: the same, with a ring of slices for any window along d), slab
// (small slices, and larger ones with kD 1: the input of several output depths in shared memory),
// separable (values only, a slice in shared memory), slice (with indices, a slice in shared
// memory), a thread per output with 32-bit plane indices, and a 64-bit grid-stride loop for the rest.
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common.cuh"
#include "pool_tiles.cuh"

// The input positions of one window along one dim: start, start + dilation, ... < end. Positions
// in the padding are skipped by moving start forward a whole number of dilations, so start may
// end up >= end (a window that sees no input). I: int64_t, or int where the plane's sizes fit 32 bits.
template <typename I>
__device__ __forceinline__ void pool_window(I o, I in, I kernel, I stride, I pad, I dilation, I &start, I &end) {
  I s = o * stride - pad;
  I e = s + (kernel - 1) * dilation + 1;
  end = e < in ? e : in;
  if (s < 0) s += (-s + dilation - 1) / dilation * dilation;
  start = s;
}

// -- kernel ----

template <bool WITH_INDICES>
static __global__ void max_pool3d_kernel(volua_pool3d_geom g, const float *__restrict__ x, float *__restrict__ y,
                                         int64_t *__restrict__ indices) {
  const int64_t ID = g.in[0], IH = g.in[1], IW = g.in[2];
  const int64_t OD = g.out[0], OH = g.out[1], OW = g.out[2];
  const int64_t total = g.planes * OD * OH * OW;
  VOLUA_GRID_LOOP(i, total) {
    int64_t t = i;
    const int64_t ow = t % OW;
    t /= OW;
    const int64_t oh = t % OH;
    t /= OH;
    const int64_t od = t % OD;
    const int64_t plane = t / OD;
    int64_t d0, d1, h0, h1, w0, w1;
    pool_window(od, ID, g.kernel[0], g.stride[0], g.padding[0], g.dilation[0], d0, d1);
    pool_window(oh, IH, g.kernel[1], g.stride[1], g.padding[1], g.dilation[1], h0, h1);
    pool_window(ow, IW, g.kernel[2], g.stride[2], g.padding[2], g.dilation[2], w0, w1);
    const float *xp = x + plane * ID * IH * IW;

    // As PyTorch: the first maximum in the window wins, or the last NaN (common.cuh).
    int64_t best_index;
    const float best = volua_window_max(xp, IH, IW, d0, d1, h0, h1, w0, w1, g.dilation[0], g.dilation[1],
                                        g.dilation[2], &best_index);
    y[i] = best;
    if (WITH_INDICES) indices[i] = best_index;
  }
}

// The same computation for volumes whose per-plane sizes fit 32 bits (every real one): a 3D
// grid, x over (oh, ow), y over od, z over planes, so the index arithmetic is 32-bit and done once
// per thread, with only the plane offset in 64 bits.
template <bool WITH_INDICES>
static __global__ void max_pool3d_plane_kernel(volua_pool3d_geom g, const float *__restrict__ x,
                                               float *__restrict__ y, int64_t *__restrict__ indices) {
  const int ID = (int)g.in[0], IH = (int)g.in[1], IW = (int)g.in[2];
  const int OD = (int)g.out[0], OH = (int)g.out[1], OW = (int)g.out[2];
  const int kD = (int)g.kernel[0], kH = (int)g.kernel[1], kW = (int)g.kernel[2];
  const int sD = (int)g.stride[0], sH = (int)g.stride[1], sW = (int)g.stride[2];
  const int pD = (int)g.padding[0], pH = (int)g.padding[1], pW = (int)g.padding[2];
  const int dD = (int)g.dilation[0], dH = (int)g.dilation[1], dW = (int)g.dilation[2];
  const int hw = blockIdx.x * blockDim.x + threadIdx.x;
  if (hw >= OH * OW) return;
  const int oh = hw / OW, ow = hw - oh * OW, od = blockIdx.y;
  // window starts, moved forward past the padding by whole dilations; ends clipped to the input
  int d0 = od * sD - pD, h0 = oh * sH - pH, w0 = ow * sW - pW;
  const int d1 = min(d0 + (kD - 1) * dD + 1, ID), h1 = min(h0 + (kH - 1) * dH + 1, IH),
            w1 = min(w0 + (kW - 1) * dW + 1, IW);
  if (d0 < 0) d0 += (-d0 + dD - 1) / dD * dD;
  if (h0 < 0) h0 += (-h0 + dH - 1) / dH * dH;
  if (w0 < 0) w0 += (-w0 + dW - 1) / dW * dW;
  const int64_t out_plane = (int64_t)OD * OH * OW, in_plane = (int64_t)ID * IH * IW;
  for (int64_t plane = blockIdx.z; plane < g.planes; plane += gridDim.z) {
    const float *xp = x + plane * in_plane;
    float best = -INFINITY;
    int best_index = (d0 * IH + h0) * IW + w0;
    for (int d = d0; d < d1; d += dD)
      for (int h = h0; h < h1; h += dH) {
        const int row = (d * IH + h) * IW;
        for (int w = w0; w < w1; w += dW) {
          const float v = __ldg(xp + row + w);
          if (v > best || isnan(v)) {
            best = v;
            best_index = row + w;
          }
        }
      }
    const int64_t o = plane * out_plane + ((int64_t)od * OH + oh) * OW + ow;
    y[o] = best;
    if (WITH_INDICES) indices[o] = best_index;
  }
}

// Without indices, the max over a window is the max over d of the max over h of the max over w,
// in any order (the value is the same; NaN anywhere gives NaN). One block per (plane, od):
//   1. m[h][w] = max over the window's input slices d of x[d][h][w]: whole slices read with
//      16-byte coalesced loads, each element of a slice once;
//   2. r[h][ow] = max over the w taps of m[h][.];
//   3. y[oh][ow] = max over the h taps of r[.][ow], written coalesced.
// Taps in the padding are absent (-inf never wins, and no tap is NaN there). Compared with a
// thread per output reading its 27 taps (stride-2 loads, half of every sector wasted, each
// element read ~3.4 times through L1), L1 traffic drops several-fold: the kernel becomes bound
// by DRAM. Used when an (H, W) slice and the row maxima fit in shared memory.
// max that returns NaN when either side is NaN: one instruction (max.NaN, sm_80 and later).
__device__ __forceinline__ float nanmax(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

// 1024 threads and at most 32 registers: two blocks (smem-bound) fill an SM's 2048 threads.
// ROWS false: no row maxima; stages 2 and 3 at once, each output's h x w taps from m (no row
// stage, its stores and barrier; more compares where windows overlap along h, but half the shared
// memory where the rows would not fit beside two blocks' slices: k 3, s 1 on 128 x 128).
// VEC: the slices are 16-byte aligned (H W a multiple of 4, x aligned); each stage-1 path is an
// instantiation of its own (the scalar path's unrolled loads, compiled beside the others, made
// k 3, s 1 on 128 x 128 9 % slower; bench/NOTES.md, thirty-third session).
template <bool ROWS, bool VEC>
static __global__ void __launch_bounds__(1024, 2) max_pool3d_separable_kernel(volua_pool3d_geom g, const float *__restrict__ x,
                                                   float *__restrict__ y) {
  extern __shared__ float smem[];
  const int ID = (int)g.in[0], IH = (int)g.in[1], IW = (int)g.in[2];
  const int OD = (int)g.out[0], OH = (int)g.out[1], OW = (int)g.out[2];
  const int kD = (int)g.kernel[0], kH = (int)g.kernel[1], kW = (int)g.kernel[2];
  const int sD = (int)g.stride[0], sH = (int)g.stride[1], sW = (int)g.stride[2];
  const int pD = (int)g.padding[0], pH = (int)g.padding[1], pW = (int)g.padding[2];
  const int dD = (int)g.dilation[0], dH = (int)g.dilation[1], dW = (int)g.dilation[2];
  const int HW = IH * IW;
  float *m = smem, *r = smem + HW; // m: IH x IW, r: IH x OW
  const int od = blockIdx.x;
  const int64_t plane = blockIdx.y + (int64_t)blockIdx.z * gridDim.y;
  if (plane >= g.planes) return;
  const float *xp = x + plane * ((int64_t)ID * HW);

  // 1. max over the valid d taps, 16 bytes at a time when the slices are aligned
  const int d0 = od * sD - pD;
  if (VEC && kD <= 4) {
    // up to 4 valid slices, all loads of an element issued before any max: the loop below waits
    // for each load in turn (a window's 3 slices are 3 round trips to memory), which cost L1-43
    // 12 % (H200: 1.690 -> 1.495 ms). An unused slot repeats the first valid slice (a max is
    // unchanged by a repeated element).
    const float4 *s4[4];
    int nv = 0;
    for (int k = 0; k < kD; k++) {
      const int d = d0 + k * dD;
      if (d >= 0 && d < ID) s4[nv++] = reinterpret_cast<const float4 *>(xp + (int64_t)d * HW);
    }
    float4 *m4 = reinterpret_cast<float4 *>(m);
    if (nv == 0) {
      for (int i = threadIdx.x; i < HW / 4; i += blockDim.x) m4[i] = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
    } else {
      for (int k = nv; k < 4; k++) s4[k] = s4[0];
      const float4 *a0 = s4[0], *a1 = s4[1], *a2 = s4[2], *a3 = s4[3];
      for (int i = threadIdx.x; i < HW / 4; i += blockDim.x) {
        const float4 v0 = __ldg(a0 + i), v1 = __ldg(a1 + i), v2 = __ldg(a2 + i), v3 = __ldg(a3 + i);
        m4[i] = make_float4(nanmax(nanmax(v0.x, v1.x), nanmax(v2.x, v3.x)), nanmax(nanmax(v0.y, v1.y), nanmax(v2.y, v3.y)),
                            nanmax(nanmax(v0.z, v1.z), nanmax(v2.z, v3.z)), nanmax(nanmax(v0.w, v1.w), nanmax(v2.w, v3.w)));
      }
    }
  } else if (VEC) {
    float4 *m4 = reinterpret_cast<float4 *>(m);
    for (int i = threadIdx.x; i < HW / 4; i += blockDim.x) {
      float4 acc = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
      for (int k = 0; k < kD; k++) {
        const int d = d0 + k * dD;
        if (d < 0 || d >= ID) continue;
        const float4 v = __ldg(reinterpret_cast<const float4 *>(xp + (int64_t)d * HW) + i);
        acc.x = nanmax(acc.x, v.x);
        acc.y = nanmax(acc.y, v.y);
        acc.z = nanmax(acc.z, v.z);
        acc.w = nanmax(acc.w, v.w);
      }
      m4[i] = acc;
    }
  } else if constexpr (!VEC) { // 4 elements a thread at a time, so that 4 loads are in flight (63 x 63)
    const int bs = blockDim.x;
    for (int i0 = threadIdx.x; i0 < HW; i0 += 4 * bs) {
      float acc[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
      for (int k = 0; k < kD; k++) {
        const int d = d0 + k * dD;
        if (d < 0 || d >= ID) continue;
        const float *src = xp + (int64_t)d * HW + i0;
        float v[4];
#pragma unroll
        for (int u = 0; u < 4; u++) v[u] = i0 + u * bs < HW ? __ldg(src + u * bs) : -INFINITY;
#pragma unroll
        for (int u = 0; u < 4; u++) acc[u] = nanmax(acc[u], v[u]);
      }
#pragma unroll
      for (int u = 0; u < 4; u++)
        if (i0 + u * bs < HW) m[i0 + u * bs] = acc[u];
    }
  }
  __syncthreads();
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32, TY = blockDim.x / 32;
  float *yp = y + (plane * OD + od) * ((int64_t)OH * OW);
  if constexpr (!ROWS) { // 2 and 3 at once: each output's h x w taps from m
    for (int oh = ty; oh < OH; oh += TY) {
      const int h0 = oh * sH - pH;
      for (int ow = tx; ow < OW; ow += 32) {
        const int w0 = ow * sW - pW;
        float acc = -INFINITY;
        for (int kh = 0; kh < kH; kh++) {
          const int h = h0 + kh * dH;
          if ((unsigned)h >= (unsigned)IH) continue;
          for (int k = 0; k < kW; k++) {
            const int w = w0 + k * dW;
            if ((unsigned)w < (unsigned)IW) acc = nanmax(acc, m[h * IW + w]);
          }
        }
        yp[oh * OW + ow] = acc;
      }
    }
  } else {
    // 2. max over the w taps of every row; a 2D walk (threads along ow, rows along h), no divisions.
    //    ncu on L1-43 (2.80 ms): SM throughput 56%, DRAM 35%, so instructions, not bytes, bound it.
    for (int h = ty; h < IH; h += TY) {
      const float *mrow = m + h * IW;
      for (int ow = tx; ow < OW; ow += 32) {
        const int w0 = ow * sW - pW;
        float acc = -INFINITY;
        for (int k = 0; k < kW; k++) {
          const int w = w0 + k * dW;
          if ((unsigned)w < (unsigned)IW) acc = nanmax(acc, mrow[w]);
        }
        r[h * OW + ow] = acc;
      }
    }
    __syncthreads();
    // 3. max over the h taps, one output each
    for (int oh = ty; oh < OH; oh += TY) {
      const int h0 = oh * sH - pH;
      for (int ow = tx; ow < OW; ow += 32) {
        float acc = -INFINITY;
        for (int k = 0; k < kH; k++) {
          const int h = h0 + k * dH;
          if ((unsigned)h < (unsigned)IH) acc = nanmax(acc, r[h * OW + ow]);
        }
        yp[oh * OW + ow] = acc;
      }
    }
  }
}

// Max pooling with indices, a slice at a time. Which index wins is PyTorch's scan over the window
// in (d, h, w) order: a value replaces the best when it is greater or NaN, so the first maximum
// wins, or the last NaN. That is a reduction whose merge rule depends on the values and their
// in-plane indices only, not on the order of the candidates (a NaN beats a number, and of two NaN
// the larger index; else the greater value, and of equal values the smaller index), so it can be
// split:
//   1. m[h][w], md[h][w] = the winner over the window's d taps at (h, w), md its tap number (the
//      slices read with 16-byte coalesced loads, all of an element's issued before any compare);
//   2. y[oh][ow], indices[oh][ow] = the winner among m[.][.] over the window's h x w taps: with
//      MAXFIRST their maximum, then the smallest index among the taps equal to it (of NaN, the
//      largest); else a merge (pool_better) a tap. MAXFIRST measured faster where a stride along
//      h or w exceeds 1 (k 3 and 5 at stride 2), the merge where both are 1 (k 3 s 1): the
//      launcher's rule (bench/NOTES.md, thirty-third session; why, not understood).
// Each stage starts, as the scan does, from -inf at the window's first position (moved past the
// padding, as pool_window), so an all -inf window, and one that sees no input, give the plane
// kernel's index. The tap numbers are bytes and the indices 32-bit (the launcher checks kD and
// that every window start fits), so that a slice of 128 x 128 takes 80 KB and two blocks fit an SM
// (a first version kept 32-bit indices and the separable kernel's row stage: 190 KB, one block an
// SM, and L1-43 with indices took 3.46 ms against the plane kernel's 3.03; bench/NOTES.md).

// Should (v, k) replace (best, bk)? The merge above, one candidate at a time.
__device__ __forceinline__ bool pool_better(float v, int k, float best, int bk) {
  if (isnan(v)) return !isnan(best) || k > bk;
  if (isnan(best)) return false;
  return v > best || (v == best && k < bk);
}

// pool_window in 32 bits along dim k of g
__device__ __forceinline__ void pool_window32(const volua_pool3d_geom &g, int k, int o, int &start, int &end) {
  pool_window<int>(o, (int)g.in[k], (int)g.kernel[k], (int)g.stride[k], (int)g.padding[k], (int)g.dilation[k], start,
                   end);
}

// VEC: 16-byte aligned slices and kD <= 4 (stage 1's 16-byte path); the other path is an
// instantiation of its own, as the separable kernel's.
template <bool VEC, bool MAXFIRST>
static __global__ void __launch_bounds__(1024, 2)
    max_pool3d_slice_indices_kernel(volua_pool3d_geom g, const float *__restrict__ x, float *__restrict__ y,
                                    int64_t *__restrict__ indices) {
  extern __shared__ float smem[];
  const int ID = (int)g.in[0], IH = (int)g.in[1], IW = (int)g.in[2];
  const int OD = (int)g.out[0], OH = (int)g.out[1], OW = (int)g.out[2];
  const int kD = (int)g.kernel[0], dD = (int)g.dilation[0], dH = (int)g.dilation[1], dW = (int)g.dilation[2];
  const int HW = IH * IW;
  float *m = smem;                                             // IH x IW values
  unsigned char *md = reinterpret_cast<unsigned char *>(m + HW); // IH x IW tap numbers along d
  const int od = blockIdx.x;
  const int64_t plane = blockIdx.y + (int64_t)blockIdx.z * gridDim.y;
  if (plane >= g.planes) return;
  const float *xp = x + plane * ((int64_t)ID * HW);
  int d0, d1;
  pool_window32(g, 0, od, d0, d1);

  // 1. the winner over the d taps, in d order (a later slice replaces on greater or NaN)
  if constexpr (VEC) {
    int nv = 0; // valid taps: d0 + k dD, k < nv
#pragma unroll
    for (int k = 0; k < 4; k++)
      if (k < kD && d0 + k * dD < d1) nv = k + 1;
    for (int i = threadIdx.x; i < HW / 4; i += blockDim.x) {
      float4 v[4];
#pragma unroll
      for (int k = 0; k < 4; k++)
        if (k < nv) v[k] = __ldg(reinterpret_cast<const float4 *>(xp + (int64_t)(d0 + k * dD) * HW) + i);
      float b0 = -INFINITY, b1 = -INFINITY, b2 = -INFINITY, b3 = -INFINITY;
      unsigned t0 = 0, t1 = 0, t2 = 0, t3 = 0;
#pragma unroll
      for (int k = 0; k < 4; k++) {
        if (k < nv) {
          if (v[k].x > b0 || isnan(v[k].x)) b0 = v[k].x, t0 = k;
          if (v[k].y > b1 || isnan(v[k].y)) b1 = v[k].y, t1 = k;
          if (v[k].z > b2 || isnan(v[k].z)) b2 = v[k].z, t2 = k;
          if (v[k].w > b3 || isnan(v[k].w)) b3 = v[k].w, t3 = k;
        }
      }
      reinterpret_cast<float4 *>(m)[i] = make_float4(b0, b1, b2, b3);
      reinterpret_cast<unsigned *>(md)[i] = t0 | t1 << 8 | t2 << 16 | t3 << 24;
    }
  } else { // 4 elements a thread at a time, so that 4 loads are in flight
    const int bs = blockDim.x;
    for (int i0 = threadIdx.x; i0 < HW; i0 += 4 * bs) {
      float best[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
      int bt[4] = {0, 0, 0, 0};
      for (int d = d0, k = 0; d < d1; d += dD, k++) {
        const float *src = xp + (int64_t)d * HW + i0;
        float v[4];
#pragma unroll
        for (int u = 0; u < 4; u++) v[u] = i0 + u * bs < HW ? __ldg(src + u * bs) : -INFINITY;
#pragma unroll
        for (int u = 0; u < 4; u++)
          if (v[u] > best[u] || isnan(v[u])) best[u] = v[u], bt[u] = k;
      }
#pragma unroll
      for (int u = 0; u < 4; u++)
        if (i0 + u * bs < HW) m[i0 + u * bs] = best[u], md[i0 + u * bs] = (unsigned char)bt[u];
    }
  }
  __syncthreads();
  // 2. the winner among the h x w taps, one output each (threads along ow, rows along oh)
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32, TY = blockDim.x / 32;
  const int64_t o0 = (plane * OD + od) * ((int64_t)OH * OW);
  for (int oh = ty; oh < OH; oh += TY) {
    int h0, h1;
    pool_window32(g, 1, oh, h0, h1);
    for (int ow = tx; ow < OW; ow += 32) {
      int w0, w1;
      pool_window32(g, 2, ow, w0, w1);
      float best = -INFINITY;
      int bk = (d0 * IH + h0) * IW + w0;
      if (MAXFIRST) {
        // the maximum first (max.NaN: NaN where any tap is), then the index among the taps that
        // hold it: the smallest (the first maximum) or, of NaN, the largest (the last NaN). An all
        // -inf window gives its first tap, where the d stage left tap 0: the scan's first
        // position; a window with no tap keeps that position.
        for (int h = h0; h < h1; h += dH)
          for (int w = w0; w < w1; w += dW) best = nanmax(best, m[h * IW + w]);
        const bool isn = isnan(best);
        int ik = isn ? INT_MIN : INT_MAX;
        for (int h = h0; h < h1; h += dH)
          for (int w = w0; w < w1; w += dW) {
            const float v = m[h * IW + w];
            if (isn ? isnan(v) : v == best) {
              const int k = (d0 + (int)md[h * IW + w] * dD) * HW + h * IW + w;
              ik = isn ? max(ik, k) : min(ik, k);
            }
          }
        if (ik != INT_MAX) bk = ik;
      } else { // a merge a tap
        for (int h = h0; h < h1; h += dH)
          for (int w = w0; w < w1; w += dW) {
            const float v = m[h * IW + w];
            const int k = (d0 + (int)md[h * IW + w] * dD) * HW + h * IW + w;
            if (pool_better(v, k, best, bk)) best = v, bk = k;
          }
      }
      y[o0 + oh * OW + ow] = best;
      indices[o0 + oh * OW + ow] = bk;
    }
  }
}

// Small slices: a block takes R consecutive output depths of one plane. It stages the part of the
// input their windows cover, padding included, in shared memory (the slab: PD x PH x PW, -inf
// where a tap falls in the padding or past the end), then each thread takes the block's outputs in
// turn and scans its window from the slab in (d, h, w) order, as the plane kernel does, writing
// consecutive outputs. A -inf tap never replaces the best (neither greater than it nor NaN), so
// the padding needs no bounds checks and the scan gives the plane kernel's values and indices;
// the index starts, as there, at the window's first position moved past the padding. Taps are
// unrolled for kernels (3, 3, 3) and (1, 3, 3) (KD = KH = KW = 0: loops). Every input element
// crosses DRAM about once, where the separable kernel gave a block of 1024 threads a slice of a
// few hundred elements (I3D's 28 x 28 and 14 x 14 branches: 3 to 15 % of their byte floors) and
// the plane kernel reads each element kD kH kW / (sD sH sW) times through L1. A first version
// without the -inf border (bounds checks and loops) was slower on 63 x 63 slices than the
// separable kernel (bench/NOTES.md, thirty-third session).
struct SlabGeom {
  int R, PH, PW; // output depths a block, the slab's padded rows and columns
};

template <bool WITH_INDICES, int KD, int KH, int KW>
static __global__ void __launch_bounds__(256) max_pool3d_slab_kernel(volua_pool3d_geom g, SlabGeom sg,
                                                                     const float *__restrict__ x, float *__restrict__ y,
                                                                     int64_t *__restrict__ indices) {
  extern __shared__ float slab[];
  const int ID = (int)g.in[0], IH = (int)g.in[1], IW = (int)g.in[2];
  const int OD = (int)g.out[0], OH = (int)g.out[1], OW = (int)g.out[2];
  const int sD = (int)g.stride[0], sH = (int)g.stride[1], sW = (int)g.stride[2];
  const int pD = (int)g.padding[0], pH = (int)g.padding[1], pW = (int)g.padding[2];
  const int dD = (int)g.dilation[0], dH = (int)g.dilation[1], dW = (int)g.dilation[2];
  const int kD = KD ? KD : (int)g.kernel[0], kH = KH ? KH : (int)g.kernel[1], kW = KW ? KW : (int)g.kernel[2];
  const int HW = IH * IW, PH = sg.PH, PW = sg.PW, PHW = PH * PW;
  const int64_t plane = blockIdx.y + (int64_t)blockIdx.z * gridDim.y;
  if (plane >= g.planes) return;
  const int od0 = blockIdx.x * sg.R, od1 = min(od0 + sg.R, OD);
  // the slab: input depths dlo .. dlo + PD - 1 (the windows' raw extent), rows -pH .., columns -pW ..
  const int dlo = od0 * sD - pD, PD = (od1 - 1 - od0) * sD + (kD - 1) * dD + 1;
  // 1. -inf everywhere (the launcher rounds the slab up to whole float4)
  const int n4 = (PD * PHW + 3) / 4;
  for (int i = threadIdx.x; i < n4; i += blockDim.x)
    reinterpret_cast<float4 *>(slab)[i] = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
  __syncthreads();
  // 2. the input inside it: depths da .. db - 1, whole slices read as one run (rows and columns the
  //    windows never reach are skipped); four loads a thread in flight before any store (a load, a
  //    store and a wait an element took I3D's 28 x 28 stride-2 pooling to a third of DRAM's rate)
  const int da = max(dlo, 0), db = min(dlo + PD, ID), hmax = min(IH, PH - pH), wmax = min(IW, PW - pW);
  const float *src = x + plane * ((int64_t)ID * HW) + (int64_t)da * HW;
  float *dst0 = slab + ((da - dlo) * PH + pH) * PW + pW; // input (da, 0, 0)
  const int total = db > da ? (db - da) * HW : 0;
  if (IW % 4 == 0 && ((uintptr_t)src) % 16 == 0) {
    const int m4 = total / 4;
    for (int j0 = threadIdx.x; j0 < m4; j0 += 4 * blockDim.x) {
      float4 v[4];
#pragma unroll
      for (int u = 0; u < 4; u++)
        if (j0 + u * (int)blockDim.x < m4) v[u] = __ldg(reinterpret_cast<const float4 *>(src) + j0 + u * blockDim.x);
#pragma unroll
      for (int u = 0; u < 4; u++) {
        const int j = j0 + u * blockDim.x;
        if (j >= m4) break;
        const int row = 4 * j / IW, w = 4 * j - row * IW, dd = row / IH, h = row - dd * IH;
        if (h >= hmax) continue;
        float *dst = dst0 + (dd * PH + h) * PW + w;
        if (w < wmax) dst[0] = v[u].x;
        if (w + 1 < wmax) dst[1] = v[u].y;
        if (w + 2 < wmax) dst[2] = v[u].z;
        if (w + 3 < wmax) dst[3] = v[u].w;
      }
    }
  } else {
    for (int j0 = threadIdx.x; j0 < total; j0 += 4 * blockDim.x) {
      float v[4];
#pragma unroll
      for (int u = 0; u < 4; u++)
        if (j0 + u * (int)blockDim.x < total) v[u] = __ldg(src + j0 + u * blockDim.x);
#pragma unroll
      for (int u = 0; u < 4; u++) {
        const int j = j0 + u * blockDim.x;
        if (j >= total) break;
        const int row = j / IW, w = j - row * IW, dd = row / IH, h = row - dd * IH;
        if (h < hmax && w < wmax) dst0[(dd * PH + h) * PW + w] = v[u];
      }
    }
  }
  __syncthreads();
  const int OHW = OH * OW, count = (od1 - od0) * OHW;
  const int64_t o0 = (plane * OD + od0) * (int64_t)OHW;
  const int tD = dD * PHW, tH = dH * PW; // a tap's step in the slab along d and h
  for (int i = threadIdx.x; i < count; i += blockDim.x) {
    const int t = i / OW, ow = i - t * OW, r = t / OH, oh = t - r * OH;
    const float *sp = slab + (r * sD * PH + oh * sH) * PW + ow * sW;
    float best = -INFINITY;
    int bi = 0; // the winning tap's in-plane index
    if (WITH_INDICES) {
      int d0, h0, w0, e;
      pool_window32(g, 0, od0 + r, d0, e);
      pool_window32(g, 1, oh, h0, e);
      pool_window32(g, 2, ow, w0, e);
      bi = (d0 * IH + h0) * IW + w0;
    }
    // the raw window start's in-plane index (negative parts where it lies in the padding; a tap
    // there is -inf and never taken)
    const int base = ((od0 + r) * sD - pD) * HW + (oh * sH - pH) * IW + (ow * sW - pW);
#pragma unroll
    for (int kd = 0; kd < kD; kd++)
#pragma unroll
      for (int kh = 0; kh < kH; kh++)
#pragma unroll
        for (int kw = 0; kw < kW; kw++) {
          const float v = sp[kd * tD + kh * tH + kw * dW];
          if (v > best || isnan(v)) {
            best = v;
            if (WITH_INDICES) bi = base + kd * dD * HW + kh * dH * IW + kw * dW;
          }
        }
    y[o0 + i] = best;
    if (WITH_INDICES) indices[o0 + i] = bi;
  }
}

// Windows of 3 x 3 at stride 1 along h and w, KD taps at stride 1 along d, dilation 1 (k 3 s 1:
// Inception's and I3D's branch pooling, "same" pooling): a block owns a tile of TH x TW outputs of
// one plane and walks the input slices its output depths read, in order, each staged once in
// shared memory by cp.async, two slices ahead (three buffers). Per slice a thread takes, for its
// column and its RT consecutive rows, the winner over each row's 3 taps (3 loads) and then over 3
// such rows (in registers, a row shared by 3 outputs), and folds it into the running winners of
// the output depths whose windows end later (KD - 1 of them, in registers); an output depth is
// stored once its last slice is folded. Every input element crosses DRAM once (the tile's edge
// rows and columns twice, through L2), where the separable kernel read each slice for each of the
// KD output depths that need it (k 3 s 1 p 1 on (16, 32, 64, 128, 128): 3.15 ms, 1.27 here on an
// H200; bench/NOTES.md, thirty-fourth session) and the slab kernel scans 27 taps an output. RT 4
// rows a thread measured 1-4 % faster than 8 (fewer registers: 4 blocks an SM with indices, not 2). Positions outside
// the input are -inf in the buffers (set once: they depend on the tile only) and padding slices
// are skipped, so no tap needs a bounds check.
// Indices: the scan's rule (a value replaces the best when greater or NaN) folds the same way in
// any grouping, so the winner of (d, h, w) in order is the winner over d of the winners over h of
// the winners over w; it starts, as the plane kernel's scan, from -inf at the window's first
// position past the padding (a -inf tap never replaces it).
#define POOL_STREAM_RT 4
struct StreamGeom {
  int tiles_w, tiles_h, dchunk; // blockIdx.x: (D chunk, row tile, column tile), column fastest
};

// The scan's step: (v, k) replaces (best, bk) when v is greater or NaN.
__device__ __forceinline__ void pool_step(float &best, int &bk, float v, int k) {
  if (v > best || isnan(v)) best = v, bk = k;
}

// TILE: PoolTile's. VEC: the rows are whole float4 (IW a multiple of 4, x 16-byte aligned): staged
// 16 bytes at a time.
template <bool WITH_INDICES, int KD, int TILE, bool VEC>
static __global__ void __launch_bounds__(256) max_pool3d_stream_kernel(volua_pool3d_geom g, StreamGeom sg,
                                                                       const float *__restrict__ x, float *__restrict__ y,
                                                                       int64_t *__restrict__ indices) {
  using P = PoolTile<TILE, POOL_STREAM_RT>;
  constexpr int WX = P::WX, LW = P::LW, LS = P::LS, RT = P::RT, TH = P::TH, TW = P::TW;
  constexpr int SR = TH + 2, SC = pool_pitch(TW + 8, RT, LW < 32), SN = SR * SC; // a buffer: input rows oh0 - pH .., columns ow0 - 4 ..
  constexpr int E = VEC ? 4 : 1, NS = (SN / E + 255) / 256; // staged units a thread
  __shared__ __align__(16) float buf[3][SN];
  const int ID = (int)g.in[0], IH = (int)g.in[1], IW = (int)g.in[2];
  const int OD = (int)g.out[0], OH = (int)g.out[1], OW = (int)g.out[2];
  const int pD = (int)g.padding[0], pH = (int)g.padding[1], pW = (int)g.padding[2];
  const int HW = IH * IW;
  const int64_t plane = blockIdx.y + (int64_t)blockIdx.z * gridDim.y;
  if (plane >= g.planes) return;
  int b = blockIdx.x;
  const int tw = b % sg.tiles_w;
  b /= sg.tiles_w;
  const int th = b % sg.tiles_h, chunk = b / sg.tiles_h;
  const int oh0 = th * TH, ow0 = tw * TW, od0 = chunk * sg.dchunk, od1 = min(od0 + sg.dchunk, OD);
  // the input slices the chunk's windows cover: dlo .. dhi, of which da .. db exist
  const int dlo = od0 - pD, dhi = od1 - 1 - pD + KD - 1, da = max(dlo, 0), db = min(dhi, ID - 1);
  const int nval = db - da + 1;
  const float *xp = x + plane * ((int64_t)ID * HW);

  // each staged unit's offset in a slice, or -1 outside the input (-inf, set once) or past the buffer
  int soff[NS];
#pragma unroll
  for (int k = 0; k < NS; k++) {
    const int e = threadIdx.x + 256 * k, r = e * E / SC, c = e * E - r * SC;
    const int h = oh0 - pH + r, w = ow0 - 4 + c;
    soff[k] = -1;
    if (e * E < SN && h >= 0 && h < IH && w >= 0 && w < IW) soff[k] = h * IW + w;
    if (e * E < SN && soff[k] < 0)
#pragma unroll
      for (int q = 0; q < 3; q++)
#pragma unroll
        for (int u = 0; u < E; u++) buf[q][e * E + u] = -INFINITY;
  }
  auto issue = [&](int j) { // stage valid slice j (da + j) into buffer j % 3; a group either way
    if (j < nval) {
      const float *sp = xp + (int64_t)(da + j) * HW;
      float *dst = buf[j % 3];
#pragma unroll
      for (int k = 0; k < NS; k++) {
        const int e = threadIdx.x + 256 * k;
        if (soff[k] >= 0) {
          if (VEC) pool_cp_async16(dst + e * 4, sp + soff[k]);
          else pool_cp_async4(dst + e, sp + soff[k]);
        }
      }
    }
    pool_cp_commit();
  };
  issue(0);
  issue(1);

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wx = warp % WX, wy = warp / WX;
  const int lc = LW * wx + lane % LW, lr = (wy * LS + lane / LW) * RT; // column and first row in the tile
  const int ow = ow0 + lc, ohr = oh0 + lr;  // this thread's column, its first row
  const int col = lc + 4 - pW, row = lr;    // their first tap in a buffer
  const bool col_ok = ow < OW;
  // running winners: A[m] over the last m slices (m = 1 .. KD - 1), for each of the RT rows
  constexpr int M = KD > 1 ? KD - 1 : 1;
  float av[M + 1][RT];
  int ai[M + 1][RT];
#pragma unroll
  for (int m = 0; m <= M; m++)
#pragma unroll
    for (int r = 0; r < RT; r++) av[m][r] = -INFINITY, ai[m][r] = 0;
  // a tap's in-plane index, less d HW: the thread's first row's first tap, then r IW + kh IW + kw
  const int hwb = (ohr - pH) * IW + ow - pW;
  const int64_t OHW = (int64_t)OH * OW;

  for (int d = dlo; d <= dhi; d++) {
    const int j = d - da;
    const bool valid = j >= 0 && j < nval; // the same for the whole block
    float pv[RT];
    int pk[RT]; // the slice's winner and its tap's offset kh IW + kw
    if (valid) {
      pool_cp_wait1();
      __syncthreads(); // slice j is in; every thread is done with slice j - 1's buffer
      issue(j + 2);
      const float *bp = buf[j % 3] + row * SC + col;
      float v0, v1, v2;
      int k0 = 0, k1 = 0, k2 = 0;
      auto taps = [&](const float *p, float &v, int &k) {
        if (WITH_INDICES) {
          v = p[0], k = 0;
          pool_step(v, k, p[1], 1);
          pool_step(v, k, p[2], 2);
        } else {
          v = nanmax(nanmax(p[0], p[1]), p[2]);
        }
      };
      taps(bp, v0, k0);
      taps(bp + SC, v1, k1);
#pragma unroll
      for (int r = 0; r < RT; r++) {
        taps(bp + (r + 2) * SC, v2, k2);
        if (WITH_INDICES) {
          float v = v0;
          int k = k0;
          pool_step(v, k, v1, IW + k1);
          pool_step(v, k, v2, 2 * IW + k2);
          pv[r] = v, pk[r] = k;
        } else {
          pv[r] = nanmax(nanmax(v0, v1), v2);
        }
        v0 = v1, k0 = k1, v1 = v2, k1 = k2;
      }
    } else {
#pragma unroll
      for (int r = 0; r < RT; r++) pv[r] = -INFINITY, pk[r] = 0;
    }
    const int dbase = d * HW + hwb; // (only used where a tap of slice d wins)
    const int od = d + pD - (KD - 1);
    if (od >= od0 && col_ok) { // output depth od's last slice is d: store it
      float *yp = y + (plane * OD + od) * OHW + (int64_t)ohr * OW + ow;
      const int d0 = max(od - pD, 0), w0 = max(ow - pW, 0);
#pragma unroll
      for (int r = 0; r < RT; r++) {
        if (ohr + r >= OH) break;
        if (WITH_INDICES) {
          float v = -INFINITY; // the scan's start: the window's first position past the padding
          int k = (d0 * IH + max(ohr + r - pH, 0)) * IW + w0;
          if (KD > 1) pool_step(v, k, av[M][r], ai[M][r]);
          pool_step(v, k, pv[r], dbase + r * IW + pk[r]);
          yp[(int64_t)r * OW] = v;
          indices[(yp - y) + (int64_t)r * OW] = k;
        } else {
          yp[(int64_t)r * OW] = KD > 1 ? nanmax(av[M][r], pv[r]) : pv[r];
        }
      }
    }
    // the running winners take slice d
#pragma unroll
    for (int r = 0; r < RT; r++) {
#pragma unroll
      for (int m = M; m >= 2; m--) {
        if (WITH_INDICES) {
          av[m][r] = av[m - 1][r], ai[m][r] = ai[m - 1][r];
          pool_step(av[m][r], ai[m][r], pv[r], dbase + r * IW + pk[r]);
        } else {
          av[m][r] = nanmax(av[m - 1][r], pv[r]);
        }
      }
      av[1][r] = pv[r];
      if (WITH_INDICES) ai[1][r] = dbase + r * IW + pk[r];
    }
  }
}

// Windows of KH x KW at stride SH x SW along h and w with dilation 1, and any window along d (k 3
// s 2 and k 5 s 2: the downsampling poolings of 3D networks): the ring kernel. As the stream kernel,
// a block owns a tile of TH x TW outputs of one plane and a run of its output depths, and stages
// each input slice it reads once (cp.async, positions outside the input -inf, set once), but in a
// ring of buffers: the slices of one output depth's window (its span along d) and those the next
// output depth adds, which are staged while this one is computed. A thread takes its column and
// RT rows: the winner over each input row's KW taps (RT rows share the rows between them), then
// over KH such rows, and folds them over the window's slices in order into the scan's winner
// (started, as there, from -inf at the window's first position past the padding), so values and
// indices are the plane kernel's. A slice shared by two output depths (k 3 s 2) is reduced twice
// from shared memory, not read twice from memory, where the separable and slice kernels read it
// for each output depth and the slab kernel keeps no slice across blocks.
#define POOL_RING_RT 2 // rows a thread (PoolTile's RT0)
#define POOL_RING_NB 8 // buffers at most: a window's slices (kD - 1) dD + 1 plus its stride
struct RingGeom {
  int tiles_w, tiles_h, dchunk; // as StreamGeom's
  int nb;                       // buffers: (kD - 1) dD + 1 + sD
};

template <int KH, int KW, int SH, int SW, int TILE>
struct RingTile : PoolTile<TILE, POOL_RING_RT> {
  using P = PoolTile<TILE, POOL_RING_RT>;
  static constexpr int RT = P::RT, TH = P::TH, TW = P::TW;
  static constexpr int SR = (TH - 1) * SH + KH;                                              // a buffer's rows (from oh0 SH - pH)
  static constexpr int SC = pool_pitch(((TW - 1) * SW + KW + 4 + 3) / 4 * 4, RT * SH, P::LW < 32); // its columns (from ow0 SW - 4)
  static constexpr int SN = SR * SC, NR = (RT - 1) * SH + KH;          // a thread's input rows a slice
};

template <bool WITH_INDICES, int KH, int KW, int SH, int SW, int TILE, bool VEC>
static __global__ void __launch_bounds__(256) max_pool3d_ring_kernel(volua_pool3d_geom g, RingGeom rg,
                                                                     const float *__restrict__ x, float *__restrict__ y,
                                                                     int64_t *__restrict__ indices) {
  using T = RingTile<KH, KW, SH, SW, TILE>;
  constexpr int WX = T::WX, LW = T::LW, LS = T::LS, RT = T::RT, TH = T::TH, TW = T::TW, SC = T::SC, SN = T::SN;
  constexpr int NR = T::NR;
  constexpr int E = VEC ? 4 : 1, NS = (SN / E + 255) / 256; // staged units a thread
  extern __shared__ __align__(16) float ring[];             // rg.nb buffers of SN floats
  const int ID = (int)g.in[0], IH = (int)g.in[1], IW = (int)g.in[2];
  const int OD = (int)g.out[0], OH = (int)g.out[1], OW = (int)g.out[2];
  const int kD = (int)g.kernel[0], sD = (int)g.stride[0], pD = (int)g.padding[0], dD = (int)g.dilation[0];
  const int pH = (int)g.padding[1], pW = (int)g.padding[2];
  const int HW = IH * IW, nb = rg.nb, span = (kD - 1) * dD;
  const int64_t plane = blockIdx.y + (int64_t)blockIdx.z * gridDim.y;
  if (plane >= g.planes) return;
  int b = blockIdx.x;
  const int tw = b % rg.tiles_w;
  b /= rg.tiles_w;
  const int th = b % rg.tiles_h, chunk = b / rg.tiles_h;
  const int oh0 = th * TH, ow0 = tw * TW, od0 = chunk * rg.dchunk, od1 = min(od0 + rg.dchunk, OD);
  const int da = max(od0 * sD - pD, 0); // the first slice staged: buffer (d - da) % nb holds slice d
  const float *xp = x + plane * ((int64_t)ID * HW);

  int soff[NS]; // each staged unit's offset in a slice, or -1 (outside the input: -inf; past the buffer)
#pragma unroll
  for (int k = 0; k < NS; k++) {
    const int e = threadIdx.x + 256 * k, r = e * E / SC, c = e * E - r * SC;
    const int h = oh0 * SH - pH + r, w = ow0 * SW - 4 + c;
    soff[k] = -1;
    if (e * E < SN && h >= 0 && h < IH && w >= 0 && w < IW) soff[k] = h * IW + w;
    if (e * E < SN && soff[k] < 0)
      for (int q = 0; q < nb; q++)
#pragma unroll
        for (int u = 0; u < E; u++) ring[q * SN + e * E + u] = -INFINITY;
  }
  int next = da; // the next slice to stage
  auto stage = [&](int first, int last) { // slices max(next, first) .. last that exist, one group
    next = max(next, max(first, 0));
    for (; next <= min(last, ID - 1); next++) {
      const float *sp = xp + (int64_t)next * HW;
      float *dst = ring + ((next - da) % nb) * SN;
#pragma unroll
      for (int k = 0; k < NS; k++) {
        const int e = threadIdx.x + 256 * k;
        if (soff[k] >= 0) {
          if (VEC) pool_cp_async16(dst + e * 4, sp + soff[k]);
          else pool_cp_async4(dst + e, sp + soff[k]);
        }
      }
    }
    pool_cp_commit();
  };
  stage(od0 * sD - pD, od0 * sD - pD + span);

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wx = warp % WX, wy = warp / WX;
  const int lc = LW * wx + lane % LW, lr = (wy * LS + lane / LW) * RT; // column and first row in the tile
  const int ow = ow0 + lc, ohr = oh0 + lr;                             // this thread's column, its first row
  const float *tap0 = ring + (lr * SH) * SC + lc * SW + 4 - pW;
  // a tap's in-plane index, less d HW: the thread's first row's window corner, then + rr SH IW + kh IW + kw
  const int hwb = (ohr * SH - pH) * IW + ow * SW - pW;
  int hf[RT], wf; // the windows' first rows and column past the padding (the scan's start)
  {
    int e;
#pragma unroll
    for (int rr = 0; rr < RT; rr++) pool_window32(g, 1, min(ohr + rr, OH - 1), hf[rr], e);
    pool_window32(g, 2, min(ow, OW - 1), wf, e);
  }
  const int64_t OHW = (int64_t)OH * OW;
  for (int od = od0; od < od1; od++) {
    const int e0 = od * sD - pD;
    pool_cp_wait0();
    __syncthreads(); // od's slices are in; every thread is done with od - 1's
    if (od + 1 < od1) stage(e0 + sD, e0 + sD + span); // the next output depth's slices, beside this one's work
    float best[RT];
    int bi[RT];
    {
      int d0, e;
      pool_window32(g, 0, od, d0, e);
#pragma unroll
      for (int rr = 0; rr < RT; rr++) best[rr] = -INFINITY, bi[rr] = (d0 * IH + hf[rr]) * IW + wf;
    }
    for (int k = 0; k < kD; k++) {
      const int d = e0 + k * dD;
      if (d < 0 || d >= ID) continue; // (the same for the whole block)
      const float *bp = tap0 + ((d - da) % nb) * SN;
      float hv[NR];
      int hk[NR];
#pragma unroll
      for (int i = 0; i < NR; i++) { // each input row's winner over its KW taps
        hv[i] = bp[i * SC], hk[i] = 0;
#pragma unroll
        for (int kw = 1; kw < KW; kw++)
          if (WITH_INDICES) pool_step(hv[i], hk[i], bp[i * SC + kw], kw);
          else hv[i] = nanmax(hv[i], bp[i * SC + kw]);
      }
      const int dbase = d * HW + hwb;
#pragma unroll
      for (int rr = 0; rr < RT; rr++) { // then over KH rows, then into the window's winner
        if (WITH_INDICES) {
          float v = hv[rr * SH];
          int o = hk[rr * SH];
#pragma unroll
          for (int kh = 1; kh < KH; kh++) pool_step(v, o, hv[rr * SH + kh], kh * IW + hk[rr * SH + kh]);
          pool_step(best[rr], bi[rr], v, dbase + rr * SH * IW + o);
        } else {
#pragma unroll
          for (int kh = 0; kh < KH; kh++) best[rr] = nanmax(best[rr], hv[rr * SH + kh]);
        }
      }
    }
    if (ow < OW) {
      const int64_t o = (plane * OD + od) * OHW + (int64_t)ohr * OW + ow;
#pragma unroll
      for (int rr = 0; rr < RT; rr++) {
        if (ohr + rr >= OH) break;
        y[o + (int64_t)rr * OW] = best[rr];
        if (WITH_INDICES) indices[o + (int64_t)rr * OW] = bi[rr];
      }
    }
  }
}

// Windows that tile the input (kernel == stride, no padding, dilation 1, every window inside it)
// with kW 2: each thread makes two adjacent outputs of a row from KD x KH input rows, one 16-byte
// load a row, all issued before any max, and one 8-byte store (and one 16-byte store of the two
// indices). Every input element is read once, by a coalesced load, with no shared memory or
// barrier: U-Net's k2 s2 downsampling ran the separable kernel at 2.6 TB/s on an H100 (1.83 ms on
// (16, 32, 128^3), torch.compile 1.62), and SegNet-like ones with indices the plane kernel (H200:
// 1.85 ms, PyTorch 2.25). Indices follow the plane kernel's scan (d, h, w; a later value replaces
// the best when greater or NaN), so they are PyTorch's.
template <int KD, int KH, bool WITH_INDICES>
static __global__ void __launch_bounds__(256) max_pool3d_tiled_kernel(volua_pool3d_geom g, const float *__restrict__ x,
                                                                      float *__restrict__ y, int64_t *__restrict__ indices) {
  const int IH = (int)g.in[1], IW = (int)g.in[2];
  const int OH = (int)g.out[1], OW = (int)g.out[2];
  const int half = OW >> 1; // output pairs a row
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  if (q >= OH * half) return;
  const int oh = q / half, p = q - oh * half, od = blockIdx.y;
  const int64_t in_plane = g.in[0] * (int64_t)IH * IW, out_plane = g.out[0] * (int64_t)OH * OW;
  const int64_t in_off = ((int64_t)od * KD * IH + (int64_t)oh * KH) * IW + 4 * p;
  const int64_t out_off = ((int64_t)od * OH + oh) * OW + 2 * p;
  for (int64_t plane = blockIdx.z; plane < g.planes; plane += gridDim.z) {
    const float *xp = x + plane * in_plane + in_off;
    float4 v[KD * KH];
#pragma unroll
    for (int d = 0; d < KD; d++)
#pragma unroll
      for (int h = 0; h < KH; h++) {
        const float4 *a = reinterpret_cast<const float4 *>(xp + ((int64_t)d * IH + h) * IW);
        v[d * KH + h] = __ldg(a);
      }
    if (WITH_INDICES) {
      // in-plane index of tap (d, h) at column c of the pair's first window
      const int64_t first = ((int64_t)od * KD * IH + (int64_t)oh * KH) * IW + 4 * p;
      float lo = -INFINITY, hi = -INFINITY;
      int64_t ilo = first, ihi = first + 2;
#pragma unroll
      for (int d = 0; d < KD; d++)
#pragma unroll
        for (int h = 0; h < KH; h++) {
          const float4 t = v[d * KH + h];
          const int64_t row = first + ((int64_t)d * IH + h) * IW;
          if (t.x > lo || isnan(t.x)) { lo = t.x; ilo = row; }
          if (t.y > lo || isnan(t.y)) { lo = t.y; ilo = row + 1; }
          if (t.z > hi || isnan(t.z)) { hi = t.z; ihi = row + 2; }
          if (t.w > hi || isnan(t.w)) { hi = t.w; ihi = row + 3; }
        }
      *reinterpret_cast<float2 *>(y + plane * out_plane + out_off) = make_float2(lo, hi);
      *reinterpret_cast<longlong2 *>(indices + plane * out_plane + out_off) = make_longlong2(ilo, ihi);
    } else {
      float lo = nanmax(v[0].x, v[0].y), hi = nanmax(v[0].z, v[0].w);
#pragma unroll
      for (int k = 1; k < KD * KH; k++) {
        lo = nanmax(lo, nanmax(v[k].x, v[k].y));
        hi = nanmax(hi, nanmax(v[k].z, v[k].w));
      }
      *reinterpret_cast<float2 *>(y + plane * out_plane + out_off) = make_float2(lo, hi);
    }
  }
}

// The tiled kernel's conditions; 0 when it does not apply, else KD * 10 + KH.
static int tiled_variant(const volua_pool3d_geom *g, const float *x, const float *y, const int64_t *indices) {
  for (int k = 0; k < 3; k++) {
    if (g->kernel[k] != g->stride[k] || g->padding[k] != 0 || g->dilation[k] != 1) return 0;
    if (g->out[k] * g->kernel[k] > g->in[k]) return 0; // a ceil_mode window past the end
  }
  if (g->kernel[2] != 2 || g->in[2] % 4 != 0 || g->out[2] % 2 != 0) return 0;
  if ((uintptr_t)x % 16 != 0 || (uintptr_t)y % 8 != 0 || (uintptr_t)indices % 16 != 0) return 0;
  // 32-bit rows and in-slice pair indices, and a grid's y for the output depths
  const int64_t lim = (int64_t)1 << 30;
  if (g->in[1] >= lim || g->in[2] >= lim || g->out[0] > 65535 || g->out[1] * (g->out[2] / 2) > lim) return 0;
  const int kd = (int)g->kernel[0], kh = (int)g->kernel[1];
  if ((kd == 1 || kd == 2) && (kh == 1 || kh == 2)) return kd * 10 + kh;
  return 0;
}

// -- launcher ----

// The slab kernel's shared memory: never more than this (slab_depths' budgets are 24 and 64 KB).
#define VOLUA_POOL_SLAB_MAX (200 * 1024)

// The slab of R output depths: its floats (PD x PH x PW, the windows' raw extent), and PH, PW.
static int64_t slab_floats(const volua_pool3d_geom *g, int64_t R, SlabGeom *sg) {
  int64_t ext[3];
  for (int k = 0; k < 3; k++) ext[k] = (g->out[k] - 1) * g->stride[k] + (g->kernel[k] - 1) * g->dilation[k] + 1;
  ext[0] = (R - 1) * g->stride[0] + (g->kernel[0] - 1) * g->dilation[0] + 1;
  if (sg) sg->PH = (int)ext[1], sg->PW = (int)ext[2];
  return ext[0] * ext[1] * ext[2];
}

// The slab's bytes: whole float4 (the kernel sets it 16 bytes at a time).
static int64_t slab_bytes(const volua_pool3d_geom *g, int64_t R) {
  return (slab_floats(g, R, NULL) + 3) / 4 * 4 * (int64_t)sizeof(float);
}

// The slab kernel's output depths a block, or 0 where it does not run. It runs on slices of fewer
// than 4096 elements whose slab fits 24 KB, and on larger ones with kD 1 whose slab fits 64 KB
// (I3D's first pooling, (1, 3, 3) s (1, 2, 2) on 112 x 112: 0.892 -> 0.509 ms with indices on an
// H200; bench/NOTES.md, thirty-third session). Larger slices go to the separable and slice
// kernels, which fill a block with one slice and reduce the d taps first: a slab of three 63 x 63
// slices at k 3, s 2 was slower than they are. R is as large as fits, but small enough for 512
// blocks where the planes are few. VOLUA_POOL_SLAB=0 turns the kernel off, =2 runs it wherever a
// slab fits; VOLUA_POOL_SLAB_KB sets the budget (measuring).
static int64_t slab_depths(const volua_pool3d_geom *g, SlabGeom *sg) {
  static const char *mode = getenv("VOLUA_POOL_SLAB");
  static const char *kb = getenv("VOLUA_POOL_SLAB_KB");
  if (mode && mode[0] == '0') return 0;
  const int64_t HW = g->in[1] * g->in[2];
  int64_t budget = 24 * 1024;
  if (HW >= 4096) {
    if (g->kernel[0] == 1) budget = 64 * 1024;
    else if (!(mode && mode[0] == '2')) return 0;
  }
  if (kb) budget = (int64_t)atoi(kb) * 1024;
  if (budget > VOLUA_POOL_SLAB_MAX) budget = VOLUA_POOL_SLAB_MAX;
  const int64_t OD = g->out[0];
  if (HW <= 0 || OD > 65535) return 0;
  for (int k = 0; k < 3; k++) // (a slab over 200 KB is refused below; this keeps the products small)
    if (g->out[k] * g->stride[k] > (1 << 16) || g->kernel[k] * g->dilation[k] > (1 << 16)) return 0;
  if (slab_bytes(g, 1) > budget) return 0;
  int64_t lo = 1, hi = OD; // the largest R that fits (the slab grows with R)
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    if (slab_bytes(g, mid) <= budget) lo = mid;
    else hi = mid - 1;
  }
  int64_t R = lo;
  const int64_t want = (OD * g->planes + 511) / 512; // output depths a block for 512 blocks
  if (R > want) R = want > 0 ? want : 1;
  if (R * g->out[1] * g->out[2] >= ((int64_t)1 << 30)) return 0; // a block's outputs: 32-bit counts
  slab_floats(g, R, sg);
  sg->R = (int)R;
  return R;
}


// The stream kernel's plan: *wx its tile (PoolTile's code: 4, 2, 1 for outputs of more than 64,
// 32, 16 columns, 16 for fewer; 0 where it does not run) and its tiles. It runs on windows of
// 3 x 3 x 3 at stride 1 with dilation 1 (any padding) and 12 output columns or more. Against the
// kernels before it (H200; bench/NOTES.md, thirty-fourth session): (16, 32, 64, 128, 128) 3.15 ->
// 1.27 ms, I3D's 28 x 28 branch 0.209 -> 0.060, its 14 x 14 one 0.113 -> 0.068; but its 7 x 7
// one 0.029 -> 0.044 (a 16 x 16 tile for 7 x 7 outputs), so fewer than 12 columns keep the slab
// kernel (12 lies between the two measured widths; not measured itself). A block's output depths
// are all of its plane's, unless that leaves fewer than 16 blocks an SM (two waves of 8): then
// chunks of 4 or more depths (each chunk reads the 2 slices before it again). VOLUA_POOL_STREAM=0
// turns it off, =2 runs it on any width; VOLUA_POOL_STREAM_BLOCKS sets the blocks wanted
// (measuring).
static cudaError_t stream_plan(const volua_pool3d_geom *g, StreamGeom *sg, int *wx) {
  static const char *mode = getenv("VOLUA_POOL_STREAM");
  static const char *want = getenv("VOLUA_POOL_STREAM_BLOCKS");
  *wx = 0;
  if (mode && mode[0] == '0') return cudaSuccess;
  for (int k = 0; k < 3; k++)
    if (g->kernel[k] != 3 || g->stride[k] != 1 || g->dilation[k] != 1) return cudaSuccess;
  if (g->out[2] < 12 && !(mode && mode[0] == '2')) return cudaSuccess;
  return pool_tiles_plan<POOL_STREAM_RT>(g, want, sg, wx);
}

// The ring kernel's plan: *wx its tile (as the stream kernel's; 0 where it does not run), its
// tiles and buffers. It runs on windows of 3 x 3 at stride 2 along h and w, and of 5 x 5 with
// indices, with dilation 1 there and padding up to 4, any window along d whose slices and stride
// fit 8 buffers, and 16 output columns or more. Against the kernels before it (H200;
// bench/NOTES.md, thirty-fourth session): k 3 s 2 p 1 on (16, 32, 64, 128, 128) 0.769 -> 0.710
// ms, with indices 1.232 -> 0.904; on (32, 64, 32^3) (16 columns) 0.145 -> 0.125; k 5 s 2 p 2 on
// (8, 32, 64^3) with indices 0.359 -> 0.298. Kept off: k 5 without indices (0.174 -> 0.221: the
// separable kernel reduces the 5 slices first, here each slice's 5 x 5 taps are reduced for each
// of its output depths) and I3D's 28 x 28 k 3 s 2 p 1 (14 columns: 0.110 -> 0.114, with indices
// 0.132 -> 0.152). D chunks as the stream kernel's. VOLUA_POOL_RING=0 turns it off, =2 runs it on
// any width and on k 5 without indices (measuring).
static cudaError_t ring_plan(const volua_pool3d_geom *g, RingGeom *rg, int *wx, bool with_indices) {
  static const char *mode = getenv("VOLUA_POOL_RING");
  *wx = 0;
  if (mode && mode[0] == '0') return cudaSuccess;
  const bool forced = mode && mode[0] == '2';
  const int64_t k = g->kernel[1];
  if (g->kernel[2] != k || (k != 3 && k != 5) || (k == 5 && !with_indices && !forced)) return cudaSuccess;
  for (int i = 1; i < 3; i++)
    if (g->stride[i] != 2 || g->dilation[i] != 1 || g->padding[i] > 4) return cudaSuccess;
  const int64_t nb = (g->kernel[0] - 1) * g->dilation[0] + 1 + g->stride[0];
  if (nb > POOL_RING_NB || (g->out[2] < 16 && !forced)) return cudaSuccess;
  // the scan's start may lie past the input along d (a window with no input slice): its 32-bit
  // in-plane index needs the windows' extent, as the slice kernel's check
  int64_t span = 1;
  for (int i = 0; i < 3 && span < ((int64_t)1 << 31); i++) span *= g->in[i] + g->kernel[i] * g->dilation[i];
  if (span >= ((int64_t)1 << 31)) return cudaSuccess;
  rg->nb = (int)nb;
  return pool_tiles_plan<POOL_RING_RT>(g, NULL, rg, wx);
}


// A kernel switch for measuring: off when the environment variable is "0".
static int pool_switch_on(const char *name) {
  const char *e = getenv(name);
  return !(e && e[0] == '0' && e[1] == 0);
}

static int launch_max_pool3d(const volua_pool3d_geom *g, const float *x, float *y, int64_t *indices,
                             cudaStream_t s, char *err) {
  const char *op = "max_pool3d";
  const int64_t total = g->planes * g->out[0] * g->out[1] * g->out[2];
  if (total <= 0) return 0;
  // the 32-bit variant: every per-plane index (including the padded window ends) fits an int
  const int64_t lim = (int64_t)1 << 30;
  // VOLUA_POOL_TILED=0 turns the tiled kernel off (measuring)
  static const int tiled_on = pool_switch_on("VOLUA_POOL_TILED");
  const int tv = tiled_on ? tiled_variant(g, x, y, indices) : 0;
  if (tv) {
    const int64_t pairs = g->out[1] * (g->out[2] / 2);
    const int64_t pz = g->planes < 65535 ? g->planes : 65535;
    dim3 tgrid((unsigned)((pairs + 255) / 256), (unsigned)g->out[0], (unsigned)pz);
#define VOLUA_TILED(KD, KH)                                                                      \
  (indices ? max_pool3d_tiled_kernel<KD, KH, true><<<tgrid, 256, 0, s>>>(*g, x, y, indices)        \
           : max_pool3d_tiled_kernel<KD, KH, false><<<tgrid, 256, 0, s>>>(*g, x, y, NULL))
    switch (tv) {
    case 22: VOLUA_TILED(2, 2); break;
    case 21: VOLUA_TILED(2, 1); break;
    case 12: VOLUA_TILED(1, 2); break;
    default: VOLUA_TILED(1, 1); break;
    }
#undef VOLUA_TILED
    CUDA_CHECK_LAUNCH();
    return 0;
  }
  int small = g->out[0] <= 65535 && g->out[1] * g->out[2] < lim;
  for (int k = 0; k < 3; k++)
    small = small && g->in[k] < lim && g->kernel[k] * g->dilation[k] < lim && g->out[k] * g->stride[k] < lim;
  small = small && g->in[0] * g->in[1] * g->in[2] < lim;
  if (small) {
    const int64_t py = g->planes < 65535 ? g->planes : 65535;
    dim3 grid((unsigned)((g->out[1] * g->out[2] + 255) / 256), (unsigned)g->out[0], (unsigned)py);
    // the slice kernels' grid: a block per (output depth, plane)
    dim3 sgrid((unsigned)g->out[0], (unsigned)py, (unsigned)((g->planes + py - 1) / py));
    // k 3 s 1 windows with 12 output columns or more: the stream kernel
    StreamGeom tg;
    int twx = 0;
    CUDA_CHECK(stream_plan(g, &tg, &twx));
    if (twx) {
      const bool vec = g->in[2] % 4 == 0 && (uintptr_t)x % 16 == 0;
      dim3 tgrid((unsigned)pool_tiles_blocks(&tg, g->out[0]), (unsigned)py, (unsigned)((g->planes + py - 1) / py));
#define VOLUA_STREAM(RI, TILE, V)                                                                               \
  max_pool3d_stream_kernel<RI, 3, TILE, V><<<tgrid, 256, 0, s>>>(*g, tg, x, y, RI ? indices : NULL)
#define VOLUA_STREAM_TILES(RI, V)                                                                               \
  (twx == 4   ? VOLUA_STREAM(RI, 4, V)                                                                          \
   : twx == 2 ? VOLUA_STREAM(RI, 2, V)                                                                          \
   : twx == 1 ? VOLUA_STREAM(RI, 1, V)                                                                          \
              : VOLUA_STREAM(RI, 16, V))
      if (indices) vec ? VOLUA_STREAM_TILES(true, true) : VOLUA_STREAM_TILES(true, false);
      else vec ? VOLUA_STREAM_TILES(false, true) : VOLUA_STREAM_TILES(false, false);
#undef VOLUA_STREAM_TILES
#undef VOLUA_STREAM
      CUDA_CHECK_LAUNCH();
      return 0;
    }
    // windows of 3 x 3 (5 x 5 with indices) at stride 2 along h and w: the ring kernel
    RingGeom rg;
    int rwx = 0;
    CUDA_CHECK(ring_plan(g, &rg, &rwx, indices != NULL));
    if (rwx) {
      const bool vec = g->in[2] % 4 == 0 && (uintptr_t)x % 16 == 0;
      dim3 rgrid((unsigned)pool_tiles_blocks(&rg, g->out[0]), (unsigned)py, (unsigned)((g->planes + py - 1) / py));
#define VOLUA_RING(RI, K, TILE, V)                                                                             \
  do {                                                                                                         \
    constexpr int sn = RingTile<K, K, 2, 2, TILE>::SN * (int)sizeof(float);                                    \
    CUDA_CHECK((pool_smem_limit<max_pool3d_ring_kernel<RI, K, K, 2, 2, TILE, V>>(POOL_RING_NB * sn)));         \
    max_pool3d_ring_kernel<RI, K, K, 2, 2, TILE, V><<<rgrid, 256, (size_t)(rg.nb * sn), s>>>(*g, rg, x, y,      \
                                                                                          RI ? indices : NULL); \
  } while (0)
#define VOLUA_RING_WX(RI, K, V)                                                                                \
  do {                                                                                                         \
    if (rwx == 4) VOLUA_RING(RI, K, 4, V);                                                                     \
    else if (rwx == 2) VOLUA_RING(RI, K, 2, V);                                                                \
    else if (rwx == 1) VOLUA_RING(RI, K, 1, V);                                                                \
    else VOLUA_RING(RI, K, 16, V);                                                                             \
  } while (0)
#define VOLUA_RING_V(RI, K)                                                                                    \
  do {                                                                                                         \
    if (vec) VOLUA_RING_WX(RI, K, true);                                                                       \
    else VOLUA_RING_WX(RI, K, false);                                                                          \
  } while (0)
      if (g->kernel[1] == 3) {
        if (indices) VOLUA_RING_V(true, 3);
        else VOLUA_RING_V(false, 3);
      } else {
        if (indices) VOLUA_RING_V(true, 5);
        else VOLUA_RING_V(false, 5);
      }
#undef VOLUA_RING_V
#undef VOLUA_RING_WX
#undef VOLUA_RING
      CUDA_CHECK_LAUNCH();
      return 0;
    }
    // small slices: the slab kernel, R output depths a block
    SlabGeom sg;
    const int64_t R = slab_depths(g, &sg);
    if (R > 0) {
      const size_t bytes = (size_t)slab_bytes(g, R);
      dim3 bgrid((unsigned)((g->out[0] + R - 1) / R), (unsigned)py, (unsigned)((g->planes + py - 1) / py));
      const int k333 = g->kernel[0] == 3 && g->kernel[1] == 3 && g->kernel[2] == 3;
      const int k133 = g->kernel[0] == 1 && g->kernel[1] == 3 && g->kernel[2] == 3;
#define VOLUA_SLAB(RI, KD, KH, KW)                                                                             \
  do {                                                                                                         \
    CUDA_CHECK((pool_smem_limit<max_pool3d_slab_kernel<RI, KD, KH, KW>>(VOLUA_POOL_SLAB_MAX)));                \
    max_pool3d_slab_kernel<RI, KD, KH, KW><<<bgrid, 256, bytes, s>>>(*g, sg, x, y, RI ? indices : NULL);       \
  } while (0)
      if (indices) {
        if (k333) VOLUA_SLAB(true, 3, 3, 3);
        else if (k133) VOLUA_SLAB(true, 1, 3, 3);
        else VOLUA_SLAB(true, 0, 0, 0);
      } else {
        if (k333) VOLUA_SLAB(false, 3, 3, 3);
        else if (k133) VOLUA_SLAB(false, 1, 3, 3);
        else VOLUA_SLAB(false, 0, 0, 0);
      }
#undef VOLUA_SLAB
      CUDA_CHECK_LAUNCH();
      return 0;
    }
    // values only, and a slice with its row maxima in shared memory: the separable kernel; without
    // the row maxima where the slice alone leaves room for two blocks an SM and either the rows
    // would not (k 3, s 1 on 128 x 128) or the direct taps are no more than the two stages' (a
    // column's OH kH kW against IH kW + OH kH: L1-43's k 3, s 2; k 5 keeps the rows)
    // (VOLUA_POOL_SEPDIRECT=0: never without them, =2: always; measuring)
    static const char *sd = getenv("VOLUA_POOL_SEPDIRECT");
    const int64_t slice = g->in[1] * g->in[2] * (int64_t)sizeof(float);
    const int64_t smem = slice + g->in[1] * g->out[2] * (int64_t)sizeof(float);
    const int64_t taps_direct = g->out[1] * g->kernel[1] * g->kernel[2];
    const int64_t taps_rows = g->in[1] * g->kernel[2] + g->out[1] * g->kernel[1];
    const int direct = sd && sd[0] == '2'   ? slice <= 200 * 1024
                       : sd && sd[0] == '0' ? 0
                                            : slice <= 100 * 1024 && (smem > 100 * 1024 || taps_direct <= taps_rows);
    if (!indices && (direct || smem <= 200 * 1024) && g->out[0] <= 2147483647) {
      const bool vec = g->in[1] * g->in[2] % 4 == 0 && (uintptr_t)x % 16 == 0;
#define VOLUA_SEPARABLE(ROWS, V)                                                                               \
  do {                                                                                                         \
    CUDA_CHECK((pool_smem_limit<max_pool3d_separable_kernel<ROWS, V>>(200 * 1024)));                           \
    max_pool3d_separable_kernel<ROWS, V><<<sgrid, 1024, (size_t)(ROWS ? smem : slice), s>>>(*g, x, y);         \
  } while (0)
      if (direct && vec) VOLUA_SEPARABLE(false, true);
      else if (direct) VOLUA_SEPARABLE(false, false);
      else if (vec) VOLUA_SEPARABLE(true, true);
      else VOLUA_SEPARABLE(true, false);
#undef VOLUA_SEPARABLE
      CUDA_CHECK_LAUNCH();
      return 0;
    }
    // with indices: the slice kernel where a slice and its tap numbers fit, kD fits a byte, and
    // every window start's in-plane index fits an int; and where the slice fills the block (4096
    // elements or more: a 16-byte load a thread) and an output row its warps' lanes (32 or more:
    // smaller slices and rows keep the plane kernel, whose blocks of 256 threads use every lane;
    // the slice kernel was measured on 128 x 128 slices only). VOLUA_POOL_SEPIDX=0 turns it off
    // (measuring).
    static const int sepidx_on = pool_switch_on("VOLUA_POOL_SEPIDX");
    const int64_t ismem = g->in[1] * g->in[2] * (int64_t)(sizeof(float) + 1);
    const int64_t ilim = (int64_t)1 << 31;
    int64_t span = 1; // (each factor is below 2^31: no overflow before the test)
    for (int k = 0; k < 3 && span < ilim; k++) span *= g->in[k] + g->kernel[k] * g->dilation[k];
    if (indices && sepidx_on && ismem <= 100 * 1024 && g->in[1] * g->in[2] >= 4096 && g->out[2] >= 32 &&
        g->kernel[0] <= 255 && span < ilim) {
      // the second stage's maximum first where a stride along h or w exceeds 1, a merge a tap
      // where both are 1, as measured (VOLUA_POOL_IDX2=max|merge forces one; measuring)
      static const char *i2 = getenv("VOLUA_POOL_IDX2");
      const bool maxfirst = i2 && !strcmp(i2, "max")     ? true
                            : i2 && !strcmp(i2, "merge") ? false
                                                         : g->stride[1] > 1 || g->stride[2] > 1;
      const bool vec = g->in[1] * g->in[2] % 4 == 0 && (uintptr_t)x % 16 == 0 && g->kernel[0] <= 4;
#define VOLUA_SLICE(V, M)                                                                                      \
  do {                                                                                                         \
    CUDA_CHECK((pool_smem_limit<max_pool3d_slice_indices_kernel<V, M>>(100 * 1024)));                          \
    max_pool3d_slice_indices_kernel<V, M><<<sgrid, 1024, (size_t)ismem, s>>>(*g, x, y, indices);               \
  } while (0)
      if (vec) {
        if (maxfirst) VOLUA_SLICE(true, true);
        else VOLUA_SLICE(true, false);
      } else {
        if (maxfirst) VOLUA_SLICE(false, true);
        else VOLUA_SLICE(false, false);
      }
#undef VOLUA_SLICE
      CUDA_CHECK_LAUNCH();
      return 0;
    }
    if (indices)
      max_pool3d_plane_kernel<true><<<grid, 256, 0, s>>>(*g, x, y, indices);
    else
      max_pool3d_plane_kernel<false><<<grid, 256, 0, s>>>(*g, x, y, NULL);
    CUDA_CHECK_LAUNCH();
    return 0;
  }
  unsigned blocks = volua_grid_for(total, VOLUA_THREADS);
  if (indices)
    max_pool3d_kernel<true><<<blocks, VOLUA_THREADS, 0, s>>>(*g, x, y, indices);
  else
    max_pool3d_kernel<false><<<blocks, VOLUA_THREADS, 0, s>>>(*g, x, y, NULL);
  CUDA_CHECK_LAUNCH();
  return 0;
}

// -- entry ----

extern "C" int volua_cuda_max_pool3d(const volua_pool3d_geom *g, const float *x, float *y, int64_t *indices,
                                     cudaStream_t s, char *err) {
  return launch_max_pool3d(g, x, y, g->return_indices && indices ? indices : NULL, s, err);
}
