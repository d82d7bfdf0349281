// conv3d_gn_mean.cu: mean over (C, D, H, W) of group_norm(conv3d(x)) in one pass: the convolution's
// outputs live only in registers; what reaches device memory is a pair of sums per channel and chunk.
//
// With y the conv output, mean_c the spatial mean of channel c, mu_g and rstd_g its group's statistics:
//   mean over (c, s) of gw[c] * (y - mu_g) * rstd_g + gb[c]
//     = (1 / C) * sum_c (gw[c] * (mean_c - mu_g) * rstd_g + gb[c])
// and var_g = (sum_c M2_c + S * sum_c (mean_c - mu_g)^2) / (Cg * S) (Chan's merge of channels),
// so per channel only its mean and M2 (sum of squared deviations) are needed.
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common.cuh"
#include "fast.h"

// -- kernels ----

// Task t = (n * C_out + co) * bpc + chunk: the conv outputs of channel co of sample n at spatial
// positions [chunk * len, (chunk + 1) * len). Sums are shifted by K = the channel's output at
// position 0 (the same for every chunk of the channel), which keeps sum((y-K)^2) - sum(y-K)^2/S
// free of cancellation when the mean is large against the spread.
template <bool TF32>
static __global__ void conv_gn_partial_kernel(volua_conv3d_geom g, const float *__restrict__ x,
                                              const float *__restrict__ w, const float *__restrict__ b, int64_t bpc,
                                              int64_t len, double *__restrict__ partial, double *__restrict__ shift) {
  __shared__ double scratch[32];
  __shared__ double k_shared;
  const int64_t OH = g.out[1], OW = g.out[2];
  const int64_t S = g.out[0] * OH * OW, tasks = g.N * g.C_out * bpc;
  for (int64_t t = blockIdx.x; t < tasks; t += gridDim.x) {
    const int64_t nc = t / bpc, chunk = t % bpc;
    const int64_t co = nc % g.C_out, n = nc / g.C_out;
    if (threadIdx.x == 0) {
      k_shared = volua_conv3d_point<TF32>(g, x, w, n, co, 0, 0, 0);
      if (chunk == 0) shift[nc] = k_shared + (b ? (double)b[co] : 0.0);
    }
    __syncthreads();
    const double k = k_shared; // the bias cancels in y - K
    const int64_t lo = chunk * len, hi = lo + len < S ? lo + len : S;
    double s1 = 0.0, s2 = 0.0;
    for (int64_t sp = lo + threadIdx.x; sp < hi; sp += blockDim.x) {
      const int64_t ow = sp % OW, oh = (sp / OW) % OH, od = sp / (OW * OH);
      const double d = volua_conv3d_point<TF32>(g, x, w, n, co, od, oh, ow) - k;
      s1 += d;
      s2 += d * d;
    }
    s1 = volua_block_sum(s1, scratch);
    s2 = volua_block_sum(s2, scratch); // its final barrier also protects k_shared for the next task
    if (threadIdx.x == 0) {
      partial[2 * t] = s1;
      partial[2 * t + 1] = s2;
    }
  }
}

// Mean and M2 of channel nc's conv outputs from its chunks' shifted sums.
__device__ __forceinline__ void channel_stats(const double *partial, const double *shift, int64_t nc, int64_t bpc,
                                              double S, double &mean, double &m2) {
  double s1 = 0.0, s2 = 0.0;
  for (int64_t k = 0; k < bpc; k++) {
    s1 += partial[2 * (nc * bpc + k)];
    s2 += partial[2 * (nc * bpc + k) + 1];
  }
  mean = shift[nc] + s1 / S;
  m2 = s2 - s1 * (s1 / S);
  if (m2 < 0.0) m2 = 0.0;
}

