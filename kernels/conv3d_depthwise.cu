// conv3d_depthwise.cu: conv3d with few channels per group (depthwise: one input channel per group),
// padding_mode "zeros", any stride, dilation and padding. A tensor-core tile has too little to do
// there (K is the taps of one or two channels, and a 32-channel block holds a few real ones), so
// each thread computes R outputs of a row directly, in float, reading the input through the L1
// cache (with stride 1 along W, from a window of registers). H200, (8,64,32,64,64) depthwise k3 p1:
// bench/NOTES.md. math "fp32" and "tf32" both multiply float32 operands exactly.
#include <stdint.h>
#include <stdlib.h>

#include "common.cuh"
#include "fast.h"

#define DW_R 4 // outputs per thread, consecutive along W

static __global__ void conv3d_depthwise_kernel(volua_conv3d_geom g, const float *__restrict__ x,
                                               const float *__restrict__ w, const float *__restrict__ b,
                                               float *__restrict__ y) {
  const int64_t D = g.in[0], H = g.in[1], W = g.in[2];
  const int64_t OD = g.out[0], OH = g.out[1], OW = g.out[2];
  const int64_t cig = g.C_in / g.groups, cog = g.C_out / g.groups;
  const int kD = (int)g.kernel[0], kH = (int)g.kernel[1], kW = (int)g.kernel[2];
  const int64_t chunks = (OW + DW_R - 1) / DW_R;
  const int64_t total = g.N * g.C_out * OD * OH * chunks;
  VOLUA_GRID_LOOP(i, total) {
    const volua_coord5<int64_t> o = volua_unflatten5<int64_t>(i, g.C_out, OD, OH, chunks); // w: the chunk
    const int64_t n = o.n, co = o.c, od = o.d, oh = o.h, ow0 = o.w * DW_R;
    const float bv = b ? __ldg(b + co) : 0.0f;
    float acc[DW_R];
#pragma unroll
    for (int r = 0; r < DW_R; r++) acc[r] = 0.0f;
    int64_t iw0[DW_R];
#pragma unroll
    for (int r = 0; r < DW_R; r++) iw0[r] = (ow0 + r) * g.stride[2] - g.pad_lo[2];
    for (int64_t cil = 0; cil < cig; cil++) {
      const float *xc = x + (n * g.C_in + (co / cog) * cig + cil) * D * H * W;
      const float *wc = w + (co * cig + cil) * kD * kH * kW;
      for (int kd = 0; kd < kD; kd++) {
        const int64_t id = od * g.stride[0] - g.pad_lo[0] + kd * g.dilation[0];
        if (id < 0 || id >= D) continue;
        for (int kh = 0; kh < kH; kh++) {
          const int64_t ih = oh * g.stride[1] - g.pad_lo[1] + kh * g.dilation[1];
          if (ih < 0 || ih >= H) continue;
          const float *xr = xc + (id * H + ih) * W;
          const float *wr = wc + (kd * kH + kh) * kW;
          for (int kw = 0; kw < kW; kw++) {
            const float wv = __ldg(wr + kw);
            const int64_t dk = kw * g.dilation[2];
#pragma unroll
            for (int r = 0; r < DW_R; r++) {
              const int64_t iw = iw0[r] + dk;
              if (iw >= 0 && iw < W) acc[r] = fmaf(__ldg(xr + iw), wv, acc[r]);
            }
          }
        }
      }
    }
    float *yr = y + (((n * g.C_out + co) * OD + od) * OH + oh) * OW;
#pragma unroll
    for (int r = 0; r < DW_R; r++)
      if (ow0 + r < OW) yr[ow0 + r] = acc[r] + bv;
  }
}

