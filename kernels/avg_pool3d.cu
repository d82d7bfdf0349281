// avg_pool3d.cu: avg_pool3d with padding, ceil_mode, count_include_pad and divisor_override
// (src/cpu/avg_pool3d.c is the reference; the window and divisor rules are src/op_params.h's).
// Two kernels, by the launcher's choice:
//   tiled: windows that tile the rows (stride = kernel along W, kW 1, 2 or 4, no padding along W,
//     every window inside the input) of a multiple of VW = 2 or 4 floats: a thread reads each of
//     its windows' rows as one 8- or 16-byte vector and makes VW / kW outputs along W, so a warp
//     reads 256 or 512 contiguous bytes a row. The common k 2 s 2 (2 x 2 windows tiling D and H
//     too) has an instance of its own: four loads in flight a thread, no clipping.
//   point: a thread per output, its window's taps one float at a time (overlapping windows along
//     W, padding along W, ceil_mode overhangs, odd rows).
// Both add in double in the reference's order (d, h, w), and divide as it does.
//
// Memory: the op is bound by memory. The tiled kernel reads each input element its windows cover
// once per window (with stride = kernel along D and H as well, e.g. k 2 s 2: every element of the
// input once, 16-byte coalesced loads, 4 bytes an element) and writes each output once (4 bytes;
// a k 2 s 2 pooling writes an eighth of what it reads). The point kernel reads a window's taps with
// 4-byte loads: overlapping windows read an element several times, through L1 and L2.
#include <stdint.h>

#include "common.cuh"

// -- the window of one output ----

// The sum of input plane xp over [d0, d1) x [h0, h1) x [w0, w1), in double, in the reference's order.
__device__ __forceinline__ double avg_window_sum(const float *__restrict__ xp, int64_t IH, int64_t IW, int64_t d0,
                                                 int64_t d1, int64_t h0, int64_t h1, int64_t w0, int64_t w1) {
  double sum = 0.0;
  for (int64_t d = d0; d < d1; d++)
    for (int64_t h = h0; h < h1; h++) {
      const float *row = xp + (d * IH + h) * IW;
      for (int64_t w = w0; w < w1; w++) sum += (double)__ldg(row + w);
    }
  return sum;
}

// Output (plane, od, oh, ow) of g, as the reference computes it.
__device__ __forceinline__ float avg_pool_point(const volua_avg_pool3d_geom &ag, const float *__restrict__ x,
                                                int64_t plane, int64_t od, int64_t oh, int64_t ow) {
  const volua_pool3d_geom &g = ag.pool;
  int64_t d0, d1, pd, h0, h1, ph, w0, w1, pw;
  volua_avg_pool_window(od, g.in[0], g.kernel[0], g.stride[0], g.padding[0], &d0, &d1, &pd);
  volua_avg_pool_window(oh, g.in[1], g.kernel[1], g.stride[1], g.padding[1], &h0, &h1, &ph);
  volua_avg_pool_window(ow, g.in[2], g.kernel[2], g.stride[2], g.padding[2], &w0, &w1, &pw);
  if (d0 >= d1 || h0 >= h1 || w0 >= w1) return 0.0f; // no input in the window: 0, as PyTorch
  const float *xp = x + plane * (g.in[0] * g.in[1] * g.in[2]);
  const double sum = avg_window_sum(xp, g.in[1], g.in[2], d0, d1, h0, h1, w0, w1);
  const int64_t divisor = volua_avg_pool_divisor(&ag, pd * ph * pw, (d1 - d0) * (h1 - h0) * (w1 - w0));
  return (float)(sum / (double)divisor);
}

// -- kernels ----

// A thread per output, W fastest, in a grid-stride loop. I: int where the outputs number below
// 2^30 (the grid has at most 2^28 threads, so no step overflows), else int64_t; the window's sizes
// and offsets are int64_t either way.
template <typename I>
static __global__ void avg_pool3d_point_kernel(volua_avg_pool3d_geom ag, const float *__restrict__ x,
                                               float *__restrict__ y, int64_t total) {
  const I OD = (I)ag.pool.out[0], OH = (I)ag.pool.out[1], OW = (I)ag.pool.out[2];
  const I step = (I)blockDim.x * (I)gridDim.x;
  for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < (I)total; i += step) {
    const volua_coord5<I> o = volua_unflatten5<I>(i, 1, OD, OH, OW); // the planes as N, C = 1
    y[i] = avg_pool_point(ag, x, o.n, o.d, o.h, o.w);
  }
}