// One block per sample, one thread per group (strided): group statistics, then the mean of the
// normalised, affine-transformed values, written as y[n].
static __global__ void conv_gn_finish_kernel(int64_t N, int64_t C, int64_t groups, int64_t S, double eps,
                                             int64_t bpc, const double *__restrict__ partial,
                                             const double *__restrict__ shift, const float *__restrict__ gw,
                                             const float *__restrict__ gb, float *__restrict__ y) {
  __shared__ double scratch[32];
  const int64_t cpg = C / groups;
  const double s = (double)S;
  for (int64_t n = blockIdx.x; n < N; n += gridDim.x) {
    double total = 0.0;
    for (int64_t gi = threadIdx.x; gi < groups; gi += blockDim.x) {
      double sum_mean = 0.0, sum_m2 = 0.0, mean, m2;
      for (int64_t c = gi * cpg; c < (gi + 1) * cpg; c++) {
        channel_stats(partial, shift, n * C + c, bpc, s, mean, m2);
        sum_mean += mean;
        sum_m2 += m2;
      }
      const double mu = sum_mean / (double)cpg;
      double between = 0.0;
      for (int64_t c = gi * cpg; c < (gi + 1) * cpg; c++) {
        channel_stats(partial, shift, n * C + c, bpc, s, mean, m2);
        between += (mean - mu) * (mean - mu);
      }
      double var = (sum_m2 + s * between) / ((double)cpg * s);
      if (var < 0.0) var = 0.0;
      const double rstd = 1.0 / sqrt(var + eps);
      for (int64_t c = gi * cpg; c < (gi + 1) * cpg; c++) {
        channel_stats(partial, shift, n * C + c, bpc, s, mean, m2);
        total += (gw ? (double)gw[c] : 1.0) * (mean - mu) * rstd + (gb ? (double)gb[c] : 0.0);
      }
    }
    total = volua_block_sum(total, scratch);
    if (threadIdx.x == 0) y[n] = (float)(total / (double)C);
  }
}

// -- launcher ----

#define CGM_CHUNK 1024          /* spatial outputs per task, at least */
#define CGM_TARGET_TASKS 65536  /* enough tasks to fill the GPU several times */
#define CGM_FINISH_THREADS 128

static int launch_conv3d_gn_mean(const volua_conv3d_gn_mean_geom *g, const float *x, const float *cw,
                                 const float *cb, const float *gw, const float *gb, float *y, double *scratch,
                                 int64_t bpc, volua_math_mode math, cudaStream_t s, char *err) {
  const char *op = "conv3d_group_norm_mean";
  const volua_conv3d_geom *c = &g->conv;
  const int64_t S = c->out[0] * c->out[1] * c->out[2], nc = c->N * c->C_out;
  const int64_t len = (S + bpc - 1) / bpc;
  double *partial = scratch, *shift = scratch + 2 * nc * bpc;
  if (math == VOLUA_MATH_TF32)
    conv_gn_partial_kernel<true><<<volua_grid_for(nc * bpc, 1), VOLUA_THREADS, 0, s>>>(*c, x, cw, cb, bpc, len,
                                                                                    partial, shift);
  else
    conv_gn_partial_kernel<false><<<volua_grid_for(nc * bpc, 1), VOLUA_THREADS, 0, s>>>(*c, x, cw, cb, bpc, len,
                                                                                     partial, shift);
  CUDA_CHECK_LAUNCH();
  conv_gn_finish_kernel<<<volua_grid_for(c->N, 1), CGM_FINISH_THREADS, 0, s>>>(c->N, c->C_out, g->groups, S, g->eps,
                                                                               bpc, partial, shift, gw, gb, y);
  CUDA_CHECK_LAUNCH();
  return 0;
}

// -- entry ----