// Stride 1 and dilation 1 along W, kW <= 7: DW_RW outputs a thread from a window of DW_RW + kW - 1
// inputs loaded once per (channel, kd, kh) into registers (the general kernel above loads one per
// tap and output). I: the index type of the decode, int where the thread count fits.
#define DW_RW 8
template <class I>
static __global__ void conv3d_depthwise_w1_kernel(volua_conv3d_geom g, const float *__restrict__ x,
                                                  const float *__restrict__ w, const float *__restrict__ b,
                                                  float *__restrict__ y) {
  const I OD = (I)g.out[0], OH = (I)g.out[1], OW = (I)g.out[2], C_out = (I)g.C_out;
  const int D = (int)g.in[0], H = (int)g.in[1], W = (int)g.in[2];
  const int cig = (int)(g.C_in / g.groups), cog = (int)(g.C_out / g.groups);
  const int kD = (int)g.kernel[0], kH = (int)g.kernel[1], kW = (int)g.kernel[2];
  const I chunks = (OW + DW_RW - 1) / DW_RW;
  const I total = (I)g.N * C_out * OD * OH * chunks;
  for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (I)gridDim.x * blockDim.x) {
    const volua_coord5<I> o = volua_unflatten5<I>(i, C_out, OD, OH, chunks); // w: the chunk
    const int ow0 = (int)o.w * DW_RW, oh = (int)o.h, od = (int)o.d;
    const int64_t co = (int64_t)o.c, n = (int64_t)o.n;
    float acc[DW_RW];
#pragma unroll
    for (int r = 0; r < DW_RW; r++) acc[r] = 0.0f;
    const int iwb = ow0 - (int)g.pad_lo[2];
    for (int cil = 0; cil < cig; cil++) {
      const float *xc = x + (n * g.C_in + (co / cog) * cig + cil) * (int64_t)D * H * W;
      const float *wc = w + (co * cig + cil) * kD * kH * kW;
      for (int kd = 0; kd < kD; kd++) {
        const int id = od * (int)g.stride[0] - (int)g.pad_lo[0] + kd * (int)g.dilation[0];
        if (id < 0 || id >= D) continue;
        for (int kh = 0; kh < kH; kh++) {
          const int ih = oh * (int)g.stride[1] - (int)g.pad_lo[1] + kh * (int)g.dilation[1];
          if (ih < 0 || ih >= H) continue;
          const float *xr = xc + ((int64_t)id * H + ih) * W;
          float win[DW_RW + 6];
#pragma unroll
          for (int j = 0; j < DW_RW + 6; j++) {
            const int iw = iwb + j;
            win[j] = (j < DW_RW + kW - 1 && iw >= 0 && iw < W) ? __ldg(xr + iw) : 0.0f;
          }
          const float *wr = wc + (kd * kH + kh) * kW;
#pragma unroll
          for (int kw = 0; kw < 7; kw++) {
            if (kw >= kW) break;
            const float wv = __ldg(wr + kw);
#pragma unroll
            for (int r = 0; r < DW_RW; r++) acc[r] = fmaf(win[r + kw], wv, acc[r]);
          }
        }
      }
    }
    const float bv = b ? __ldg(b + co) : 0.0f;
    float *yr = y + (((n * g.C_out + co) * OD + od) * OH + oh) * (int64_t)OW;
#pragma unroll
    for (int r = 0; r < DW_RW; r++)
      if (ow0 + r < OW) yr[ow0 + r] = acc[r] + bv;
  }
}

extern "C" int volua_cuda_conv3d_depthwise(const volua_conv3d_geom *g, const float *x, const float *w,
                                           const float *b, float *y, volua_math_mode math, cudaStream_t s,
                                           char *err) {
  (void)math;
  const char *op = "conv3d";
  const char *fast = getenv("VOLUA_FAST");
  if (fast && fast[0] == '0' && fast[1] == 0) return VOLUA_FAST_NOT_APPLICABLE;
  if (g->groups < 2 || g->padding_mode != VOLUA_PAD_ZEROS || g->C_in / g->groups > 2 || g->C_out / g->groups > 8)
    return VOLUA_FAST_NOT_APPLICABLE;
  const int64_t total = g->N * g->C_out * g->out[0] * g->out[1] * ((g->out[2] + DW_R - 1) / DW_R);
  if (total <= 0) return VOLUA_FAST_NOT_APPLICABLE;
  const int64_t sample = g->in[0] * g->in[1] * g->in[2];
  if (g->stride[2] == 1 && g->dilation[2] == 1 && g->kernel[2] <= 7 && sample < INT32_MAX / 2 &&
      g->kernel[0] * g->kernel[1] * g->kernel[2] < INT32_MAX / 8) {
    const int64_t tw = g->N * g->C_out * g->out[0] * g->out[1] * ((g->out[2] + DW_RW - 1) / DW_RW);
    if (tw < INT32_MAX / 2)
      conv3d_depthwise_w1_kernel<int><<<volua_grid_for(tw, VOLUA_THREADS), VOLUA_THREADS, 0, s>>>(*g, x, w, b, y);
    else
      conv3d_depthwise_w1_kernel<int64_t><<<volua_grid_for(tw, VOLUA_THREADS), VOLUA_THREADS, 0, s>>>(*g, x, w, b, y);
  } else {
    conv3d_depthwise_kernel<<<volua_grid_for(total, VOLUA_THREADS), VOLUA_THREADS, 0, s>>>(*g, x, w, b, y);
  }
  CUDA_CHECK_LAUNCH();
  volua_cuda_fast_note_call();
  return 0;
}