// VW floats of p, a VW * 4-byte aligned address, as one load.
template <int VW> struct avg_vec;
template <> struct avg_vec<4> {
  float v[4];
  __device__ __forceinline__ void load(const float *p) {
    const float4 u = __ldg(reinterpret_cast<const float4 *>(p));
    v[0] = u.x;
    v[1] = u.y;
    v[2] = u.z;
    v[3] = u.w;
  }
};
template <> struct avg_vec<2> {
  float v[2];
  __device__ __forceinline__ void load(const float *p) {
    const float2 u = __ldg(reinterpret_cast<const float2 *>(p));
    v[0] = u.x;
    v[1] = u.y;
  }
};

// Windows that tile the rows (see the top): a thread makes G = VW / KW outputs along W of one
// output row (plane, od, oh), from one VW-float vector per input row (d, h) of the window.
// KDH 0: the windows along D and H are any (padding, ceil_mode, overlap), clipped as the reference
// clips them. KDH 2: they are 2 x 2 and tile D and H too (stride 2, no padding, none past the
// end), the common k 2 s 2: the four rows' loads are issued before any add, and the divisor is
// the same for every output. Threads are numbered over (plane, od, oh, group of G outputs), the
// group fastest. I as the point kernel's.
template <typename I, int VW, int KW, int KDH>
static __global__ void avg_pool3d_tiled_kernel(volua_avg_pool3d_geom ag, const float *__restrict__ x,
                                               float *__restrict__ y, int64_t total) {
  constexpr int G = VW / KW;
  const volua_pool3d_geom &g = ag.pool;
  const int64_t ID = g.in[0], IH = g.in[1], IW = g.in[2];
  const I OD = (I)g.out[0], OH = (I)g.out[1];
  const int64_t OW = g.out[2];
  const I groups = (I)((OW + G - 1) / G);
  const I step = (I)blockDim.x * (I)gridDim.x;
  for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < (I)total; i += step) {
    const volua_coord5<I> o = volua_unflatten5<I>(i, 1, OD, OH, groups); // the planes as N, C = 1
    const I plane = o.n, od = o.d, oh = o.h, q = o.w;
    const int64_t w0 = (int64_t)q * VW; // the first column; the launcher checked w0 + VW <= IW
    double acc[G];
#pragma unroll
    for (int k = 0; k < G; k++) acc[k] = 0.0;
    double divisor;
    bool empty = false; // a window without input (the argument checks leave none): 0, as PyTorch

    if constexpr (KDH == 2) {
      const float *p = x + (((int64_t)plane * ID + 2 * (int64_t)od) * IH + 2 * (int64_t)oh) * IW + w0;
      avg_vec<VW> v[4]; // rows (d, h) = (0, 0), (0, 1), (1, 0), (1, 1): the reference's order
      v[0].load(p);
      v[1].load(p + IW);
      v[2].load(p + IH * IW);
      v[3].load(p + IH * IW + IW);
#pragma unroll
      for (int r = 0; r < 4; r++)
#pragma unroll
        for (int k = 0; k < G; k++)
#pragma unroll
          for (int j = 0; j < KW; j++) acc[k] += (double)v[r].v[k * KW + j];
      divisor = (double)volua_avg_pool_divisor(&ag, 4 * KW, 4 * KW); // no padding, nothing past the end
    } else {
      int64_t d0, d1, pd, h0, h1, ph;
      volua_avg_pool_window(od, ID, g.kernel[0], g.stride[0], g.padding[0], &d0, &d1, &pd);
      volua_avg_pool_window(oh, IH, g.kernel[1], g.stride[1], g.padding[1], &h0, &h1, &ph);
      const float *xp = x + (int64_t)plane * (ID * IH * IW) + w0;
      for (int64_t d = d0; d < d1; d++) {
#pragma unroll 2
        for (int64_t h = h0; h < h1; h++) {
          avg_vec<VW> v;
          v.load(xp + (d * IH + h) * IW);
#pragma unroll
          for (int k = 0; k < G; k++)
#pragma unroll
            for (int j = 0; j < KW; j++) acc[k] += (double)v.v[k * KW + j];
        }
      }
      // every window is inside the input along W, so both of its counts along W are KW
      divisor = (double)volua_avg_pool_divisor(&ag, pd * ph * KW, (d1 - d0) * (h1 - h0) * KW);
      empty = d0 >= d1 || h0 >= h1;
    }

    float *yp = y + (((int64_t)plane * OD + od) * OH + oh) * OW;
#pragma unroll
    for (int k = 0; k < G; k++) {
      const int64_t ow = (int64_t)q * G + k;
      if (ow < OW) yp[ow] = empty ? 0.0f : (float)(acc[k] / divisor);
    }
  }
}

