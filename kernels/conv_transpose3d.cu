// conv_transpose3d.cu: transposed 3D convolution (groups, stride, dilation, padding, output_padding)
// as a gather: each output element sums the inputs whose taps reach it, accumulated in double.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common.cuh"
#include "fast.h"
#include "tc_prims.cuh" // tc_pdl, tc_launch_pdl, tc_grid_wait: the gated launch

// Input index along one dim that tap k sends to output o, or -1: o = i*stride - pad + k*dil,
// so i = (o + pad - k*dil) / stride when that divides exactly and lands inside the input.
// Signed arithmetic: a negative numerator is simply rejected before the division.
__device__ __forceinline__ int64_t transpose_source(int64_t o, int64_t k, int64_t in, int64_t stride, int64_t pad,
                                                   int64_t dilation) {
  const int64_t t = o + pad - k * dilation;
  if (t < 0 || t % stride != 0) return -1;
  const int64_t i = t / stride;
  return i < in ? i : -1;
}

// -- kernel ----

// gate: NULL, or a device flag; unless it holds `stamp` the kernel writes nothing
// (volua_cuda_conv_transpose3d_redo).
template <bool TF32>
static __global__ void conv_transpose3d_gather_kernel(volua_conv_transpose3d_geom g, const float *__restrict__ x,
                                                      const float *__restrict__ w, const float *__restrict__ b,
                                                      float *__restrict__ y, const int *gate, int stamp) {
  if (gate) { // launched right after the GEMM it may redo, as a programmatic dependent launch:
    tc_grid_wait(); // the GEMM (and the scan that set the gate) are done
    if (*gate != stamp) return;
  }
  const int64_t ID = g.in[0], IH = g.in[1], IW = g.in[2];
  const int64_t OD = g.out[0], OH = g.out[1], OW = g.out[2];
  const int64_t kD = g.kernel[0], kH = g.kernel[1], kW = g.kernel[2];
  const int64_t cin_g = g.C_in / g.groups, cout_g = g.C_out / g.groups;
  const int64_t in_volume = ID * IH * IW, k_volume = kD * kH * kW;
  const int64_t total = g.N * g.C_out * OD * OH * OW;
  VOLUA_GRID_LOOP(i, total) {
    const volua_coord5<int64_t> o = volua_unflatten5<int64_t>(i, g.C_out, OD, OH, OW);
    const int64_t n = o.n, co = o.c, od = o.d, oh = o.h, ow = o.w;
    const int64_t grp = co / cout_g, co_in_group = co - grp * cout_g;
    // weight is (C_in, C_out/groups, kD, kH, kW): input channel ci of this group, column co_in_group
    const float *wg = w + (grp * cin_g * cout_g + co_in_group) * k_volume;
    const float *xg = x + (n * g.C_in + grp * cin_g) * in_volume;
    double acc = b ? (double)b[co] : 0.0;
    for (int64_t kd = 0; kd < kD; kd++) {
      const int64_t id = transpose_source(od, kd, ID, g.stride[0], g.padding[0], g.dilation[0]);
      if (id < 0) continue;
      for (int64_t kh = 0; kh < kH; kh++) {
        const int64_t ih = transpose_source(oh, kh, IH, g.stride[1], g.padding[1], g.dilation[1]);
        if (ih < 0) continue;
        for (int64_t kw = 0; kw < kW; kw++) {
          const int64_t iw = transpose_source(ow, kw, IW, g.stride[2], g.padding[2], g.dilation[2]);
          if (iw < 0) continue;
          const int64_t xo = (id * IH + ih) * IW + iw, wo = (kd * kH + kh) * kW + kw;
          for (int64_t ci = 0; ci < cin_g; ci++)
            acc += volua_operand<TF32>(__ldg(xg + ci * in_volume + xo)) *
                   volua_operand<TF32>(__ldg(wg + ci * cout_g * k_volume + wo));
        }
      }
    }
    y[i] = (float)acc;
  }
}

// -- launcher ----

// math: "fp32" exact products, double accumulation; "tf32" rounds operands first (conv3d.cu).
static int launch_conv_transpose3d(const volua_conv_transpose3d_geom *g, const float *x, const float *w,
                                   const float *b, float *y, volua_math_mode math, const int *gate, int stamp,
                                   cudaStream_t s, char *err) {
  const char *op = "conv_transpose3d";
  const int64_t total = g->N * g->C_out * g->out[0] * g->out[1] * g->out[2];
  if (total <= 0) return 0;
  // gated: a few blocks per SM (the usual grid would spend its launch on blocks that only read the gate)
  unsigned grid = volua_grid_for(total, VOLUA_THREADS);
  if (gate) {
    int sms = 0;
    CUDA_CHECK(volua_sm_count(&sms));
    if ((int64_t)grid > 2 * (int64_t)sms) grid = (unsigned)(2 * sms);
  }
  void (*kernel)(volua_conv_transpose3d_geom, const float *, const float *, const float *, float *, const int *, int) =
      math == VOLUA_MATH_TF32 ? conv_transpose3d_gather_kernel<true> : conv_transpose3d_gather_kernel<false>;
  if (gate && tc_pdl()) // its launch overlaps the GEMM's end (the kernel waits before reading)
    CUDA_CHECK(tc_launch_pdl(kernel, dim3(grid), dim3(VOLUA_THREADS), 0, s, *g, x, w, b, y, gate, stamp));
  else
    kernel<<<grid, VOLUA_THREADS, 0, s>>>(*g, x, w, b, y, gate, stamp);
  CUDA_CHECK_LAUNCH();
  return 0;
}

// -- entry ----

extern "C" int volua_cuda_conv_transpose3d(const volua_conv_transpose3d_geom *g, const float *x, const float *w,
                                           const float *b, float *y, volua_math_mode math, cudaStream_t s,
                                           char *err) {
  // the tensor-core path first (kernels/fast.h); it declines shapes it does not cover. Math "fp32":
  // a split-TF32 GEMM that meets an infinity stamps the flag, and the direct gather then redoes the
  // output, gated on the device (fast.h, volua_cuda_nf_begin).
  const bool nf = math == VOLUA_MATH_FP32 && !volua_cuda_fast_disabled() && g->N * g->C_out > 0;
  if (nf && volua_cuda_nf_begin(s, err)) return 1;
  const int fast = volua_cuda_conv_transpose3d_tc(g, x, w, b, y, math, s, err);
  int *flag = NULL, stamp = 0;
  const int used = volua_cuda_nf_end(&flag, &stamp);
  if (fast == VOLUA_FAST_NOT_APPLICABLE) return launch_conv_transpose3d(g, x, w, b, y, math, NULL, 0, s, err);
  if (fast != 0 || !nf || !used) return fast;
  if (launch_conv_transpose3d(g, x, w, b, y, math, flag, stamp, s, err)) return 1;
  return volua_cuda_epilogue_redo(g->N * g->C_out * g->out[0] * g->out[1] * g->out[2], y, flag, stamp, s, err);
}

extern "C" int volua_cuda_conv_transpose3d_redo(const volua_conv_transpose3d_geom *g, const float *x, const float *w,
                                                const float *b, float *y, volua_math_mode math, const int *flag,
                                                int stamp, cudaStream_t s, char *err) {
  return launch_conv_transpose3d(g, x, w, b, y, math, flag, stamp, s, err);
}
