// max_pool3d.cu: max_pool3d with ceil_mode, padding, dilation, int64 indices and PyTorch's NaN
// rule, one output element per thread in a 64-bit grid-stride loop (src/cpu/max_pool3d.c is the reference).
#include <math.h>
#include <stdint.h>

#include "common.cuh"

// The input positions of one window along one dim: start, start + dilation, ... < end. Positions
// in the padding are skipped by moving start forward a whole number of dilations, so start may
// end up >= end (a window that sees no input).
__device__ __forceinline__ void pool_window(int64_t o, int64_t in, int64_t kernel, int64_t stride, int64_t pad,
                                            int64_t dilation, int64_t &start, int64_t &end) {
  int64_t s = o * stride - pad;
  int64_t e = s + (kernel - 1) * dilation + 1;
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

    // As PyTorch: start from -inf at the window's first position; a larger value or any NaN
    // takes over, so the last NaN in the window wins.
    float best = -INFINITY;
    int64_t best_index = (d0 * IH + h0) * IW + w0;
    for (int64_t d = d0; d < d1; d += g.dilation[0])
      for (int64_t h = h0; h < h1; h += g.dilation[1]) {
        const int64_t row = (d * IH + h) * IW;
        for (int64_t w = w0; w < w1; w += g.dilation[2]) {
          const float v = __ldg(xp + row + w);
          if (v > best || isnan(v)) {
            best = v;
            best_index = row + w;
          }
        }
      }
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

// The plane kernel with the window size known at compile time: every tap is unrolled and its
// load predicated on being inside the input, so a thread has all its loads in flight at once
// instead of one per trip of a run-time loop. Taps in the padding count as absent (never
// selected), which keeps PyTorch's rule: start from -inf at the first position inside the
// input, a larger value or any NaN takes over, in (d, h, w) order.
template <int KD, int KH, int KW, bool WITH_INDICES>
static __global__ void max_pool3d_fixed_kernel(volua_pool3d_geom g, const float *__restrict__ x,
                                               float *__restrict__ y, int64_t *__restrict__ indices) {
  const int ID = (int)g.in[0], IH = (int)g.in[1], IW = (int)g.in[2];
  const int OD = (int)g.out[0], OH = (int)g.out[1], OW = (int)g.out[2];
  const int sD = (int)g.stride[0], sH = (int)g.stride[1], sW = (int)g.stride[2];
  const int dD = (int)g.dilation[0], dH = (int)g.dilation[1], dW = (int)g.dilation[2];
  const int hw = blockIdx.x * blockDim.x + threadIdx.x;
  if (hw >= OH * OW) return;
  const int oh = hw / OW, ow = hw - oh * OW, od = blockIdx.y;
  const int d0 = od * sD - (int)g.padding[0], h0 = oh * sH - (int)g.padding[1], w0 = ow * sW - (int)g.padding[2];
  // the first tap inside the input along each dim: PyTorch's initial index
  int fd = d0, fh = h0, fw = w0;
  if (fd < 0) fd += (-fd + dD - 1) / dD * dD;
  if (fh < 0) fh += (-fh + dH - 1) / dH * dH;
  if (fw < 0) fw += (-fw + dW - 1) / dW * dW;
  const int64_t out_plane = (int64_t)OD * OH * OW, in_plane = (int64_t)ID * IH * IW;
  for (int64_t plane = blockIdx.z; plane < g.planes; plane += gridDim.z) {
    const float *xp = x + plane * in_plane;
    float v[KD][KH][KW];
#pragma unroll
    for (int a = 0; a < KD; a++)
#pragma unroll
      for (int b = 0; b < KH; b++)
#pragma unroll
        for (int c = 0; c < KW; c++) {
          const int d = d0 + a * dD, h = h0 + b * dH, w = w0 + c * dW;
          const bool in = (unsigned)d < (unsigned)ID && (unsigned)h < (unsigned)IH && (unsigned)w < (unsigned)IW;
          v[a][b][c] = in ? __ldg(xp + (d * IH + h) * IW + w) : -INFINITY;
        }
    float best = -INFINITY;
    int best_index = (fd * IH + fh) * IW + fw;
#pragma unroll
    for (int a = 0; a < KD; a++)
#pragma unroll
      for (int b = 0; b < KH; b++)
#pragma unroll
        for (int c = 0; c < KW; c++) {
          // an absent tap holds -inf and is not NaN: it never takes over
          const float t = v[a][b][c];
          if (t > best || isnan(t)) {
            best = t;
            if (WITH_INDICES) best_index = ((d0 + a * dD) * IH + h0 + b * dH) * IW + w0 + c * dW;
          }
        }
    const int64_t o = plane * out_plane + ((int64_t)od * OH + oh) * OW + ow;
    y[o] = best;
    if (WITH_INDICES) indices[o] = best_index;
  }
}

template <int KD, int KH, int KW>
static void launch_fixed(const volua_pool3d_geom *g, dim3 grid, const float *x, float *y, int64_t *indices,
                         cudaStream_t s) {
  if (indices)
    max_pool3d_fixed_kernel<KD, KH, KW, true><<<grid, 256, 0, s>>>(*g, x, y, indices);
  else
    max_pool3d_fixed_kernel<KD, KH, KW, false><<<grid, 256, 0, s>>>(*g, x, y, NULL);
}

// -- launcher ----

static int launch_max_pool3d(const volua_pool3d_geom *g, const float *x, float *y, int64_t *indices,
                             cudaStream_t s, char *err) {
  const char *op = "max_pool3d";
  const int64_t total = g->planes * g->out[0] * g->out[1] * g->out[2];
  if (total <= 0) return 0;
  // the 32-bit variant: every per-plane index (including the padded window ends) fits an int
  const int64_t lim = (int64_t)1 << 30;
  int small = g->out[0] <= 65535 && g->out[1] * g->out[2] < lim;
  for (int k = 0; k < 3; k++)
    small = small && g->in[k] < lim && g->kernel[k] * g->dilation[k] < lim && g->out[k] * g->stride[k] < lim;
  small = small && g->in[0] * g->in[1] * g->in[2] < lim;
  if (small) {
    dim3 grid((unsigned)((g->out[1] * g->out[2] + 255) / 256), (unsigned)g->out[0],
              (unsigned)(g->planes < 65535 ? g->planes : 65535));
    const int64_t *k = g->kernel;
    int cube = k[0] == k[1] && k[1] == k[2] ? (int)k[0] : 0;
    if (cube == 2 || cube == 3) {
      if (cube == 2) launch_fixed<2, 2, 2>(g, grid, x, y, indices, s);
      else launch_fixed<3, 3, 3>(g, grid, x, y, indices, s);
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