// Where the one-pass kernel does not apply (conv groups, more than 32 channels, more than 65535
// samples): the convolution into a buffer (conv3d.cu, so its fast paths), group_norm over it in place
// and the mean per sample, as PyTorch runs it. VOLUA_FAST_NOT_APPLICABLE where the buffer does not
// fit (this file's direct kernel then). (That kernel, a thread per output and the sums in double,
// took 6 ms for L2-23's shape where the one-pass kernel takes 0.045; bench/NOTES.md, ninth session.)
static int conv3d_gn_mean_composed(const volua_conv3d_gn_mean_geom *g, const float *x, const float *cw,
                                   const float *cb, const float *gw, const float *gb, float *y, volua_math_mode math,
                                   cudaStream_t s, char *err) {
  const volua_conv3d_geom *c = &g->conv;
  const int64_t S = c->out[0] * c->out[1] * c->out[2];
  float *z = NULL;
  char merr[VOLUA_ERR_MAX];
  if (volua_cuda_malloc((void **)&z, c->N * c->C_out * S * (int64_t)sizeof(float), merr)) {
    (void)cudaGetLastError();
    return VOLUA_FAST_NOT_APPLICABLE;
  }
  int rc = volua_cuda_conv3d(c, x, cw, cb, z, math, s, err);
  if (rc == 0) {
    volua_group_norm_geom gg = {c->N, c->C_out, S, g->groups, g->eps};
    rc = volua_cuda_group_norm(&gg, z, gw, gb, z, s, err); // in place: each value read, then written, by one thread
  }
  if (rc == 0) {
    volua_mean_geom mg;
    memset(&mg, 0, sizeof mg);
    mg.ndim = 2;
    mg.shape[0] = c->N;
    mg.shape[1] = c->C_out * S;
    mg.reduce[1] = 1;
    mg.out_numel = c->N;
    mg.reduce_numel = c->C_out * S;
    rc = volua_cuda_mean(&mg, z, y, s, err);
  }
  volua_cuda_free(z); // (stream-ordered: reused only by work queued after this call's)
  return rc;
}

// math: "fp32" exact products, double accumulation; "tf32" rounds operands first (conv3d.cu).
extern "C" int volua_cuda_conv3d_gn_mean(const volua_conv3d_gn_mean_geom *g, const float *x, const float *cw,
                                         const float *cb, const float *gw, const float *gb, float *y,
                                         volua_math_mode math, cudaStream_t s, char *err) {
  // the tensor-core path first (kernels/fast.h); it declines shapes it does not cover. It reads zero
  // padding only: with another padding mode it gets a padded copy of the input (conv3d.cu). (Without
  // it, L2-23's shape with reflect padding took 6.0 ms in this file's kernel, against 0.045 ms.)
  int fast = VOLUA_FAST_NOT_APPLICABLE;
  if (g->conv.padding_mode == VOLUA_PAD_ZEROS) {
    fast = volua_cuda_conv3d_gn_mean_tc(g, x, cw, cb, gw, gb, y, math, s, err);
  } else if (!volua_cuda_fast_disabled()) {
    float *xp = NULL;
    volua_conv3d_gn_mean_geom pg = *g;
    fast = volua_cuda_conv3d_pad(&g->conv, x, &xp, &pg.conv, s, err);
    if (fast == 0) fast = volua_cuda_conv3d_gn_mean_tc(&pg, xp, cw, cb, gw, gb, y, math, s, err);
    volua_cuda_free(xp); // (stream-ordered: reused only by work queued after this call's)
  }
  if (fast == VOLUA_FAST_NOT_APPLICABLE && !volua_cuda_fast_disabled() && g->conv.N > 0 && g->groups > 0 &&
      g->conv.C_out > 0 && g->conv.out[0] > 0 && g->conv.out[1] > 0 && g->conv.out[2] > 0)
    fast = conv3d_gn_mean_composed(g, x, cw, cb, gw, gb, y, math, s, err);
  if (fast != VOLUA_FAST_NOT_APPLICABLE) return fast;
  const char *op = "conv3d_group_norm_mean";
  const volua_conv3d_geom *c = &g->conv;
  const int64_t S = c->out[0] * c->out[1] * c->out[2], nc = c->N * c->C_out;
  if (c->N <= 0) return 0;
  if (S <= 0 || c->C_out <= 0 || g->groups <= 0) {
    // nothing to average: NaN (all-ones bits), as a mean over no values
    CUDA_CHECK(cudaMemsetAsync(y, 0xFF, (size_t)c->N * sizeof(float), s));
    return 0;
  }
  int64_t bpc = (S + CGM_CHUNK - 1) / CGM_CHUNK;
  const int64_t cap = (CGM_TARGET_TASKS + nc - 1) / nc;
  if (bpc > cap) bpc = cap;
  if (bpc < 1) bpc = 1;
  double *scratch = NULL;
  if (volua_cuda_malloc((void **)&scratch, (2 * nc * bpc + nc) * (int64_t)sizeof(double), err)) return 1;
  int rc = launch_conv3d_gn_mean(g, x, cw, cb, gw, gb, y, scratch, bpc, math, s, err);
  volua_cuda_free(scratch);
  return rc;
}
