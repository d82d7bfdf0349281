// conv3d.cu: direct 3D convolution with groups, stride, dilation, asymmetric padding and the four
// padding modes; one output element per thread, accumulated in double (src/cpu/conv3d.c is the reference).
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common.cuh"
#include "fast.h"
#include "tc_prims.cuh" // tc_pdl, tc_launch_pdl, tc_grid_wait: the gated launch

// -- kernel ----

// Threads of a warp share (n, co) and walk consecutive ow: the weight loads are broadcasts and
// the input loads are (for stride 1) coalesced. gate: NULL, or a device flag; unless it holds
// `stamp` the kernel writes nothing (volua_cuda_conv3d_redo).
template <bool TF32>
static __global__ void conv3d_direct_kernel(volua_conv3d_geom g, const float *__restrict__ x,
                                            const float *__restrict__ w, const float *__restrict__ b,
                                            float *__restrict__ y, const int *gate, int stamp) {
  if (gate) { // launched right after the GEMM it may redo, as a programmatic dependent launch:
    tc_grid_wait(); // the GEMM (and whatever set the gate) is done
    if (*gate != stamp) return;
  }
  const int64_t OD = g.out[0], OH = g.out[1], OW = g.out[2];
  const int64_t total = g.N * g.C_out * OD * OH * OW;
  VOLUA_GRID_LOOP(i, total) {
    const volua_coord5<int64_t> o = volua_unflatten5<int64_t>(i, g.C_out, OD, OH, OW);
    double acc = volua_conv3d_point<TF32>(g, x, w, o.n, o.c, o.d, o.h, o.w);
    if (b) acc += (double)b[o.c];
    y[i] = (float)acc;
  }
}

// The input padded as padding_mode says (F.pad), for the fast paths, which read zero padding only.
// Block b takes the padded planes (n, c, pd) = b, b + gridDim.x, ...: warp y of the block its rows
// ph = y, y + blockDim.y, ..., lane x the columns pw = x, x + 32, ... up to PW, the padded width
// rounded up to a multiple of 4 (the columns past W1 are zeros that no output reads). Each padded
// coordinate maps to the input by volua_pad_index. (Rows of a multiple of 4 keep the fast path's
// 16-byte and TMA staging: with rows of 66, L2-23-like reflect padding took twice as long. A warp a
// row, its (n, c, pd, ph) from 64-bit divisions, took 0.19 ms for 76 MB.)
static __global__ void conv3d_pad_kernel(volua_conv3d_geom g, const float *__restrict__ x, float *__restrict__ xp,
                                         int64_t PW) {
  const int64_t D = g.in[0], H = g.in[1], W = g.in[2], W1 = W + g.pad_lo[2] + g.pad_hi[2];
  const int64_t PD = D + g.pad_lo[0] + g.pad_hi[0], PH = H + g.pad_lo[1] + g.pad_hi[1];
  const int mode = (int)g.padding_mode;
  for (int64_t pl = blockIdx.x; pl < g.N * g.C_in * PD; pl += gridDim.x) {
    const int64_t pd = pl % PD, nc = pl / PD, id = volua_pad_index(pd - g.pad_lo[0], D, mode);
    const float *xd = x + (nc * D + id) * H * W;
    float *yd = xp + pl * PH * PW;
    for (int64_t ph = threadIdx.y; ph < PH; ph += blockDim.y) {
      const float *xr = xd + volua_pad_index(ph - g.pad_lo[1], H, mode) * W;
      float *yr = yd + ph * PW;
      for (int64_t pw = threadIdx.x; pw < PW; pw += 32) yr[pw] = pw < W1 ? xr[volua_pad_index(pw - g.pad_lo[2], W, mode)] : 0.0f;
    }
  }
}

extern "C" int volua_cuda_conv3d_pad(const volua_conv3d_geom *g, const float *x, float **xp, volua_conv3d_geom *pg,
                                     cudaStream_t s, char *err) {
  const char *op = "conv3d";
  *pg = *g;
  int64_t numel = g->N * g->C_in;
  for (int d = 0; d < 3; d++) {
    pg->in[d] = g->in[d] + g->pad_lo[d] + g->pad_hi[d];
    pg->pad_lo[d] = pg->pad_hi[d] = 0;
  }
  const int64_t W1 = pg->in[2];
  pg->in[2] = (W1 + 3) / 4 * 4; // (the outputs stay g->out: no output reads the columns past W1)
  pg->pad_hi[2] = W1 - pg->in[2];
  for (int d = 0; d < 3; d++) numel *= pg->in[d];
  pg->padding_mode = VOLUA_PAD_ZEROS;
  char merr[VOLUA_ERR_MAX];
  if (volua_cuda_malloc((void **)xp, numel * (int64_t)sizeof(float), merr)) { // the direct kernel then
    (void)cudaGetLastError();
    *xp = NULL;
    return VOLUA_FAST_NOT_APPLICABLE;
  }
  const int64_t planes = g->N * g->C_in * pg->in[0];
  if (numel > 0) {
    conv3d_pad_kernel<<<volua_grid_for(planes, 1), dim3(32, 8), 0, s>>>(*g, x, *xp, pg->in[2]);
    CUDA_CHECK_LAUNCH();
  }
  return 0;
}

// -- launcher ----

