// conv3d_gn_mean_tc.cu: group_norm(conv3d(x)).mean over (C, D, H, W) in one pass on tensor cores:
// the implicit GEMM of tc_core.cuh with a statistics epilogue (per-channel sums of v and v*v in
// double, per block); the last block of each sample then applies the closed form of
// src/cpu/conv3d_gn_mean.c with one warp (tc_gn_finish). Two launches: the weight preparation (which
// also zeroes the per-sample counts) and the statistics kernel. The conv output never goes to
// device memory.
#include "tc_core.cuh"

using namespace volua_tc;

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
  // one allocation: the partial sums, then the per-sample counts
  double *partials = NULL;
  const int64_t nsums = p.N * parts_max * p.C_out * 2;
  if (volua_cuda_malloc(reinterpret_cast<void **>(&partials), nsums * 8 + p.N * 4, err)) return 1;
  p.partials = partials;
  p.done = reinterpret_cast<int *>(partials + nsums);
  p.ndone = p.N;
  p.y = y;
  p.gn_groups = g->groups;
  p.gn_S = c->out[0] * c->out[1] * c->out[2];
  p.gn_eps = g->eps;
  p.gn_w = gw;
  p.gn_b = gb;
  float *wprep = NULL;
  if (tc_prep_weights(p, m, &wprep, s, op, err)) {
    volua_cuda_free(partials);
    return 1;
  }
  p.wprep = wprep;
  p.parts = (int)parts_max;
  const int rc = tc_launch_stats(p, env, s, op, err);
  tc_weights_free(wprep);
  volua_cuda_free(partials);
  if (rc == 0) volua_cuda_fast_note_call();
  return rc;
}
