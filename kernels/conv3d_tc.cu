// conv3d_tc.cu: conv3d on tensor cores (the implicit GEMM of tc_core.cuh) for padding_mode
// "zeros", any groups, stride, dilation and padding; also the fast-path call counter.
#include "tc_core.cuh"

using namespace volua_tc;

// -- the counter of served calls (calls come from the one thread that runs Lua) ----

static int64_t fast_calls = 0;
extern "C" int64_t volua_cuda_fast_calls(void) { return fast_calls; }
extern "C" void volua_cuda_fast_note_call(void) { fast_calls++; }
extern "C" int volua_cuda_fast_disabled(void) { return tc_fast_disabled(); }

// -- conv3d as the GEMM: q = output position, i = q*stride - pad_lo + j*dilation ----

static void conv3d_params(const volua_conv3d_geom *g, Params &p) {
  p.N = g->N;
  p.groups = g->groups;
  p.C_in = g->C_in / g->groups; // one group's channels
  p.C_out = g->C_out / g->groups;
  for (int d = 0; d < 3; d++) {
    p.in[d] = g->in[d];
    p.Q[d] = g->out[d];
    p.istride[d] = g->stride[d];
    p.ipad[d] = g->pad_lo[d];
    p.idil[d] = g->dilation[d];
    p.taps[d] = g->kernel[d];
    p.out[d] = g->out[d];
    p.ostep[d] = 1;
    p.oofs[d] = 0;
  }
}

// conv3d's weight (C_out, C_in / groups, kD, kH, kW) walked tap by tap; group g's output channels
// are rows g * C_out / groups on.
static WeightMap conv3d_weights(const volua_conv3d_geom *g, const float *w) {
  WeightMap m;
  const int64_t kvol = g->kernel[0] * g->kernel[1] * g->kernel[2];
  m.w = w;
  m.w_co = g->C_in / g->groups * kvol;
  m.w_ci = kvol;
  m.w_g = g->C_out / g->groups * m.w_co;
  for (int d = 0; d < 3; d++) {
    m.kdim[d] = g->kernel[d];
    m.kfirst[d] = 0;
    m.kstep[d] = 1;
  }
  return m;
}

extern "C" int volua_cuda_conv3d_tc(const volua_conv3d_geom *g, const float *x, const float *w, const float *b,
                                    float *y, volua_math_mode math, cudaStream_t s, char *err) {
  const char *op = "conv3d";
  if (tc_fast_disabled() || g->groups < 1 || g->padding_mode != VOLUA_PAD_ZEROS) return VOLUA_FAST_NOT_APPLICABLE;
  if (g->N <= 0 || g->C_in <= 0 || g->C_out <= 0 || g->out[0] <= 0 || g->out[1] <= 0 || g->out[2] <= 0)
    return VOLUA_FAST_NOT_APPLICABLE;
  const int cl = volua_cuda_conv3d_cl(g, x, w, b, y, math, s, err); // deep layers (conv3d_cl.cu)
  if (cl != VOLUA_FAST_NOT_APPLICABLE) return cl;
  Env env;
  if (tc_get_env(&env, op, err)) return 1;
  Params p;
  memset(&p, 0, sizeof p);
  conv3d_params(g, p);
  p.x = x;
  p.bias = b;
  p.y = y;
  if (!tc_plan_store(p, math == VOLUA_MATH_FP32, EPI_STORE, env)) return VOLUA_FAST_NOT_APPLICABLE;
  tc_plan_ksplit(p, math == VOLUA_MATH_FP32, env);
  float *ksws = tc_ksplit_scratch(p, err); // split K: the parts' sums, then the units' counts
  float *wprep = NULL;
  if (tc_prep_weights(p, conv3d_weights(g, w), &wprep, s, op, err)) {
    volua_cuda_free(ksws);
    return 1;
  }
  p.wprep = wprep;
  const int rc = p.ksplit > 1 ? tc_launch_ksplit(p, env, s, op, err) : tc_launch_store<false>(p, env, EPI_STORE, s, op, err);
  tc_weights_free(wprep); // stream-ordered reuse: later work on the stream runs after this launch
  volua_cuda_free(ksws);
  if (rc == 0) volua_cuda_fast_note_call();
  return rc;
}