// math: "fp32" multiplies float32 operands exactly (double accumulation); "tf32" first rounds
// the operands to TF32, as a tensor core would.
static int launch_conv3d(const volua_conv3d_geom *g, const float *x, const float *w, const float *b, float *y,
                         volua_math_mode math, const int *gate, int stamp, cudaStream_t s, char *err) {
  const char *op = "conv3d";
  const int64_t total = g->N * g->C_out * g->out[0] * g->out[1] * g->out[2];
  if (total <= 0) return 0;
  // gated: a few blocks per SM (the usual grid would spend its launch on blocks that only read the gate)
  unsigned grid = volua_grid_for(total, VOLUA_THREADS);
  if (gate) {
    int sms = 0;
    CUDA_CHECK(volua_sm_count(&sms));
    if ((int64_t)grid > 2 * (int64_t)sms) grid = (unsigned)(2 * sms);
  }
  void (*kernel)(volua_conv3d_geom, const float *, const float *, const float *, float *, const int *, int) =
      math == VOLUA_MATH_TF32 ? conv3d_direct_kernel<true> : conv3d_direct_kernel<false>;
  if (gate && tc_pdl()) // its launch overlaps the GEMM's end (the kernel waits before reading)
    CUDA_CHECK(tc_launch_pdl(kernel, dim3(grid), dim3(VOLUA_THREADS), 0, s, *g, x, w, b, y, gate, stamp));
  else
    kernel<<<grid, VOLUA_THREADS, 0, s>>>(*g, x, w, b, y, gate, stamp);
  CUDA_CHECK_LAUNCH();
  return 0;
}

extern "C" int volua_cuda_conv3d_redo(const volua_conv3d_geom *g, const float *x, const float *w, const float *b,
                                      float *y, volua_math_mode math, const int *flag, int stamp, cudaStream_t s,
                                      char *err) {
  return launch_conv3d(g, x, w, b, y, math, flag, stamp, s, err);
}

// -- entry ----

// conv3d_tc.cu's path, or where it declines a strided shape (its patch too large for shared
// memory), the same as a stride-1 convolution after space-to-depth (conv3d_s2d.cu). VOLUA_S2D=1
// tries the latter first (for the specs).
static int conv3d_tc_or_s2d(const volua_conv3d_geom *g, const float *x, const float *w, const float *b, float *y,
                            volua_math_mode math, cudaStream_t s, char *err) {
  const char *e = getenv("VOLUA_S2D");
  const bool first = e && strcmp(e, "1") == 0;
  int fast = first ? volua_cuda_conv3d_s2d(g, x, w, b, y, math, s, err) : VOLUA_FAST_NOT_APPLICABLE;
  if (fast == VOLUA_FAST_NOT_APPLICABLE) fast = volua_cuda_conv3d_tc(g, x, w, b, y, math, s, err);
  if (fast == VOLUA_FAST_NOT_APPLICABLE && !first) fast = volua_cuda_conv3d_s2d(g, x, w, b, y, math, s, err);
  return fast;
}

static int conv3d_fast(const volua_conv3d_geom *g, const float *x, const float *w, const float *b, float *y,
                       volua_math_mode math, cudaStream_t s, char *err);

extern "C" int volua_cuda_conv3d(const volua_conv3d_geom *g, const float *x, const float *w, const float *b,
                                 float *y, volua_math_mode math, cudaStream_t s, char *err) {
  // math "fp32": a split-TF32 GEMM that meets an infinity stamps the flag, and the direct kernel
  // then redoes the output, gated on the device (fast.h, volua_cuda_nf_begin)
  const bool nf = math == VOLUA_MATH_FP32 && !volua_cuda_fast_disabled() && g->N * g->C_out > 0;
  if (nf && volua_cuda_nf_begin(s, err)) return 1;
  const int fast = conv3d_fast(g, x, w, b, y, math, s, err);
  int *flag = NULL, stamp = 0;
  const int used = volua_cuda_nf_end(&flag, &stamp);
  if (fast == VOLUA_FAST_NOT_APPLICABLE) return launch_conv3d(g, x, w, b, y, math, NULL, 0, s, err);
  if (fast != 0 || !nf || !used) return fast;
  if (launch_conv3d(g, x, w, b, y, math, flag, stamp, s, err)) return 1;
  return volua_cuda_epilogue_redo(g->N * g->C_out * g->out[0] * g->out[1] * g->out[2], y, flag, stamp, s, err);
}

// The fast paths in turn (kernels/fast.h): 0, an error, or VOLUA_FAST_NOT_APPLICABLE where none
// covers the shape.
static int conv3d_fast(const volua_conv3d_geom *g, const float *x, const float *w, const float *b, float *y,
                       volua_math_mode math, cudaStream_t s, char *err) {
  // the fast paths first (kernels/fast.h); they decline shapes they do not cover. They read zero
  // padding only: with another padding mode they get a padded copy of the input (F.pad, as PyTorch).
  // 1x1x1 without padding first (conv3d_pointwise.cu; no padding: any padding_mode)
  int fast = volua_cuda_conv3d_pointwise(g, x, w, b, y, math, s, err);
  if (fast != VOLUA_FAST_NOT_APPLICABLE) return fast;
  if (g->padding_mode == VOLUA_PAD_ZEROS) {
    fast = volua_cuda_conv3d_depthwise(g, x, w, b, y, math, s, err);
    if (fast == VOLUA_FAST_NOT_APPLICABLE) fast = conv3d_tc_or_s2d(g, x, w, b, y, math, s, err);
  } else if (!volua_cuda_fast_disabled()) {
    float *xp = NULL;
    volua_conv3d_geom pg;
    fast = volua_cuda_conv3d_pad(g, x, &xp, &pg, s, err);
    if (fast == 0) {
      fast = volua_cuda_conv3d_depthwise(&pg, xp, w, b, y, math, s, err);
      if (fast == VOLUA_FAST_NOT_APPLICABLE) fast = conv3d_tc_or_s2d(&pg, xp, w, b, y, math, s, err);
    }
    volua_cuda_free(xp); // (stream-ordered: reused only by work queued after this call's)
  }
  return fast;
}