// -- launcher ----

// The vector width for the tiled kernel (0: the point kernel): windows that tile W inside the
// input, kW dividing the width, rows and x aligned to it.
static int tiled_width(const volua_avg_pool3d_geom *ag, const float *x) {
  const volua_pool3d_geom *g = &ag->pool;
  const int64_t kW = g->kernel[2];
  if (g->stride[2] != kW || g->padding[2] != 0 || (kW != 1 && kW != 2 && kW != 4)) return 0;
  if (g->out[2] * kW > g->in[2]) return 0; // a ceil_mode window hangs over the end
  if (g->in[2] % 4 == 0 && (uintptr_t)x % 16 == 0) return 4;
  if (kW <= 2 && g->in[2] % 2 == 0 && (uintptr_t)x % 8 == 0) return 2;
  return 0;
}

// Whether the windows are 2 x 2 along D and H and tile them: stride 2, no padding, none past the end.
static bool tiles_2x2(const volua_pool3d_geom *g) {
  for (int i = 0; i < 2; i++)
    if (g->kernel[i] != 2 || g->stride[i] != 2 || g->padding[i] != 0 || g->out[i] * 2 > g->in[i]) return false;
  return true;
}

typedef void (*avg_kernel)(volua_avg_pool3d_geom, const float *, float *, int64_t);

// Runs a kernel over `total` threads: its int instance where total is below 2^30, else its int64_t one.
static void avg_launch(avg_kernel k32, avg_kernel k64, const volua_avg_pool3d_geom *ag, const float *x, float *y,
                       int64_t total, cudaStream_t s) {
  const unsigned blocks = volua_grid_for(total, VOLUA_THREADS);
  if (total < ((int64_t)1 << 30)) k32<<<blocks, VOLUA_THREADS, 0, s>>>(*ag, x, y, total);
  else k64<<<blocks, VOLUA_THREADS, 0, s>>>(*ag, x, y, total);
}

extern "C" int volua_cuda_avg_pool3d(const volua_avg_pool3d_geom *ag, const float *x, float *y, cudaStream_t s,
                                     char *err) {
  const char *op = "avg_pool3d";
  const volua_pool3d_geom *g = &ag->pool;
  const int64_t rows = g->planes * g->out[0] * g->out[1];
  if (rows == 0 || g->out[2] == 0) return 0;
  const int vw = tiled_width(ag, x);
  if (vw) {
    const int64_t kw = g->kernel[2];
    const int64_t total = rows * ((g->out[2] + vw / kw - 1) / (vw / kw));
    const bool k2 = kw == 2 && tiles_2x2(g);
#define AVG_TILED(VW, KW, KDH) avg_pool3d_tiled_kernel<int, VW, KW, KDH>, avg_pool3d_tiled_kernel<int64_t, VW, KW, KDH>
    if (vw == 4 && k2) avg_launch(AVG_TILED(4, 2, 2), ag, x, y, total, s);
    else if (vw == 2 && k2) avg_launch(AVG_TILED(2, 2, 2), ag, x, y, total, s);
    else if (vw == 4 && kw == 4) avg_launch(AVG_TILED(4, 4, 0), ag, x, y, total, s);
    else if (vw == 4 && kw == 2) avg_launch(AVG_TILED(4, 2, 0), ag, x, y, total, s);
    else if (vw == 4) avg_launch(AVG_TILED(4, 1, 0), ag, x, y, total, s);
    else if (kw == 2) avg_launch(AVG_TILED(2, 2, 0), ag, x, y, total, s);
    else avg_launch(AVG_TILED(2, 1, 0), ag, x, y, total, s);
#undef AVG_TILED
  } else {
    avg_launch(avg_pool3d_point_kernel<int>, avg_pool3d_point_kernel<int64_t>, ag, x, y, rows * g->out[2], s);
  }
  CUDA_CHECK_LAUNCH();
  return 0;
}
