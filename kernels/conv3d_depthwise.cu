// conv3d_depthwise.cu: conv3d with few channels per group (depthwise: one input channel per group),
// padding_mode "zeros", any stride, dilation and padding. A tensor-core tile has too little to do
// there (K is the taps of one or two channels, and a 32-channel block holds a few real ones). Kernels
// of 3x3x3 with stride and dilation 1 and one input channel a group take a tiled kernel
// (conv3d_depthwise_k3_kernel, below). In the others each thread computes R outputs of a row
// directly, in float, reading the input through the L1 cache (with stride 1 along W, from a window
// of registers). H200, (8,64,32,64,64) depthwise k3 p1:
// bench/NOTES.md. math "fp32" and "tf32" both multiply float32 operands exactly.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

// Kernel 3x3x3, stride 1, dilation 1, one input channel a group: a block takes a tile of
// K3_D x K3_H x K3_W outputs in several input channels, one after another. For each it stages the
// input with the halo in shared memory (cp.async, zeros outside) while the previous channel is
// computed, then computes it for each of the group's output channels, everything unrolled: a thread
// has one W column, two rows and all K3_D planes, reads the 4 rows x 3 columns x (K3_D + 2) planes
// it needs from shared memory once, and keeps the channel's 27 weights in registers. (One channel a
// block, loading then computing, ran 1.24 ms on X-conv-dw; the row kernels below 0.913; this 0.590
// with 4-byte copies, 0.303 with 16-byte ones: bench/NOTES.md.)
#define K3_D 4
#define K3_H 8
#define K3_W 64
static __global__ void __launch_bounds__(256) conv3d_depthwise_k3_kernel(volua_conv3d_geom g, const float *__restrict__ x,
                                                                         const float *__restrict__ w,
                                                                         const float *__restrict__ b,
                                                                         float *__restrict__ y) {
  // a tile row: K3_W + 2 columns from cshift on (SW: room for a shift of up to 3, in groups of 4)
  constexpr int SD = K3_D + 2, SH = K3_H + 2, SW = K3_W + 8, G = SW / 4;
  __shared__ __align__(16) float tiles[2][SD * SH * SW]; // the channel being computed, and the next one loading
  const int D = (int)g.in[0], H = (int)g.in[1], W = (int)g.in[2];
  const int OD = (int)g.out[0], OH = (int)g.out[1], OW = (int)g.out[2];
  const int tw = (OW + K3_W - 1) / K3_W, th = (OH + K3_H - 1) / K3_H;
  const int bx = blockIdx.x, wt = bx % tw, ht = (bx / tw) % th, dt = bx / (tw * th);
  const int od0 = dt * K3_D, oh0 = ht * K3_H, ow0 = wt * K3_W;
  const int id0 = od0 - (int)g.pad_lo[0], ih0 = oh0 - (int)g.pad_lo[1], iw0 = ow0 - (int)g.pad_lo[2];
  const int cog = (int)(g.C_out / g.groups), tid = threadIdx.x;
  const int lw = tid % K3_W, lh = (tid / K3_W) * 2; // this thread's column and first row
  // With W a multiple of 4 and a 16-byte aligned input (v4), a tile row starts cshift columns early,
  // at a multiple of 4, so that it is copied in groups of 4 wholly inside the input or wholly outside:
  // 16-byte copies (4-byte ones took a third of the kernel's instructions).
  const bool v4 = W % 4 == 0 && ((uintptr_t)x % 16) == 0;
  const int cshift = v4 ? ((iw0 % 4) + 4) % 4 : 0;
  // the tile of channel nc into buffer buf by cp.async (zeros outside the input), rows (dz, hy)
  auto load = [&](int64_t nc, int buf) {
    const float *xc = x + nc * (int64_t)D * H * W;
    if (v4) {
      for (int e = tid; e < SD * SH * G; e += blockDim.x) { // (row, group of 4)
        const int rr = e / G, grp = e - rr * G, hy = rr % SH, dz = rr / SH, id = id0 + dz, ih = ih0 + hy;
        const int iw = iw0 - cshift + 4 * grp;
        const bool ok = id >= 0 && id < D && ih >= 0 && ih < H && iw >= 0 && iw < W;
        const unsigned sa = (unsigned)__cvta_generic_to_shared(&tiles[buf][rr * SW + 4 * grp]);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(sa),
                     "l"(ok ? xc + ((int64_t)id * H + ih) * W + iw : x), "r"(ok ? 16 : 0)
                     : "memory");
      }
    } else {
      for (int rr = tid / 64; rr < SD * SH; rr += 4) { // a row's columns by 64 lanes
        const int hy = rr % SH, dz = rr / SH, id = id0 + dz, ih = ih0 + hy;
        const bool rok = id >= 0 && id < D && ih >= 0 && ih < H;
        const float *xr = xc + ((int64_t)id * H + ih) * W;
        for (int wx = tid % 64; wx < K3_W + 2; wx += 64) {
          const int iw = iw0 + wx;
          const bool ok = rok && iw >= 0 && iw < W;
          const unsigned sa = (unsigned)__cvta_generic_to_shared(&tiles[buf][rr * SW + wx]);
          asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(sa), "l"(ok ? xr + iw : x), "r"(ok ? 4 : 0)
                       : "memory");
        }
      }
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
  };
  const int64_t NC = g.N * g.C_in;
  if ((int64_t)blockIdx.y < NC) load(blockIdx.y, 0);
  int buf = 0;
  for (int64_t nc = blockIdx.y; nc < NC; nc += gridDim.y, buf ^= 1) {
    if (nc + gridDim.y < NC) { // the next channel loads while this one is computed
      load(nc + gridDim.y, buf ^ 1);
      asm volatile("cp.async.wait_group 1;" ::: "memory");
    } else {
      asm volatile("cp.async.wait_group 0;" ::: "memory");
    }
    __syncthreads();
    const float *tile = tiles[buf];
    const int64_t n = nc / g.C_in, ci = nc - n * g.C_in; // one input channel a group: group ci
    for (int k = 0; k < cog; k++) {
      const int64_t co = ci * cog + k;
      float wv[27];
#pragma unroll
      for (int t = 0; t < 27; t++) wv[t] = __ldg(w + co * 27 + t);
      float acc[2][K3_D];
#pragma unroll
      for (int r = 0; r < 2; r++)
#pragma unroll
        for (int d = 0; d < K3_D; d++) acc[r][d] = 0.0f;
#pragma unroll
      for (int hh = 0; hh < 4; hh++) // tile rows lh + hh: output row r uses hh = r + kh
#pragma unroll
        for (int kw = 0; kw < 3; kw++) {
          float col[SD];
#pragma unroll
          for (int z = 0; z < SD; z++) col[z] = tile[(z * SH + lh + hh) * SW + cshift + lw + kw];
#pragma unroll
          for (int r = 0; r < 2; r++) {
            const int kh = hh - r;
            if (kh < 0 || kh > 2) continue;
#pragma unroll
            for (int kd = 0; kd < 3; kd++)
#pragma unroll
              for (int d = 0; d < K3_D; d++) acc[r][d] = fmaf(col[d + kd], wv[(kd * 3 + kh) * 3 + kw], acc[r][d]);
          }
        }
      const float bv = b ? __ldg(b + co) : 0.0f;
      const int ow = ow0 + lw;
#pragma unroll
      for (int r = 0; r < 2; r++)
#pragma unroll
        for (int d = 0; d < K3_D; d++) {
          const int od = od0 + d, oh = oh0 + lh + r;
          if (od < OD && oh < OH && ow < OW) y[(((n * g.C_out + co) * OD + od) * OH + oh) * (int64_t)OW + ow] = acc[r][d] + bv;
        }
    }
    __syncthreads(); // this tile is read before the next pass loads into it
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
  int k3 = g->C_in == g->groups && sample < INT32_MAX / 2 && g->out[0] < INT32_MAX / 2 && g->out[1] < INT32_MAX / 2 &&
           g->out[2] < INT32_MAX / 2;
  for (int d = 0; d < 3; d++)
    k3 = k3 && g->kernel[d] == 3 && g->stride[d] == 1 && g->dilation[d] == 1 && g->pad_lo[d] < INT32_MAX / 4;
  const char *ke = getenv("VOLUA_DW_K3"); // 0: the row kernels (measuring)
  if (ke && strcmp(ke, "0") == 0) k3 = 0;
  const int64_t tiles = ((g->out[0] + K3_D - 1) / K3_D) * ((g->out[1] + K3_H - 1) / K3_H) * ((g->out[2] + K3_W - 1) / K3_W);
  if (k3 && tiles < INT32_MAX) {
    const int64_t nc = g->N * g->C_in;
    // several channels per block, so that loads overlap compute; about per_sm blocks an SM (H200,
    // X-conv-dw: 2: 0.770 ms, 8: 0.639, 16: 0.597, 32: 0.590, 64: 0.590)
    // (VOLUA_DW_BPS=n for measuring)
    int sms = 0;
    CUDA_CHECK(volua_sm_count(&sms));
    const char *bps = getenv("VOLUA_DW_BPS");
    const int64_t per_sm = bps && atoi(bps) > 0 ? atoi(bps) : 32;
    int64_t gy = per_sm * sms / tiles;
    if (gy < 1) gy = 1;
    if (gy > nc) gy = nc;
    if (gy > 65535) gy = 65535;
    conv3d_depthwise_k3_kernel<<<dim3((unsigned)tiles, (unsigned)gy), 256, 0, s>>>(*g, x, w, b, y);
    CUDA_CHECK_LAUNCH();
    volua_cuda_fast_note_call();
    return 0;
  }
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
