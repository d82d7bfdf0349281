// conv3d_gn_mean_tc.cu: group_norm(conv3d(x)).mean over (C, D, H, W) in one pass on tensor cores:
// the implicit GEMM of tc_core.cuh with a statistics epilogue (per-channel sums of v and v*v in
// double, per block), then one warp per sample applies the closed form of
// src/cpu/conv3d_gn_mean.c. The conv output never goes to device memory.
#include "tc_core.cuh"

using namespace volua_tc;

// The fused op's closed form per sample from the per-channel sums (see src/cpu/conv3d_gn_mean.c):
// mean = (1/C) sum_c (w_c * rstd_g * (mean_c - mu_g) + b_c). One warp per sample (block n), lane c
// for channel c (C <= 32). (With one thread per sample and its channels in local arrays, ncu timed
// this kernel at 27.6 us for L2-23, beside 191 us for its statistics kernel in tf32.)
TC_GLOBAL void tc_gn_finish_kernel(const double *partials, int parts, int64_t N, int64_t C, int64_t groups,
                                   int64_t S, double eps, const float *gw, const float *gb, float *y) {
  const int64_t n = blockIdx.x;
  const int c = (int)threadIdx.x, cpg = (int)(C / groups);
  double cm = 0.0, cs = 0.0; // channel c's mean, and its sum of squares
  if (c < C) {
    double s1 = 0.0, s2 = 0.0;
    for (int q = 0; q < parts; q++) {
      s1 += partials[((n * parts + q) * C + c) * 2 + 0];
      s2 += partials[((n * parts + q) * C + c) * 2 + 1];
    }
    cm = s1 / (double)S;
    cs = s2;
  }
  // the group's mean and sum of squares, from its channels' lanes (every lane takes part)
  const int g0 = c < C ? c / cpg * cpg : 0;
  double mu = 0.0, sq = 0.0;
  for (int k = 0; k < cpg; k++) {
    mu += tc_shfl(cm, g0 + k);
    sq += tc_shfl(cs, g0 + k);
  }
  double v = 0.0;
  if (c < C) {
    mu /= (double)cpg;
    double var = sq / ((double)cpg * (double)S) - mu * mu;
    if (var < 0.0) var = 0.0;
    const double rstd = 1.0 / sqrt(var + eps);
    v = (gw ? (double)gw[c] : 1.0) * rstd * (cm - mu) + (gb ? (double)gb[c] : 0.0);
  }
  for (int m = 16; m >= 1; m >>= 1) v += tc_shfl_xor(v, m);
  if (c == 0 && n < N) y[n] = (float)(v / (double)C);
}

extern "C" int volua_cuda_conv3d_gn_mean_tc(const volua_conv3d_gn_mean_geom *g, const float *x, const float *cw,
                                            const float *cb, const float *gw, const float *gb, float *y,
                                            volua_math_mode math, cudaStream_t s, char *err) {
  const char *op = "conv3d_group_norm_mean";
  const volua_conv3d_geom *c = &g->conv;
  if (tc_fast_disabled() || c->groups != 1 || c->padding_mode != VOLUA_PAD_ZEROS) return VOLUA_FAST_NOT_APPLICABLE;
  if (c->N <= 0 || c->N > 65535 || c->C_in <= 0 || c->C_out <= 0 || c->C_out > 32 || g->groups < 1 ||
      c->C_out % g->groups != 0 || c->out[0] <= 0 || c->out[1] <= 0 || c->out[2] <= 0)
    return VOLUA_FAST_NOT_APPLICABLE;
  Env env;
  if (tc_get_env(&env, op, err)) return 1;
  Params p;
  memset(&p, 0, sizeof p);
  p.x = x;
  p.bias = cb;
  p.N = c->N;
  p.groups = 1;
  p.C_in = c->C_in;
  p.C_out = c->C_out;
  WeightMap m;
  const int64_t kvol = c->kernel[0] * c->kernel[1] * c->kernel[2];
  m.w = cw;
  m.w_g = 0;
  m.w_co = c->C_in * kvol;
  m.w_ci = kvol;
  for (int d = 0; d < 3; d++) {
    p.in[d] = c->in[d];
    p.Q[d] = c->out[d];
    p.istride[d] = c->stride[d];
    p.ipad[d] = c->pad_lo[d];
    p.idil[d] = c->dilation[d];
    p.taps[d] = c->kernel[d];
    p.out[d] = c->out[d];
    p.ostep[d] = 1;
    m.kdim[d] = c->kernel[d];
    m.kfirst[d] = 0;
    m.kstep[d] = 1;
  }
  if (!tc_plan_stats(p, math == VOLUA_MATH_FP32, env)) return VOLUA_FAST_NOT_APPLICABLE;

  // room for the partial sums of as many blocks per sample as can be resident (at most 8 blocks of
  // 256 threads per SM); tc_launch_stats uses at most that many
  int64_t parts_max = (int64_t)8 * env.sms / p.N;
  if (parts_max < 1) parts_max = 1;
  if (parts_max > p.tiles_per_n) parts_max = p.tiles_per_n;
  double *partials = NULL;
  if (volua_cuda_malloc(reinterpret_cast<void **>(&partials), p.N * parts_max * p.C_out * 2 * 8, err)) return 1;
  float *wprep = NULL;
  if (tc_prep_weights(p, m, &wprep, s, op, err)) {
    volua_cuda_free(partials);
    return 1;
  }
  p.wprep = wprep;
  p.partials = partials;
  p.parts = (int)parts_max;
  int rc = tc_launch_stats(p, env, s, op, err);
  if (rc == 0) {
    const int64_t S = c->out[0] * c->out[1] * c->out[2];
    TC_LAUNCH(tc_gn_finish_kernel, (unsigned)p.N, 32, 0, s, partials, p.parts, p.N, p.C_out,
              g->groups, S, g->eps, gw, gb, y);
    rc = tc_launch_failed(op, err);
  }
  volua_cuda_free(wprep);
  volua_cuda_free(partials);
  if (rc == 0) volua_cuda_fast_note_call();
  return rc;
}
