// adaptive_pool3d.cu: adaptive_avg_pool3d and adaptive_max_pool3d (src/cpu/adaptive_pool3d.c is
// the reference; the windows are src/op_params.h's volua_adaptive_start / _end). A thread per
// output, W fastest, in a grid-stride loop: the mean adds in double in the reference's order and
// divides as it does; the max scans as PyTorch does (the first maximum, or the last NaN, with its
// flat index in the D*H*W volume).
//
// Memory: bound by it. Each output reads its window's taps with 4-byte loads (a warp's 32 adjacent
// windows cover adjacent input, so the loads of a tap coalesce into the sectors the windows
// span) and writes 4 bytes (and 8 for an index). Windows overlap by at most one element along a
// dim (none where out divides in), so the input is read about once.
#include <math.h>
#include <stdint.h>

#include "common.cuh"

// The window of output i of g (W fastest) and its plane; I: int or int64_t.
struct adaptive_window {
  int64_t plane, d0, d1, h0, h1, w0, w1;
};

template <typename I>
__device__ __forceinline__ adaptive_window adaptive_window_of(const volua_adaptive_pool3d_geom &g, I i) {
  const volua_coord5<I> o = volua_unflatten5<I>(i, 1, (I)g.out[0], (I)g.out[1], (I)g.out[2]); // planes as N
  adaptive_window w;
  w.plane = o.n;
  w.d0 = volua_adaptive_start(o.d, g.out[0], g.in[0]);
  w.d1 = volua_adaptive_end(o.d, g.out[0], g.in[0]);
  w.h0 = volua_adaptive_start(o.h, g.out[1], g.in[1]);
  w.h1 = volua_adaptive_end(o.h, g.out[1], g.in[1]);
  w.w0 = volua_adaptive_start(o.w, g.out[2], g.in[2]);
  w.w1 = volua_adaptive_end(o.w, g.out[2], g.in[2]);
  return w;
}

// I: int where the outputs number below 2^30 (the grid has at most 2^28 threads: no step
// overflows), else int64_t.
template <typename I>
static __global__ void adaptive_avg_pool3d_kernel(volua_adaptive_pool3d_geom g, const float *__restrict__ x,
                                                  float *__restrict__ y, int64_t total) {
  const int64_t IH = g.in[1], IW = g.in[2], in_volume = g.in[0] * IH * IW;
  const I step = (I)blockDim.x * (I)gridDim.x;
  for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < (I)total; i += step) {
    const adaptive_window win = adaptive_window_of<I>(g, i);
    const float *xp = x + win.plane * in_volume;
    double sum = 0.0;
    for (int64_t d = win.d0; d < win.d1; d++)
      for (int64_t h = win.h0; h < win.h1; h++) {
        const float *row = xp + (d * IH + h) * IW;
        for (int64_t w = win.w0; w < win.w1; w++) sum += (double)__ldg(row + w);
      }
    const int64_t count = (win.d1 - win.d0) * (win.h1 - win.h0) * (win.w1 - win.w0);
    y[i] = (float)(sum / (double)count);
  }
}

template <typename I, bool WITH_INDICES>
static __global__ void adaptive_max_pool3d_kernel(volua_adaptive_pool3d_geom g, const float *__restrict__ x,
                                                  float *__restrict__ y, int64_t *__restrict__ indices,
                                                  int64_t total) {
  const int64_t IH = g.in[1], IW = g.in[2], in_volume = g.in[0] * IH * IW;
  const I step = (I)blockDim.x * (I)gridDim.x;
  for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < (I)total; i += step) {
    const adaptive_window win = adaptive_window_of<I>(g, i);
    const float *xp = x + win.plane * in_volume;
    int64_t best_index;
    const float best = volua_window_max(xp, IH, IW, win.d0, win.d1, win.h0, win.h1, win.w0, win.w1, 1, 1, 1,
                                        &best_index); // as PyTorch: the first maximum, or the last NaN
    y[i] = best;
    if (WITH_INDICES) indices[i] = best_index;
  }
}

// -- entries ----

static int64_t adaptive_outputs(const volua_adaptive_pool3d_geom *g) {
  return g->planes * g->out[0] * g->out[1] * g->out[2];
}

extern "C" int volua_cuda_adaptive_avg_pool3d(const volua_adaptive_pool3d_geom *g, const float *x, float *y,
                                              cudaStream_t s, char *err) {
  const char *op = "adaptive_avg_pool3d";
  const int64_t total = adaptive_outputs(g);
  if (total == 0) return 0;
  const unsigned blocks = volua_grid_for(total, VOLUA_THREADS);
  if (total < ((int64_t)1 << 30))
    adaptive_avg_pool3d_kernel<int><<<blocks, VOLUA_THREADS, 0, s>>>(*g, x, y, total);
  else
    adaptive_avg_pool3d_kernel<int64_t><<<blocks, VOLUA_THREADS, 0, s>>>(*g, x, y, total);
  CUDA_CHECK_LAUNCH();
  return 0;
}

extern "C" int volua_cuda_adaptive_max_pool3d(const volua_adaptive_pool3d_geom *g, const float *x, float *y,
                                              int64_t *indices, cudaStream_t s, char *err) {
  const char *op = "adaptive_max_pool3d";
  const int64_t total = adaptive_outputs(g);
  if (total == 0) return 0;
  const unsigned blocks = volua_grid_for(total, VOLUA_THREADS);
  const bool small = total < ((int64_t)1 << 30);
  if (g->return_indices && indices) {
    if (small) adaptive_max_pool3d_kernel<int, true><<<blocks, VOLUA_THREADS, 0, s>>>(*g, x, y, indices, total);
    else adaptive_max_pool3d_kernel<int64_t, true><<<blocks, VOLUA_THREADS, 0, s>>>(*g, x, y, indices, total);
  } else {
    if (small) adaptive_max_pool3d_kernel<int, false><<<blocks, VOLUA_THREADS, 0, s>>>(*g, x, y, NULL, total);
    else adaptive_max_pool3d_kernel<int64_t, false><<<blocks, VOLUA_THREADS, 0, s>>>(*g, x, y, NULL, total);
  }
  CUDA_CHECK_LAUNCH();
  return 0;
}
