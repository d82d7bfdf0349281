// tc_emulate.cpp: runs the tensor-core fast paths (kernels/*_tc.cu) on the CPU, each block as
// fibers of one CPU thread and each warp's mma computed from its lanes' fragments (kernels/tc_prims.cuh), and
// compares them with float64 references on small random shapes. It checks the index arithmetic,
// fragment layouts, staging, pipelining and epilogues without a GPU; not the GPU's rounding, races
// or speed. Build and run: bench/emulate.sh [random cases per math mode [seed]] (g++ only, no CUDA);
// bench/emulate.sh plans prints the plans of the benchmark shapes.
#define VOLUA_TC_EMULATE 1
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmath>
#include <vector>
#include <random>

#include "../kernels/conv3d_tc.cu"
#include "../kernels/conv_transpose3d_tc.cu"
#include "../kernels/conv3d_gn_mean_tc.cu"
#include "../kernels/conv3d_cl.cu"

thread_local tc_emu_thread tc_emu;
volua_tc::Env volua_tc::tc_emu_env = {2, 232448, 1}; // 2 "SMs": persistent blocks loop over many tiles; wgmma

extern "C" int volua_cuda_malloc(void **p, int64_t bytes, char *err) {
  *p = malloc((size_t)(bytes > 0 ? bytes : 1));
  if (!*p) {
    snprintf(err, VOLUA_ERR_MAX, "emulate: out of memory");
    return 1;
  }
  memset(*p, 0xff, (size_t)bytes); // NaN: an element a kernel reads but nobody wrote shows
  return 0;
}
extern "C" void volua_cuda_free(void *p) { free(p); }
// (no prepared weights kept here: every call copies them, as with src/cuda.c's cache off)
extern "C" void *volua_cuda_derived(const void *, const int64_t *, int, int64_t, int *fill, char *) {
  *fill = 1;
  return NULL;
}
extern "C" void volua_cuda_derived_failed(void *) {}
extern "C" int volua_cuda_derived_release(void *) { return 0; }
static void ref_conv_transpose3d(const volua_conv_transpose3d_geom &g, const float *x, const float *w, const float *b,
                                 double *y);
// conv_transpose3d.cu's gated redo: the float64 reference, where the flag is set.
extern "C" int volua_cuda_conv_transpose3d_redo(const volua_conv_transpose3d_geom *g, const float *x, const float *w,
                                                const float *b, float *y, volua_math_mode, const int *flag, int stamp,
                                                void *, char *) {
  if (*flag != stamp) return 0;
  const int64_t n = g->N * g->C_out * g->out[0] * g->out[1] * g->out[2];
  std::vector<double> r((size_t)n);
  ref_conv_transpose3d(*g, x, w, b, r.data());
  for (int64_t i = 0; i < n; i++) y[i] = (float)r[i];
  return 0;
}

// pointwise.cu's epilogue hand-over: emu_epi, where a case offers one (the kernels apply the steps
// they take; the case applies the rest to its reference and to the output alike).
static const volua_pw_chain *emu_epi = NULL;
static int emu_taken = 0;
extern "C" int volua_cuda_epilogue_take(volua_pw_chain *dst, int64_t C, int64_t S) {
  memset(dst, 0, sizeof *dst);
  if (!emu_epi) return 0;
  const int n = pw_take_prefix(emu_epi, dst, C, S);
  if (n) emu_taken = n;
  return n;
}
extern "C" int volua_cuda_epilogue_redo(int64_t n, float *y, const int *flag, int stamp, void *, char *) {
  if (!emu_taken || *flag != stamp) return 0;
  for (int64_t i = 0; i < n; i++)
    for (int k = 0; k < emu_taken; k++) {
      const volua_pw_step &s = emu_epi->step[k];
      const float o = s.kind == VOLUA_PW_CHANNEL ? s.vec[(i / s.S) % s.C * s.vstep] : 0.0f;
      y[i] = pw_step_cheap(s, y[i], o);
    }
  return 0;
}

static std::mt19937_64 rng(12345);
static int64_t irand(int64_t lo, int64_t hi) { return lo + (int64_t)(rng() % (uint64_t)(hi - lo + 1)); }
// Weights uniform in +-1/sqrt(K) (K: products per output), as PyTorch initialises convolutions
// and as spec/fast_spec.lua draws them. Unscaled weights (+-1) at K ~ 1900 give outputs of ~15
// whose TF32 rounding reaches the tf32 atol of 1e-2 near zero: one of the fixed cases failed or
// passed by its data (the rng's position), not by the kernel.
static float wbound(int64_t K) { return (float)(1.0 / sqrt((double)(K > 0 ? K : 1))); }
static std::vector<float> randu(int64_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v((size_t)n);
  for (auto &x : v) x = d(rng);
  return v;
}

// -- float64 references (zero padding) ----

static void ref_conv3d(const volua_conv3d_geom &g, const float *x, const float *w, const float *b, double *y) {
  const int64_t D = g.in[0], H = g.in[1], W = g.in[2], OD = g.out[0], OH = g.out[1], OW = g.out[2];
  const int64_t kD = g.kernel[0], kH = g.kernel[1], kW = g.kernel[2];
  for (int64_t n = 0; n < g.N; n++)
    for (int64_t co = 0; co < g.C_out; co++)
      for (int64_t od = 0; od < OD; od++)
        for (int64_t oh = 0; oh < OH; oh++)
          for (int64_t ow = 0; ow < OW; ow++) {
            double s = b ? b[co] : 0.0;
            const int64_t cig = g.C_in / g.groups, grp = co / (g.C_out / g.groups);
            for (int64_t cil = 0; cil < cig; cil++)
              for (int64_t a = 0; a < kD; a++)
                for (int64_t c = 0; c < kH; c++)
                  for (int64_t e = 0; e < kW; e++) {
                    const int64_t id = od * g.stride[0] - g.pad_lo[0] + a * g.dilation[0];
                    const int64_t ih = oh * g.stride[1] - g.pad_lo[1] + c * g.dilation[1];
                    const int64_t iw = ow * g.stride[2] - g.pad_lo[2] + e * g.dilation[2];
                    if (id < 0 || id >= D || ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                    s += (double)x[(((n * g.C_in + grp * cig + cil) * D + id) * H + ih) * W + iw] *
                         (double)w[(((co * cig + cil) * kD + a) * kH + c) * kW + e];
                  }
            y[(((n * g.C_out + co) * OD + od) * OH + oh) * OW + ow] = s;
          }
}

static void ref_conv_transpose3d(const volua_conv_transpose3d_geom &g, const float *x, const float *w,
                                 const float *b, double *y) {
  const int64_t D = g.in[0], H = g.in[1], W = g.in[2], OD = g.out[0], OH = g.out[1], OW = g.out[2];
  const int64_t kD = g.kernel[0], kH = g.kernel[1], kW = g.kernel[2];
  const int64_t total = g.N * g.C_out * OD * OH * OW;
  for (int64_t i = 0; i < total; i++) y[i] = b ? b[(i / (OD * OH * OW)) % g.C_out] : 0.0;
  for (int64_t n = 0; n < g.N; n++)
    for (int64_t ci = 0; ci < g.C_in; ci++)
      for (int64_t id = 0; id < D; id++)
        for (int64_t ih = 0; ih < H; ih++)
          for (int64_t iw = 0; iw < W; iw++) {
            const double xv = x[(((n * g.C_in + ci) * D + id) * H + ih) * W + iw];
            const int64_t cog = g.C_out / g.groups, grp = ci / (g.C_in / g.groups);
            for (int64_t col = 0; col < cog; col++)
              for (int64_t a = 0; a < kD; a++)
                for (int64_t c = 0; c < kH; c++)
                  for (int64_t e = 0; e < kW; e++) {
                    const int64_t od = id * g.stride[0] - g.padding[0] + a * g.dilation[0];
                    const int64_t oh = ih * g.stride[1] - g.padding[1] + c * g.dilation[1];
                    const int64_t ow = iw * g.stride[2] - g.padding[2] + e * g.dilation[2];
                    if (od < 0 || od >= OD || oh < 0 || oh >= OH || ow < 0 || ow >= OW) continue;
                    y[(((n * g.C_out + grp * cog + col) * OD + od) * OH + oh) * OW + ow] +=
                        xv * (double)w[(((ci * cog + col) * kD + a) * kH + c) * kW + e];
                  }
          }
}

// -- comparisons ----

static int failures = 0;

// (A value that is not finite matches only its own kind: NaN, or the same infinity.)
static void compare(const char *what, const float *got, const double *want, int64_t n, double rtol, double atol) {
  int64_t bad = 0, first = -1;
  double worst = 0.0;
  for (int64_t i = 0; i < n; i++) {
    if (!std::isfinite(want[i]) || !std::isfinite(got[i])) {
      const bool same = (std::isnan(want[i]) && std::isnan(got[i])) || (double)got[i] == want[i];
      if (!same) {
        if (first < 0) first = i;
        bad++;
      }
      continue;
    }
    const double d = fabs((double)got[i] - want[i]), tol = atol + rtol * fabs(want[i]);
    const double ratio = d / tol;
    if (!(d <= tol)) {
      if (first < 0) first = i;
      bad++;
    }
    if (ratio > worst || ratio != ratio) worst = ratio;
  }
  printf("%-72s %s (worst |d|/tol %.3g", what, bad ? "FAIL" : "ok", worst);
  if (bad) printf(", %lld bad, first at %lld: got %.8g want %.8g", (long long)bad, (long long)first, got[first], want[first]);
  printf(")\n");
  fflush(stdout);
  if (bad) failures++;
}

// The fused epilogue (tc_core.cuh, tc_epi_apply): with emu_epi_mode a case offers a random chain of
// the steps the stores take (pw_cheap: a number or a per-channel value added, multiplied, ...;
// clamp, leaky_relu, relu, abs, neg), applies the steps the kernels did not take after them (as
// src/ops/pointwise.c's pass), and the whole chain to its reference (rounded to float first). A
// column given the wrong channel's operand, or a value missed or stepped twice, shows. *lip: a
// bound on how much the chain scales a difference (the tolerances are multiplied by it).
static bool emu_epi_mode = false;
static void make_epi(volua_pw_chain &c, std::vector<float> &vec, int64_t Co, int64_t S, double *lip) {
  memset(&c, 0, sizeof c);
  vec.assign((size_t)(4 * Co), 0.0f);
  for (int64_t i = 0; i < 4 * Co; i++) vec[(size_t)i] = (float)((double)(rng() % 2001) / 1000.0 - 1.0); // [-1, 1]
  *lip = 1.0;
  c.n = (int)irand(2, 4);
  for (int k = 0; k < c.n; k++) {
    volua_pw_step &st = c.step[k];
    const int kind = (int)irand(0, 5);
    if (kind <= 1) { // a per-channel operand (add, sub, mul, maximum)
      static const int ops[4] = {VOLUA_BIN_ADD, VOLUA_BIN_SUB, VOLUA_BIN_MUL, VOLUA_BIN_MAXIMUM};
      st.kind = VOLUA_PW_CHANNEL, st.op = ops[irand(0, 3)], st.C = Co, st.S = S, st.vstep = 1;
      st.vec = vec.data() + k * Co;
    } else if (kind == 2) { // a number
      static const int ops[4] = {VOLUA_BIN_ADD, VOLUA_BIN_MUL, VOLUA_BIN_DIV, VOLUA_BIN_SUB};
      st.kind = VOLUA_PW_SCALAR, st.op = ops[irand(0, 3)], st.scalar_first = st.op == VOLUA_BIN_SUB && irand(0, 1);
      st.p0 = st.op == VOLUA_BIN_DIV ? 2.0 : st.op == VOLUA_BIN_MUL ? -1.5 : 0.25;
      if (st.op == VOLUA_BIN_MUL) *lip *= 1.5;
    } else if (kind == 3) {
      st.kind = VOLUA_PW_UNARY, st.op = VOLUA_UN_CLAMP, st.p0 = -0.5, st.p1 = irand(0, 1) ? 0.75 : INFINITY;
    } else if (kind == 4) {
      st.kind = VOLUA_PW_UNARY, st.op = VOLUA_UN_LEAKY_RELU, st.p0 = 0.2;
    } else {
      static const int ops[3] = {VOLUA_UN_RELU, VOLUA_UN_ABS, VOLUA_UN_NEG};
      st.kind = VOLUA_PW_UNARY, st.op = ops[irand(0, 2)];
    }
    st.f0 = (float)st.p0, st.f1 = (float)st.p1;
  }
}
// Steps [first, last) of c on the n values y.
static void apply_epi(const volua_pw_chain &c, int first, int last, float *y, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    for (int k = first; k < last; k++) {
      const volua_pw_step &st = c.step[k];
      const float o = st.kind == VOLUA_PW_CHANNEL ? st.vec[(i / st.S) % st.C * st.vstep] : 0.0f;
      y[i] = pw_step_cheap(st, y[i], o);
    }
}
// Around a case's call: epi_begin offers a chain (emu_epi_mode), epi_end applies what was not taken
// and the chain to the reference, and notes in `what` how many steps the kernels took.
struct EmuEpi {
  volua_pw_chain c;
  std::vector<float> vec;
  double lip = 1.0;
};
static void epi_begin(EmuEpi &e, int64_t Co, int64_t S) {
  if (!emu_epi_mode) return;
  make_epi(e.c, e.vec, Co, S, &e.lip);
  emu_epi = &e.c;
  emu_taken = 0;
}
static void epi_end(EmuEpi &e, float *y, std::vector<double> &ref, char *what, size_t wn) {
  if (!emu_epi_mode) return;
  apply_epi(e.c, emu_taken, e.c.n, y, (int64_t)ref.size());
  std::vector<float> r(ref.size());
  for (size_t i = 0; i < ref.size(); i++) r[i] = (float)ref[i];
  apply_epi(e.c, 0, e.c.n, r.data(), (int64_t)r.size());
  for (size_t i = 0; i < ref.size(); i++) ref[i] = r[i];
  snprintf(what + strlen(what), wn - strlen(what), " epi %d/%d", emu_taken, e.c.n);
  emu_epi = NULL;
  emu_taken = 0;
}

static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  const int64_t span = in + 2 * p - d * (k - 1) - 1;
  return span < 0 ? 0 : span / s + 1;
}

// The ops' geometries from their sizes and per-dimension triples (fields not set stay zero), for
// the cases and the plan listing.
static volua_conv3d_geom conv3d_geom(int64_t N, int64_t Ci, int64_t Co, int64_t groups, const int64_t in[3],
                                     const int64_t k[3], const int64_t s[3], const int64_t pd[3], const int64_t dl[3]) {
  volua_conv3d_geom g;
  memset(&g, 0, sizeof g);
  g.N = N, g.C_in = Ci, g.C_out = Co, g.groups = groups, g.padding_mode = VOLUA_PAD_ZEROS;
  for (int d = 0; d < 3; d++) {
    g.in[d] = in[d], g.kernel[d] = k[d], g.stride[d] = s[d], g.pad_lo[d] = g.pad_hi[d] = pd[d], g.dilation[d] = dl[d];
    g.out[d] = out_size(in[d], k[d], s[d], pd[d], dl[d]);
  }
  return g;
}

static volua_conv_transpose3d_geom transpose_geom(int64_t N, int64_t Ci, int64_t Co, int64_t groups, const int64_t in[3],
                                                  const int64_t k[3], const int64_t s[3], const int64_t pd[3],
                                                  const int64_t op[3], const int64_t dl[3]) {
  volua_conv_transpose3d_geom g;
  memset(&g, 0, sizeof g);
  g.N = N, g.C_in = Ci, g.C_out = Co, g.groups = groups;
  for (int d = 0; d < 3; d++) {
    g.in[d] = in[d], g.kernel[d] = k[d], g.stride[d] = s[d], g.padding[d] = pd[d], g.output_padding[d] = op[d];
    g.dilation[d] = dl[d];
    g.out[d] = (in[d] - 1) * s[d] - 2 * pd[d] + dl[d] * (k[d] - 1) + op[d] + 1;
  }
  return g;
}

// VOLUA_EMU_CL_ONLY=1: only the cases of the channels-last path (those run with VOLUA_TC_CL=1, in
// both maths), for a quick check of conv3d_cl.cu. VOLUA_EMU_GN_ONLY=1: only conv3d_group_norm_mean's.
static bool skip_case(volua_math_mode, bool gn = false) {
  const char *only = getenv("VOLUA_EMU_CL_ONLY"), *cl = getenv("VOLUA_TC_CL"), *gonly = getenv("VOLUA_EMU_GN_ONLY");
  if (gonly && strcmp(gonly, "1") == 0) return !gn;
  return only && strcmp(only, "1") == 0 && !(cl && strcmp(cl, "1") == 0);
}

// conv3d.cu's and conv_transpose3d.cu's entries around a fast path in math "fp32": a new stamp of
// the non-finite flag before it (nf_begin), and where a GEMM took the flag and stamped it, the
// output again by the reference (nf_redo: their gated direct kernel; fast.h, volua_cuda_nf_begin).
// nf_redo returns whether it redid.
static void nf_begin(volua_math_mode math) {
  char err[VOLUA_ERR_MAX];
  if (math == VOLUA_MATH_FP32 && volua_cuda_nf_begin(NULL, err)) {
    printf("nf_begin: %s\n", err);
    failures++;
  }
}
static bool nf_redo(volua_math_mode math, int rc, float *y, const double *ref, int64_t n) {
  int *flag = NULL, stamp = 0;
  const int used = volua_cuda_nf_end(&flag, &stamp);
  if (rc != 0 || math != VOLUA_MATH_FP32 || !used || !flag || *flag != stamp) return false;
  for (int64_t i = 0; i < n; i++) y[i] = (float)ref[i];
  if (emu_epi && emu_taken) apply_epi(*emu_epi, 0, emu_taken, y, n); // (volua_cuda_epilogue_redo)
  return true;
}

static void run_conv3d(int64_t N, int64_t Ci, int64_t Co, const int64_t in[3], const int64_t k[3], const int64_t s[3],
                       const int64_t pd[3], const int64_t dl[3], bool bias, volua_math_mode math, int64_t groups = 1,
                       int specials = 0) {
  if (skip_case(math)) return;
  const volua_conv3d_geom g = conv3d_geom(N, Ci, Co, groups, in, k, s, pd, dl);
  char what[256];
  snprintf(what, sizeof what, "conv3d %s x(%lld,%lld,%lld,%lld,%lld) co %lld g %lld k(%lld,%lld,%lld) s(%lld,%lld,%lld) p(%lld,%lld,%lld) d(%lld,%lld,%lld)%s",
           math == VOLUA_MATH_FP32 ? "fp32" : "tf32", (long long)N, (long long)Ci, (long long)in[0], (long long)in[1],
           (long long)in[2], (long long)Co, (long long)groups, (long long)k[0], (long long)k[1], (long long)k[2], (long long)s[0],
           (long long)s[1], (long long)s[2], (long long)pd[0], (long long)pd[1], (long long)pd[2], (long long)dl[0],
           (long long)dl[1], (long long)dl[2], bias ? " bias" : "");
  if (specials) snprintf(what + strlen(what), sizeof what - strlen(what), " %d non-finite", specials);
  if (g.out[0] <= 0 || g.out[1] <= 0 || g.out[2] <= 0) return;
  auto x = randu(N * Ci * in[0] * in[1] * in[2], -1, 1);
  { // specials: +inf, -inf and NaN in turn, as run_transpose's
    std::mt19937_64 r((uint64_t)x.size());
    const float v[3] = {INFINITY, -INFINITY, NAN};
    for (int i = 0; i < specials; i++) x[r() % x.size()] = v[i % 3];
  }
  const float wb = wbound(Ci / groups * k[0] * k[1] * k[2]);
  auto w = randu(Co * (Ci / groups) * k[0] * k[1] * k[2], -wb, wb);
  auto b = randu(Co, -1, 1);
  const int64_t ny = N * Co * g.out[0] * g.out[1] * g.out[2];
  std::vector<float> y((size_t)ny, NAN);
  std::vector<double> ref((size_t)ny);
  ref_conv3d(g, x.data(), w.data(), bias ? b.data() : NULL, ref.data());
  char err[VOLUA_ERR_MAX] = "";
  EmuEpi e;
  epi_begin(e, Co, g.out[0] * g.out[1] * g.out[2]);
  nf_begin(math);
  const int rc = volua_cuda_conv3d_tc(&g, x.data(), w.data(), bias ? b.data() : NULL, y.data(), math, NULL, err);
  if (nf_redo(math, rc, y.data(), ref.data(), ny)) strncat(what, " (redone)", sizeof what - strlen(what) - 1);
  if (rc) {
    emu_epi = NULL;
    printf("%-72s %s %s\n", what, rc == VOLUA_FAST_NOT_APPLICABLE ? "not applicable" : "ERROR", err);
    if (rc != VOLUA_FAST_NOT_APPLICABLE) failures++;
    return;
  }
  epi_end(e, y.data(), ref, what, sizeof what);
  compare(what, y.data(), ref.data(), ny, (math == VOLUA_MATH_FP32 ? 1e-4 : 1e-2) * e.lip,
          (math == VOLUA_MATH_FP32 ? 1e-5 : 1e-2) * e.lip);
}

static void run_transpose(int64_t N, int64_t Ci, int64_t Co, const int64_t in[3], const int64_t k[3], const int64_t s[3],
                          const int64_t pd[3], const int64_t op[3], const int64_t dl[3], bool bias, volua_math_mode math,
                          int64_t groups = 1, int specials = 0) {
  if (skip_case(math)) return;
  const volua_conv_transpose3d_geom g = transpose_geom(N, Ci, Co, groups, in, k, s, pd, op, dl);
  char what[256];
  snprintf(what, sizeof what, "conv_transpose3d %s x(%lld,%lld,%lld,%lld,%lld) co %lld g %lld k(%lld,%lld,%lld) s(%lld,%lld,%lld) p(%lld,%lld,%lld) op(%lld,%lld,%lld) d(%lld,%lld,%lld)%s",
           math == VOLUA_MATH_FP32 ? "fp32" : "tf32", (long long)N, (long long)Ci, (long long)in[0], (long long)in[1],
           (long long)in[2], (long long)Co, (long long)groups, (long long)k[0], (long long)k[1], (long long)k[2], (long long)s[0],
           (long long)s[1], (long long)s[2], (long long)pd[0], (long long)pd[1], (long long)pd[2], (long long)op[0],
           (long long)op[1], (long long)op[2], (long long)dl[0], (long long)dl[1], (long long)dl[2], bias ? " bias" : "");
  if (specials) snprintf(what + strlen(what), sizeof what - strlen(what), " %d non-finite", specials);
  if (g.out[0] <= 0 || g.out[1] <= 0 || g.out[2] <= 0) return;
  auto x = randu(N * Ci * in[0] * in[1] * in[2], -1, 1);
  { // specials: NaN, +inf and -inf in turn at positions of a generator of their own (the random
    // cases after draw what they drew before)
    std::mt19937_64 r((uint64_t)x.size());
    const float v[3] = {NAN, INFINITY, -INFINITY};
    for (int i = 0; i < specials; i++) x[r() % x.size()] = v[i % 3];
  }
  const float wb = wbound(Ci / groups * k[0] * k[1] * k[2]);
  auto w = randu(Ci * (Co / groups) * k[0] * k[1] * k[2], -wb, wb);
  auto b = randu(Co, -1, 1);
  const int64_t ny = N * Co * g.out[0] * g.out[1] * g.out[2];
  std::vector<float> y((size_t)ny, NAN);
  std::vector<double> ref((size_t)ny);
  ref_conv_transpose3d(g, x.data(), w.data(), bias ? b.data() : NULL, ref.data());
  char err[VOLUA_ERR_MAX] = "";
  EmuEpi e;
  epi_begin(e, Co, g.out[0] * g.out[1] * g.out[2]);
  nf_begin(math);
  const int rc = volua_cuda_conv_transpose3d_tc(&g, x.data(), w.data(), bias ? b.data() : NULL, y.data(), math, NULL, err);
  if (nf_redo(math, rc, y.data(), ref.data(), ny)) strncat(what, " (redone)", sizeof what - strlen(what) - 1);
  if (rc) {
    emu_epi = NULL;
    printf("%-72s %s %s\n", what, rc == VOLUA_FAST_NOT_APPLICABLE ? "not applicable" : "ERROR", err);
    if (rc != VOLUA_FAST_NOT_APPLICABLE) failures++;
    return;
  }
  epi_end(e, y.data(), ref, what, sizeof what);
  compare(what, y.data(), ref.data(), ny, (math == VOLUA_MATH_FP32 ? 1e-4 : 1e-2) * e.lip,
          (math == VOLUA_MATH_FP32 ? 1e-5 : 1e-2) * e.lip);
}

// probe 1: GroupNorm's eps 1e6 and weights of +-1e4 by channel, so that the answer is linear in the
// channels' means (the normalisation divides by about 1e3 whatever the variance): a wrong sum of v
// shows, where GroupNorm's invariance to scale hides most errors of the plain answer. probe 2: eps
// 1e-5 and weights of +-100: the answer is (1/C) sum w_c (mean_c - mu) / sigma amplified, so a wrong
// sum of v * v (sigma) shows.
static void run_gn_mean(int64_t N, int64_t Ci, int64_t Co, int64_t groups, const int64_t in[3], const int64_t k[3],
                        const int64_t s[3], const int64_t pd[3], const int64_t dl[3], float offset, volua_math_mode math,
                        int probe = 0) {
  if (skip_case(math, true)) return;
  volua_conv3d_gn_mean_geom g;
  memset(&g, 0, sizeof g);
  g.conv = conv3d_geom(N, Ci, Co, 1, in, k, s, pd, dl);
  const volua_conv3d_geom &c = g.conv;
  g.groups = groups;
  g.eps = probe == 1 ? 1e6 : 1e-5;
  char what[256];
  snprintf(what, sizeof what, "conv3d_gn_mean %s x(%lld,%lld,%lld,%lld,%lld)+%g co %lld groups %lld k(%lld,%lld,%lld) s%lld p%lld d%lld%s",
           math == VOLUA_MATH_FP32 ? "fp32" : "tf32", (long long)N, (long long)Ci, (long long)in[0], (long long)in[1],
           (long long)in[2], offset, (long long)Co, (long long)groups, (long long)k[0], (long long)k[1], (long long)k[2],
           (long long)s[0], (long long)pd[0], (long long)dl[0], probe == 1 ? " probe means" : probe == 2 ? " probe sigma" : "");
  if (c.out[0] <= 0 || c.out[1] <= 0 || c.out[2] <= 0) return;
  auto x = randu(N * Ci * in[0] * in[1] * in[2], 0, 1);
  for (auto &v : x) v += offset;
  auto w = randu(Co * Ci * k[0] * k[1] * k[2], -0.3f, 0.3f);
  auto b = randu(Co, -1, 1), gw = randu(Co, -1, 1), gb = randu(Co, -1, 1);
  if (probe)
    for (int64_t cc = 0; cc < Co; cc++) gw[(size_t)cc] = (cc % 2 ? -1.0f : 1.0f) * (probe == 1 ? 1e4f : 1e2f) * (1.0f + gw[(size_t)cc] * gw[(size_t)cc]);
  // reference: the conv in double, then the group_norm mean exactly as PyTorch defines it
  const int64_t S = c.out[0] * c.out[1] * c.out[2];
  std::vector<double> z((size_t)(N * Co * S)), ref((size_t)N);
  ref_conv3d(c, x.data(), w.data(), b.data(), z.data());
  const int64_t cpg = Co / groups;
  for (int64_t n = 0; n < N; n++) {
    double total = 0.0;
    for (int64_t gr = 0; gr < groups; gr++) {
      double mu = 0.0, var = 0.0;
      const double *zg = z.data() + (n * Co + gr * cpg) * S;
      for (int64_t i = 0; i < cpg * S; i++) mu += zg[i];
      mu /= (double)(cpg * S);
      for (int64_t i = 0; i < cpg * S; i++) var += (zg[i] - mu) * (zg[i] - mu);
      var /= (double)(cpg * S);
      for (int64_t cc = 0; cc < cpg; cc++)
        for (int64_t i = 0; i < S; i++)
          total += (zg[cc * S + i] - mu) / sqrt(var + g.eps) * gw[gr * cpg + cc] + gb[gr * cpg + cc];
    }
    ref[(size_t)n] = total / (double)(Co * S);
  }
  std::vector<float> y((size_t)N, NAN);
  char err[VOLUA_ERR_MAX] = "";
  const int rc = volua_cuda_conv3d_gn_mean_tc(&g, x.data(), w.data(), b.data(), gw.data(), gb.data(), y.data(), math,
                                              NULL, err);
  if (rc) {
    printf("%-72s %s %s\n", what, rc == VOLUA_FAST_NOT_APPLICABLE ? "not applicable" : "ERROR", err);
    if (rc != VOLUA_FAST_NOT_APPLICABLE) failures++;
    return;
  }
  compare(what, y.data(), ref.data(), N, math == VOLUA_MATH_FP32 ? 1e-4 : 1e-2, math == VOLUA_MATH_FP32 ? 1e-5 : 1e-2);
}

// `tc_emulate plans`: the plan (variant, chunks, shared memory) the fast paths pick for the
// benchmark shapes on an H100/H200 (232448 B of shared memory per block), without running them.
static void print_plan(const char *name, volua_tc::Params p, int epi, bool split) {
  using namespace volua_tc;
  Env env = tc_emu_env;
  if (epi == EPI_STORE && tc_plan_kw(p, split, env)) { // conv3d_tc.cu's W-interleaved kernel
    printf("%-8s %s: W-interleaved, %d pairs a tile (%d pairs a row), %d team(s), %d k-steps (%d of K' a kW tap), %lld tiles x "
           "%d channel blocks, patch %d rows x %d, smem %zu B\n", name, split ? "fp32" : "tf32", p.BM, p.c4, p.teams, p.ksteps,
           p.kks, (long long)p.ntiles, p.co_blocks, p.prow, p.pitch_w, p.smem);
    return;
  }
  const int ok = epi == EPI_STATS ? tc_plan_stats(p, split, env) : tc_plan_store(p, split, epi, env);
  if (!ok) {
    printf("%-8s %s: not applicable\n", name, split ? "fp32" : "tf32");
    return;
  }
  const int64_t hmma = p.ntiles * p.co_blocks * (p.BM / 16) * (p.BN / 8) * (int64_t)p.ksteps * p.nchunks * (split ? 3 : 1);
  printf("%-8s %s: BM %d, BN %d, %d team(s) x %d patch buffer(s), %d chunk(s) of %d channels, %d k-steps/chunk, %lld tiles x "
         "%d channel blocks, smem %zu B, %.1f M mma\n", name, split ? "fp32" : "tf32", p.BM, p.BN, p.teams, p.tbufs, p.nchunks,
         p.ci_chunk, p.ksteps, (long long)p.ntiles,
         p.co_blocks, p.smem, (double)hmma / 1e6);
}

static void plans(void) {
  using namespace volua_tc;
  for (int split = 1; split >= 0; split--) {
    volua_conv3d_geom g;
    memset(&g, 0, sizeof g);
    const int64_t shapes[2][5] = {{16, 3, 64, 64, 64}, {8, 3, 16, 128, 128}};
    const char *names[2] = {"L1-60", "L1-66"};
    for (int i = 0; i < 2; i++) {
      g.N = shapes[i][0], g.C_in = 3, g.C_out = 64, g.groups = 1;
      const int64_t k[3] = {3, 5, 7};
      for (int d = 0; d < 3; d++) {
        g.in[d] = shapes[i][2 + d], g.kernel[d] = k[d], g.stride[d] = 1, g.dilation[d] = 1;
        g.out[d] = g.in[d] - k[d] + 1;
      }
      Params p;
      memset(&p, 0, sizeof p);
      conv3d_params(&g, p);
      print_plan(names[i], p, EPI_STORE, split);
    }
    { // L1-77: its one live phase (1, 1, 1)
      Params p;
      memset(&p, 0, sizeof p);
      p.N = 16, p.groups = 1, p.C_in = 32, p.C_out = 64;
      const int64_t in[3] = {16, 32, 32}, Q[3] = {16, 32, 32};
      for (int d = 0; d < 3; d++) {
        p.in[d] = in[d], p.Q[d] = Q[d], p.istride[d] = 1, p.ipad[d] = 1, p.idil[d] = 1, p.taps[d] = 3;
        p.out[d] = 2 * Q[d] + 1, p.ostep[d] = 2, p.oofs[d] = 1;
      }
      print_plan("L1-77", p, EPI_STORE, split); // the output is set first: the GEMM stores live outputs
    }
    { // L2-23
      g.N = 128, g.C_in = 3, g.C_out = 24;
      const int64_t in[3] = {24, 32, 32};
      for (int d = 0; d < 3; d++) {
        g.in[d] = in[d], g.kernel[d] = 3, g.stride[d] = 1, g.dilation[d] = 1;
        g.out[d] = in[d] - 2;
      }
      Params p;
      memset(&p, 0, sizeof p);
      conv3d_params(&g, p);
      print_plan("L2-23", p, EPI_STATS, split);
    }
  }
}

// `tc_emulate plans` also lists, through the ops' own entry points with launches skipped
// (tc_emu_plan_only) and VOLUA_TC_VERBOSE's report line, the plans of the shapes the twentieth
// and twenty-first sessions timed (.devrun's tph.lua and conv2.lua in bench/NOTES.md, and three
// of the upsampling set and of the sweep): the transposed convolutions of the tc path and seven
// convolutions, both maths, for 132 SMs.
static void plans_by_entry(void) {
  using namespace volua_tc;
  struct T { const char *name; int64_t x[5], w[5], s, pd[3], op, groups; };
  const T tr[] = {
      {"L1-73", {4, 32, 32, 64, 128}, {32, 32, 3, 3, 3}, 2, {1, 1, 1}, 0, 1},
      {"k3s2op1 32-16", {8, 32, 16, 32, 32}, {32, 16, 3, 3, 3}, 2, {1, 1, 1}, 1, 1},
      {"k2s2 32-16", {8, 32, 16, 32, 32}, {32, 16, 2, 2, 2}, 2, {0, 0, 0}, 0, 1},
      {"k4s2p1 32-16", {2, 32, 32, 64, 64}, {32, 16, 4, 4, 4}, 2, {1, 1, 1}, 0, 1},
      {"k2s2 64-32", {1, 64, 64, 64, 64}, {64, 32, 2, 2, 2}, 2, {0, 0, 0}, 0, 1},
      {"k2s2 128-64", {2, 128, 32, 32, 32}, {128, 64, 2, 2, 2}, 2, {0, 0, 0}, 0, 1},
      {"g4 k3s2", {4, 32, 32, 64, 128}, {32, 8, 3, 3, 3}, 2, {1, 1, 1}, 0, 4},
      {"L1-72", {8, 32, 12, 24, 48}, {32, 8, 3, 5, 7}, 2, {1, 2, 3}, 1, 4},
      {"k3s2op1 16-8", {2, 16, 32, 64, 64}, {16, 8, 3, 3, 3}, 2, {1, 1, 1}, 1, 1},
      {"k3s2p1 32-32 odd", {2, 32, 15, 30, 45}, {32, 32, 3, 3, 3}, 2, {1, 1, 1}, 0, 1},
      {"k4s2p1 48-24", {2, 48, 16, 32, 32}, {48, 24, 4, 4, 4}, 2, {1, 1, 1}, 0, 1},
      {"up k4s2p1 64-32", {2, 64, 16, 32, 32}, {64, 32, 4, 4, 4}, 2, {1, 1, 1}, 0, 1},
      {"up k3s2op1 64-32", {2, 64, 16, 32, 32}, {64, 32, 3, 3, 3}, 2, {1, 1, 1}, 1, 1},
      {"up k2s2 64-32", {2, 64, 16, 32, 32}, {64, 32, 2, 2, 2}, 2, {0, 0, 0}, 0, 1},
  };
  const int64_t ones[3] = {1, 1, 1};
  alignas(128) static float buf[64]; // never read: no launch runs
  tc_emu_plan_only = true;
  const int sms = tc_emu_env.sms;
  tc_emu_env.sms = 132; // an H100's or H200's SMs, as the plans see them there
  setenv("VOLUA_TC_VERBOSE", "1", 1);
  auto plan = [](const char *name, volua_math_mode m, auto &&call) { // the shape's name, then its plan lines
    char err[VOLUA_ERR_MAX] = "";
    fprintf(stderr, "%s %s:\n", name, m == VOLUA_MATH_FP32 ? "fp32" : "tf32");
    const int rc = call(err);
    if (rc) fprintf(stderr, "  rc %d %s\n", rc, err);
  };
  const volua_math_mode modes[2] = {VOLUA_MATH_FP32, VOLUA_MATH_TF32};
  for (volua_math_mode m : modes) {
    for (const T &c : tr) {
      const int64_t s[3] = {c.s, c.s, c.s}, op[3] = {c.op, c.op, c.op};
      const volua_conv_transpose3d_geom g = transpose_geom(c.x[0], c.x[1], c.w[1] * c.groups, c.groups, c.x + 2, c.w + 2, s,
                                                           c.pd, op, ones);
      plan(c.name, m, [&](char *err) { return volua_cuda_conv_transpose3d_tc(&g, buf, buf, NULL, buf, m, NULL, err); });
    }
    struct C { const char *name; int64_t x[5], w[5], pd, dl, groups; };
    const C cv[] = {{"L1-60", {16, 3, 64, 64, 64}, {64, 3, 3, 5, 7}, 0, 1, 1}, {"L1-66", {8, 3, 16, 128, 128}, {64, 3, 3, 5, 7}, 0, 1, 1},
                    {"L1-54", {16, 3, 64, 64, 64}, {64, 3, 3, 3, 3}, 0, 1, 1}, {"c32", {4, 32, 32, 64, 64}, {32, 32, 3, 3, 3}, 1, 1, 1},
                    // three of the sweep (bench/small.py), whose WM choice the exact span moved (twenty-first session)
                    {"sweep g4", {2, 128, 16, 32, 32}, {128, 32, 3, 3, 3}, 1, 1, 4},
                    {"sweep d2", {1, 32, 64, 128, 128}, {32, 32, 3, 3, 3}, 2, 2, 1},
                    {"sweep c32 128^3", {1, 32, 128, 128, 128}, {32, 32, 3, 3, 3}, 1, 1, 1}};
    for (const C &c : cv) {
      const int64_t pd[3] = {c.pd, c.pd, c.pd}, dl[3] = {c.dl, c.dl, c.dl};
      const volua_conv3d_geom g = conv3d_geom(c.x[0], c.x[1], c.w[0], c.groups, c.x + 2, c.w + 2, ones, pd, dl);
      plan(c.name, m, [&](char *err) { return volua_cuda_conv3d_tc(&g, buf, buf, NULL, buf, m, NULL, err); });
    }
  }
  tc_emu_plan_only = false;
  tc_emu_env.sms = sms;
}

// tc_div (the kernels' tile decode) against '/': every divisor the plans can make, at the edges
// and on a pseudo-random spread of dividends below 2^31, plus a dense sweep for a few divisors.
static void check_tc_div(void) {
  uint64_t x = 88172645463325252ull, tests = 0, bad = 0;
  auto next = [&]() { x ^= x << 13, x ^= x >> 7, x ^= x << 17; return x; };
  auto one = [&](int64_t d, uint32_t n) {
    tests++;
    if (volua_tc::tc_div(n, volua_tc::tc_div_make(d)) != n / (uint32_t)d) bad++;
  };
  const int64_t fixed[] = {1, 2, 3, 7, 22, 30, 58, 62, 122, 124, 3480, 15128, 65535, 65537, (1 << 30) - 1, 1 << 30,
                           (1 << 30) + 1, 2147483646, 2147483647};
  for (int k = 0; k < 20000 + (int)(sizeof fixed / sizeof fixed[0]); k++) {
    const int64_t d = k < (int)(sizeof fixed / sizeof fixed[0]) ? fixed[k]
                                                               : 1 + (int64_t)(next() % ((k & 1) ? 5000u : 2147483647u));
    const uint32_t edges[] = {0u, 1u, (uint32_t)d - 1, (uint32_t)d, (uint32_t)std::min<int64_t>(d + 1, 2147483647),
                              (uint32_t)(2147483647 / d * d), (uint32_t)(2147483647 / d * d - 1), 2147483647u};
    for (uint32_t n : edges) one(d, n);
    for (int j = 0; j < 64; j++) one(d, (uint32_t)(next() % 2147483648u));
  }
  for (int64_t d : {3, 58, 122, 3480})
    for (uint64_t n = 0; n < 2147483648u; n += 1 + (n >> 16)) one(d, (uint32_t)n);
  char what[96];
  snprintf(what, sizeof what, "tc_div against / (%llu dividend, divisor pairs)", (unsigned long long)tests);
  printf("%-72s %s (worst |d|/tol %d)\n", what, bad ? "FAIL" : "ok", bad ? 1 : 0);
  if (bad) failures++;
}

// conv3d_tc.cu's W-interleaved plan (tc_plan_kw: math "tf32", kW 7, W stride and dilation 1): the
// benchmark shapes reduced (L1-60's 58 columns, L1-66's 122), channel counts that leave a block's
// channels partly empty or make several blocks, bias, padding along W of 4, strides, dilations and
// padding along D and H, K' of one k-step and of several, rows of 2 columns (one pair a row), and
// enough tiles that each block walks both patch buffers several times; L1-60's planes, where the
// rule takes two teams. Both maths (math "fp32" does not take the plan: the same cases through the
// plain kernels). VOLUA_TC_KW_TEAMS=1 or 2 forces one or two teams wherever they fit.
static void kw_cases(void) {
  const volua_math_mode modes[2] = {VOLUA_MATH_TF32, VOLUA_MATH_FP32};
  for (volua_math_mode m : modes) {
    const int64_t s1[3] = {1, 1, 1}, p0[3] = {0, 0, 0}, d1[3] = {1, 1, 1}, k[3] = {3, 5, 7};
    const int64_t in1[3] = {5, 12, 64}, in2[3] = {3, 9, 128}, in3[3] = {4, 7, 24}, in4[3] = {6, 11, 16};
    run_conv3d(2, 3, 64, in1, k, s1, p0, d1, false, m); // L1-60-like: Q2 58
    const int64_t in0[3] = {3, 64, 64};
    run_conv3d(1, 3, 64, in0, k, s1, p0, d1, true, m); // L1-60's planes: two teams (900 pairs a plane)
    run_conv3d(1, 3, 64, in2, k, s1, p0, d1, true, m);  // L1-66-like: Q2 122
    run_conv3d(2, 5, 40, in3, k, s1, p0, d1, true, m);  // 40 channels: a block partly empty
    run_conv3d(1, 2, 130, in3, k, s1, p0, d1, true, m); // three channel blocks
    const int64_t p4[3] = {1, 2, 4}, s2[3] = {2, 2, 1}, d2[3] = {2, 2, 1};
    run_conv3d(2, 3, 64, in4, k, s1, p4, d1, true, m);  // padding, W's a multiple of 4
    run_conv3d(1, 3, 64, in4, k, s2, p4, d1, false, m); // strides along D and H
    run_conv3d(1, 4, 64, in4, k, s1, p4, d2, true, m);  // dilations along D and H
    const int64_t k1[3] = {1, 1, 7}, in5[3] = {3, 40, 8};
    run_conv3d(2, 1, 64, in5, k1, s1, p0, d1, true, m); // K' one k-step; rows of 2 columns
    const int64_t in6[3] = {2, 70, 12}, k2[3] = {1, 3, 7};
    run_conv3d(3, 9, 48, in6, k2, s1, p0, d1, false, m); // K' 27: 4 k-steps; 6 columns (c4 2, a pair past Q2)
  }
}

// `tc_emulate accuracy`: math "fp32" on KernelBench's L2-61 (conv_transpose3d 64 -> 128 k3, relu,
// GroupNorm(8, 128), x uniform [0, 1), PyTorch's initial weights) at a small size. GroupNorm
// divides by the groups' sigma (about 0.14 here), so the convolution's error reaches the issue's
// fp32 tolerance (rtol 1e-4, atol 1e-5) magnified about 7 times. Prints the worst |d| / tol of the
// convolution and of the whole, against float64.
static void accuracy_case(int64_t N, int64_t side) {
  const int64_t Ci = 64, Co = 128, G = 8, in[3] = {side, side, side}, k[3] = {3, 3, 3}, s[3] = {1, 1, 1};
  const int64_t p[3] = {0, 0, 0}, op[3] = {0, 0, 0}, d[3] = {1, 1, 1};
  const volua_conv_transpose3d_geom g = transpose_geom(N, Ci, Co, 1, in, k, s, p, op, d);
  auto x = randu(N * Ci * side * side * side, 0, 1);
  const float wb = wbound(Co * 27);
  auto w = randu(Ci * Co * 27, -wb, wb);
  const int64_t S = g.out[0] * g.out[1] * g.out[2], ny = N * Co * S;
  std::vector<float> y((size_t)ny, NAN);
  std::vector<double> ref((size_t)ny);
  ref_conv_transpose3d(g, x.data(), w.data(), NULL, ref.data());
  char err[VOLUA_ERR_MAX] = "";
  if (volua_cuda_conv_transpose3d_tc(&g, x.data(), w.data(), NULL, y.data(), VOLUA_MATH_FP32, NULL, err)) {
    printf("accuracy: %s\n", err);
    failures++;
    return;
  }
  char what[160];
  snprintf(what, sizeof what, "L2-61 fp32 (%lld, 64, %lld^3): conv_transpose3d", (long long)N, (long long)side);
  compare(what, y.data(), ref.data(), ny, 1e-4, 1e-5);
  // relu and GroupNorm in double on both sides
  auto relu_gn = [&](auto get, std::vector<double> &out) {
    out.resize((size_t)ny);
    const int64_t per = Co / G * S;
    for (int64_t n = 0; n < N; n++)
      for (int64_t gr = 0; gr < G; gr++) {
        const int64_t base = (n * Co + gr * (Co / G)) * S;
        double sum = 0.0, sq = 0.0;
        for (int64_t i = 0; i < per; i++) {
          const double v = std::max(0.0, (double)get(base + i));
          sum += v;
          sq += v * v;
        }
        const double mean = sum / per, var = sq / per - mean * mean, r = 1.0 / sqrt(var + 1e-5);
        for (int64_t i = 0; i < per; i++) out[(size_t)(base + i)] = (std::max(0.0, (double)get(base + i)) - mean) * r;
      }
  };
  std::vector<double> got_gn, ref_gn;
  relu_gn([&](int64_t i) { return (double)y[(size_t)i]; }, got_gn);
  relu_gn([&](int64_t i) { return ref[(size_t)i]; }, ref_gn);
  std::vector<float> got_f(got_gn.begin(), got_gn.end());
  snprintf(what, sizeof what, "L2-61 fp32 (%lld, 64, %lld^3): + relu + GroupNorm(8, 128)", (long long)N, (long long)side);
  compare(what, got_f.data(), ref_gn.data(), ny, 1e-4, 1e-5);
}

static void epi_cases(volua_math_mode m) {
  // the fused epilogue (emu_epi_mode: make_epi's random chains): conv3d's plain store (whole tiles,
  // C_in in chunks, groups, the channels-last path, which leaves the steps to the pass), every
  // phase in one GEMM (64 to 512 columns, 8, 4 and 2 phases, through the warp's stage or not), W
  // pairs, stride 1,
  // the outputs set first (not taken), and with infinities (the redo, then the steps again)
  emu_epi_mode = true;
  const int64_t s1[3] = {1, 1, 1}, s2[3] = {2, 2, 2}, p0[3] = {0, 0, 0}, p1[3] = {1, 1, 1}, d1[3] = {1, 1, 1};
  const int64_t k3[3] = {3, 3, 3}, k133[3] = {1, 3, 3}, in1[3] = {3, 10, 66}, in2[3] = {4, 5, 6}, in3[3] = {2, 3, 40};
  const int64_t in5[3] = {2, 3, 8}, op1[3] = {1, 1, 1}, d2[3] = {2, 2, 2}, in4[3] = {4, 5, 9};
  run_conv3d(1, 3, 64, in1, k133, s1, p0, d1, true, m);
  run_conv3d(1, 70, 16, in2, k3, s1, p1, d1, false, m);
  run_conv3d(2, 6, 144, in4, k3, s1, p1, d1, true, m, 2);
  run_conv3d(1, 64, 64, in2, k3, s1, p1, d1, true, m);
  run_transpose(1, 16, 8, in3, k3, s2, p1, p0, d1, true, m);
  run_transpose(1, 16, 64, in5, k3, s2, p1, op1, d1, true, m);
  run_transpose(1, 32, 32, in3, k3, s2, p1, p0, d1, false, m);
  run_transpose(2, 4, 80, in4, k3, s2, p1, op1, d1, true, m, 2);
  run_transpose(2, 40, 24, in2, k3, s1, p1, p0, d1, true, m);
  run_transpose(1, 8, 24, in4, k3, s2, p1, p0, d2, true, m);
  run_transpose(1, 16, 128, in5, k3, s2, p1, op1, d1, true, m, 1, 4);
  run_conv3d(1, 70, 16, in2, k3, s1, p1, d1, false, m, 1, 3);
  // every phase in one GEMM with 4 and 2 phases: a block of 8 columns holds 2 and 4 channels
  const int64_t s122[3] = {1, 2, 2}, s211[3] = {2, 1, 1}, s112[3] = {1, 1, 2};
  run_transpose(1, 16, 24, in2, k3, s122, p1, p0, d1, true, m);
  run_transpose(2, 8, 40, in2, k3, s211, p1, p0, d1, false, m);
  run_transpose(1, 16, 16, in3, k3, s112, p1, p0, d1, true, m);
  emu_epi_mode = false;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "accuracy") == 0) {
    const int64_t N = argc > 2 ? atoll(argv[2]) : 1, side = argc > 3 ? atoll(argv[3]) : 6;
    accuracy_case(N, side);
    printf("%s: %d failure(s)\n", failures ? "FAILED" : "ok", failures);
    return failures != 0;
  }
  if (argc > 1 && strcmp(argv[1], "plans") == 0) {
    plans();
    plans_by_entry();
    return 0;
  }
  const int random_cases = argc > 1 ? atoi(argv[1]) : 6;
  // VOLUA_EMU_SMS: the emulated SM count (2 by default; more gives more persistent blocks and
  // fewer tiles to each)
  if (getenv("VOLUA_EMU_SMS")) volua_tc::tc_emu_env.sms = atoi(getenv("VOLUA_EMU_SMS"));
  // VOLUA_EMU_WG=0: the k-loops by mma.sync (tc_compute) instead of wgmma (tc_compute_wg)
  if (getenv("VOLUA_EMU_WG")) volua_tc::tc_emu_env.wg = atoi(getenv("VOLUA_EMU_WG"));
  if (argc > 2) rng.seed((uint64_t)atoll(argv[2])); // a second argument: the seed of the random cases
  check_tc_div();
  const volua_math_mode modes[2] = {VOLUA_MATH_FP32, VOLUA_MATH_TF32};
  // VOLUA_EMU_EPI_ONLY=1: only the fused epilogue's cases (epi_cases), in both maths
  if (getenv("VOLUA_EMU_EPI_ONLY")) {
    for (volua_math_mode m : modes) epi_cases(m);
    printf("%s: %d failure(s)\n", failures ? "FAILED" : "ok", failures);
    return failures != 0;
  }
  // VOLUA_EMU_KW_ONLY=1: only the cases of conv3d_tc.cu's W-interleaved plan (math "tf32", kW 7)
  if (getenv("VOLUA_EMU_KW_ONLY")) {
    kw_cases();
    printf("%s: %d failure(s)\n", failures ? "FAILED" : "ok", failures);
    return failures != 0;
  }
  kw_cases();
  for (volua_math_mode m : modes) {
    epi_cases(m);
    { // the benchmark shapes, reduced
      const int64_t in[3] = {5, 9, 70}, k[3] = {3, 5, 7}, s[3] = {1, 1, 1}, p[3] = {0, 0, 0}, d[3] = {1, 1, 1};
      run_conv3d(1, 3, 64, in, k, s, p, d, false, m); // L1-60/66-like: 64 channels, OW 64
      // planes of 512 positions: whole tiles (the conv3d epilogue without position checks) in both
      // maths, and K of 4 k-steps (two teams in math "tf32")
      const int64_t in2[3] = {3, 10, 66}, k2[3] = {1, 3, 3};
      run_conv3d(1, 3, 64, in2, k2, s, p, d, true, m);
    }
    {
      const int64_t in[3] = {4, 5, 9}, k[3] = {3, 3, 3}, s[3] = {2, 2, 2}, p[3] = {1, 1, 1}, op[3] = {0, 0, 0}, d[3] = {2, 2, 2};
      run_transpose(2, 32, 40, in, k, s, p, op, d, false, m); // L1-77-like: 4 chunks of C_in, W box
      // the output set first (dead (n, co, od) planes, rows and columns): with a bias, and with two
      // dead D phases of three (stride 3, dilation 3)
      run_transpose(1, 8, 24, in, k, s, p, op, d, true, m);
      const int64_t s3[3] = {3, 2, 1}, d3[3] = {3, 2, 1}, in3[3] = {4, 5, 6};
      run_transpose(2, 8, 16, in3, k, s3, p, op, d3, true, m);
    }
    {
      const int64_t in[3] = {6, 8, 9}, k[3] = {3, 3, 3}, s[3] = {1, 1, 1}, p[3] = {0, 0, 0}, d[3] = {1, 1, 1};
      run_gn_mean(3, 3, 24, 8, in, k, s, p, d, 0.0f, m); // L2-23-like
      run_gn_mean(2, 2, 12, 3, in, k, s, p, d, 50.0f, m); // a large mean
      const int64_t in2[3] = {4, 32, 32}; // L2-23's 30 x 30 planes: whole tiles and a partial one
      run_gn_mean(2, 3, 24, 8, in2, k, s, p, d, 0.0f, m);
      run_gn_mean(2, 3, 24, 8, in2, k, s, p, d, 50.0f, m); // whole tiles' sums at a large mean

      // more shapes (planes of 9 to 64 rows, padding, kW 5 and 7, strides and dilations along D and H,
      // K of 8 k-steps), each plain and with the two probes (run_gn_mean; L2-23's planes above, with
      // the probes only). Mutations of the statistics epilogue's "tf32" sums, counted over all 20 plain
      // and 28 probe cases of both maths: a row of each tile left out fails 3 plain cases and 13
      // probes; the squares 5 % high, 1 and 6; and of both maths' bias count one short, 13 and 27.
      const int64_t in3[3] = {4, 9, 16}, in4[3] = {3, 5, 68}, p4[3] = {0, 1, 1}, in5[3] = {4, 11, 44}, k5[3] = {3, 2, 5};
      const int64_t in6[3] = {3, 9, 28}, k6[3] = {1, 3, 7}, p6[3] = {0, 1, 3}, in7[3] = {9, 13, 24}, s7[3] = {2, 2, 1};
      const int64_t p7[3] = {2, 1, 1}, d7[3] = {2, 2, 1}, in8[3] = {4, 5, 12}, p8[3] = {1, 1, 1};
      for (int probe = 0; probe < 3; probe++) {
        if (probe) run_gn_mean(2, 3, 24, 8, in2, k, s, p, d, 0.0f, m, probe);
        run_gn_mean(2, 3, 24, 8, in3, k, s, p, d, 0.0f, m, probe);
        run_gn_mean(1, 2, 8, 2, in4, k, s, p4, d, 0.0f, m, probe);
        run_gn_mean(2, 3, 12, 3, in5, k5, s, p, d, 0.0f, m, probe);
        run_gn_mean(2, 3, 8, 1, in6, k6, s, p6, d, 20.0f, m, probe);
        run_gn_mean(2, 3, 16, 4, in7, k, s7, p7, d7, 0.0f, m, probe);
        run_gn_mean(1, 7, 8, 2, in8, k, s, p8, d, 0.0f, m, probe);
      }
    }
    { // variant and chunking paths: L1-66-like rows (64 channels in two blocks of 32), C_in in chunks,
      // two channel blocks of 64, a transposed conv with two live W phases (GEMMs + fill)
      const int64_t in[3] = {3, 6, 128}, k[3] = {3, 5, 7}, s[3] = {1, 1, 1}, p[3] = {0, 0, 0}, d[3] = {1, 1, 1};
      run_conv3d(1, 3, 64, in, k, s, p, d, true, m);
      const int64_t in2[3] = {4, 5, 6}, k2[3] = {3, 3, 3}, p2[3] = {1, 1, 1};
      run_conv3d(1, 70, 16, in2, k2, s, p2, d, false, m);
      run_conv3d(1, 4, 130, in2, k2, s, p2, d, true, m);
      const int64_t s3[3] = {2, 2, 2}, op3[3] = {1, 0, 1};
      run_transpose(1, 6, 20, in2, k2, s3, p2, op3, d, true, m);
      // stride 1 (L1-61/68/70-like: the plain store epilogue, C_in in chunks), and stride 1 with a
      // dilation that leaves outputs no tap reaches (bias only)
      const int64_t in3[3] = {3, 5, 16}, op0[3] = {0, 0, 0}, d4[3] = {1, 2, 4};
      run_transpose(2, 40, 24, in3, k2, s, p2, op0, d, true, m);
      run_transpose(1, 5, 8, in3, k2, s, p2, op0, d4, true, m);
      // infinities and NaN where math "fp32"'s one accumulator turns them to NaN (conv3d.cu's and
      // conv_transpose3d.cu's gated redo: nf_redo): the store GEMMs, chunks of C_in, the
      // channels-last kernel (64 -> 64)
      run_transpose(2, 40, 24, in3, k2, s, p2, op0, d, true, m, 1, 3);
      run_conv3d(1, 70, 16, in2, k2, s, p2, d, false, m, 1, 3);
      const int64_t in6[3] = {4, 6, 8};
      run_conv3d(1, 64, 64, in6, k2, s, p2, d, true, m, 1, 2);
    }
    { // groups: L1-72/73-like transposed convs (8 channels per group, every phase live, bias per
      // group), a grouped conv3d with two channel blocks per group, and depthwise
      const int64_t in[3] = {3, 5, 8}, k[3] = {3, 5, 7}, s[3] = {2, 2, 2}, p[3] = {1, 2, 3}, op[3] = {1, 1, 1};
      const int64_t d[3] = {1, 1, 1}, k3[3] = {3, 3, 3}, p1[3] = {1, 1, 1}, op0[3] = {0, 0, 0}, s1[3] = {1, 1, 1};
      run_transpose(2, 32, 32, in, k, s, p, op, d, true, m, 4);
      run_transpose(1, 32, 32, in, k3, s, p1, op0, d, false, m, 4);
      const int64_t inw[3] = {2, 3, 128}; // L1-73-like rows: the phases as columns, C_in in chunks
      run_transpose(1, 32, 16, inw, k3, s, p1, op0, d, true, m);
      run_transpose(1, 32, 32, inw, k3, s, p1, op0, d, true, m); // 256 columns: W pairs (fp32), every phase (tf32)
      // L1-73's planes of 4 x 128 phase rows: in math "tf32" 512 positions a block with C_in in 3 chunks of
      // 11, where 256 positions would take 2 of 16 (tc_plan_store's every-phase rule)
      const int64_t inw4[3] = {2, 4, 128};
      run_transpose(1, 32, 32, inw4, k3, s, p1, op0, d, true, m);
      // Plans on the exact tile span, where it makes the better plan (tc_plan): k2 s2 64 -> 32 on 64 x 64
      // phase rows (math "fp32": 4 patch rows, the staged-rows epilogue), 128 -> 64 on 32 x 32 ("tf32":
      // 16 rows, staged rows), and L1-72's 24 x 48 rows ("tf32": two blocks an SM)
      const int64_t k2[3] = {2, 2, 2}, in64[3] = {1, 64, 64}, in32[3] = {1, 32, 32}, in72[3] = {1, 24, 48};
      run_transpose(1, 64, 32, in64, k2, s, op0, op0, d, true, m);
      run_transpose(1, 128, 64, in32, k2, s, op0, op0, d, false, m);
      run_transpose(1, 32, 32, in72, k, s, p, op, d, true, m, 4);
      // 512 and 1024 columns: every phase in one GEMM (tf32; and fp32 where, as here, the phase-by-phase
      // launches would have fewer tiles than SMs), 8 and 16 channel blocks
      const int64_t in5[3] = {2, 3, 8}, op5[3] = {1, 1, 1};
      run_transpose(1, 16, 64, in5, k3, s, p1, op5, d, true, m);
      run_transpose(2, 8, 128, in5, k3, s, p1, op0, d, false, m);
      // NaN and infinities in the input of every-phase GEMMs whose phases lack union taps (k3 s2: a
      // zero weight meets every input, so 0 x inf would be NaN where the input reaches no output):
      // the preparation's input scan stamps the flag, the gated redo (here the float64 reference)
      // redoes the output. 64 columns (both maths), 256 and 1024 (tf32 by the rule; fp32 phase by phase)
      run_transpose(1, 16, 8, inw, k3, s, p1, op0, d, true, m, 1, 5);
      run_transpose(1, 32, 32, inw, k3, s, p1, op0, d, false, m, 1, 3);
      run_transpose(1, 16, 128, in5, k3, s, p1, op5, d, true, m, 1, 4);
      const int64_t op1[3] = {1, 0, 1}, s3[3] = {3, 1, 2};
      run_transpose(1, 4, 80, in, k3, s, p1, op1, d, false, m); // 320 columns: W phase pairs
      run_transpose(2, 4, 80, in, k3, s, p1, op1, d, true, m, 2); // grouped W phase pairs
      run_transpose(1, 32, 40, inw, k3, s3, p1, op0, d, true, m); // stride 3 in D: W pairs, chunks
      run_conv3d(2, 6, 144, in, k3, s1, p1, d, true, m, 2);
      run_conv3d(2, 8, 8, in, k3, s, p1, d, true, m, 8);
    }
    { // split K (forced: the emulator's 2 SMs never ask for it): C_in in chunks over 2 and 3 parts,
      // one and two channel blocks, planes with a partial tile, stride and dilation
      const int64_t in[3] = {4, 5, 6}, in2[3] = {3, 9, 33}, k[3] = {3, 3, 3}, s1[3] = {1, 1, 1}, s2[3] = {1, 2, 1};
      const int64_t p1[3] = {1, 1, 1}, d1[3] = {1, 1, 1}, d2[3] = {1, 1, 2};
      setenv("VOLUA_TC_KSPLIT", "3", 1);
      run_conv3d(1, 70, 16, in, k, s1, p1, d1, false, m);
      run_conv3d(2, 90, 70, in2, k, s2, p1, d2, true, m);
      setenv("VOLUA_TC_KSPLIT", "2", 1);
      run_conv3d(2, 70, 40, in2, k, s1, p1, d1, true, m);
      // a transposed convolution's phases one by one (not as one GEMM, nor W pairs), each with K split
      const int64_t st2[3] = {2, 2, 2}, opt[3] = {1, 0, 1};
      setenv("VOLUA_TC_PHASES", "0", 1);
      setenv("VOLUA_TC_WPAIR", "0", 1);
      run_transpose(1, 70, 20, in, k, st2, p1, opt, d1, true, m);
      unsetenv("VOLUA_TC_PHASES");
      unsetenv("VOLUA_TC_WPAIR");
      unsetenv("VOLUA_TC_KSPLIT");
    }
    { // the channels-last path (conv3d_cl.cu; in math "fp32" split TF32, 64 or 128 channels a block
      // and 128 positions whatever VOLUA_TC_CL_BN and _BM ask): C_in over 32 with its tail, partial
      // channel blocks, boxes past the output, stride, dilation, padding, 128, 160, 192, 224 and 256
      // channels a block, and K split over 3 and 9 parts
      const int64_t in[3] = {4, 5, 9}, in2[3] = {3, 9, 20}, k[3] = {3, 3, 3}, s1[3] = {1, 1, 1}, s2[3] = {2, 1, 3};
      const int64_t p1[3] = {1, 1, 1}, p0[3] = {0, 2, 1}, d1[3] = {1, 1, 1}, d2[3] = {1, 2, 1}, k2[3] = {2, 3, 1};
      setenv("VOLUA_TC_CL", "1", 1);
      run_conv3d(1, 40, 70, in, k, s1, p1, d1, true, m);
      run_conv3d(2, 36, 64, in2, k2, s2, p0, d2, false, m);
      run_conv3d(1, 64, 130, in, k, s1, p1, d1, true, m);
      setenv("VOLUA_TC_CL_BN", "256", 1); // 256 channels a block, then a partial one
      run_conv3d(1, 36, 300, in, k, s1, p1, d1, true, m);
      unsetenv("VOLUA_TC_CL_BN");
      run_conv3d(1, 36, 300, in, k, s1, p1, d1, true, m);    // (the rule:) 160 a block, then a partial one
      run_conv3d(1, 40, 192, in, k, s1, p1, d1, true, m);    // 192 a block
      run_conv3d(2, 36, 380, in2, k2, s2, p0, d2, false, m); // 192 a block, then a partial one
      run_conv3d(1, 40, 224, in, k, s1, p1, d1, true, m);    // 224 a block
      run_conv3d(2, 36, 440, in2, k2, s2, p0, d2, false, m); // 224 a block, then a partial one
      setenv("VOLUA_TC_KSPLIT", "3", 1);
      run_conv3d(1, 33, 64, in, k, s1, p1, d1, true, m);
      setenv("VOLUA_TC_KSPLIT", "9", 1); // (cl_reduce_kernel a value a thread)
      run_conv3d(1, 33, 64, in, k, s1, p1, d1, true, m);
      unsetenv("VOLUA_TC_KSPLIT");
      // the weight copy in two channel blocks (the second of 2 channels and 2 zeros) and 125 taps
      // in two passes (95 + 30)
      const int64_t in3[3] = {2, 3, 5}, k5[3] = {5, 5, 5}, p2[3] = {2, 2, 2};
      run_conv3d(1, 130, 64, in3, k5, s1, p2, d1, true, m);
      // 256 positions a block (two 64-row slices a warpgroup), with 64 and 128 channels a block
      setenv("VOLUA_TC_CL_BM", "256", 1);
      run_conv3d(1, 40, 70, in, k, s1, p1, d1, true, m);
      run_conv3d(2, 36, 130, in2, k2, s2, p0, d2, false, m);
      unsetenv("VOLUA_TC_CL_BM");
      // transposed convolutions as phases, all in one launch: k4 s2 p1 (8 phases of 2 x 2 x 2 taps),
      // k3 s2 p1 op1 (phases of 2 and 1 taps, grids of unequal size), k2 s2, strides (2, 1, 3) with
      // output padding, kernel (1, 3, 5); split K over 3 parts; 256 positions a block
      const int64_t s222[3] = {2, 2, 2}, s213[3] = {2, 1, 3}, k4[3] = {4, 4, 4}, k135[3] = {1, 3, 5};
      const int64_t op0[3] = {0, 0, 0}, op1[3] = {1, 1, 1}, op2[3] = {1, 0, 2}, p10[3] = {0, 1, 2}, k222[3] = {2, 2, 2};
      run_transpose(2, 40, 70, in, k4, s222, p1, op0, d1, true, m);
      run_transpose(1, 36, 64, in2, k, s222, p1, op1, d1, false, m);
      run_transpose(1, 33, 130, in, k222, s222, op0, op0, d1, true, m);
      run_transpose(2, 36, 72, in, k135, s213, p10, op2, d1, true, m);
      setenv("VOLUA_TC_KSPLIT", "3", 1);
      run_transpose(1, 70, 64, in, k4, s222, p1, op0, d1, true, m);
      unsetenv("VOLUA_TC_KSPLIT");
      setenv("VOLUA_TC_CL_BM", "256", 1);
      run_transpose(1, 40, 70, in2, k, s222, p1, op1, d1, true, m);
      unsetenv("VOLUA_TC_CL_BM");
      // the weight copy's 16-byte loads with runs of 12 taps: 3 lanes a run, 10 runs a warp load, 2
      // lanes idle
      const int64_t k134[3] = {1, 3, 4}, s122[3] = {1, 2, 2}, p011[3] = {0, 1, 1};
      run_transpose(1, 70, 64, in, k134, s122, p011, op0, d1, true, m);
      unsetenv("VOLUA_TC_CL");
    }
    for (int i = 0; i < random_cases; i++) {
      int64_t in[3], k[3], s[3], p[3], d[3], op[3];
      for (int j = 0; j < 3; j++) {
        in[j] = irand(1, 9), k[j] = irand(1, 4), s[j] = irand(1, 3), d[j] = irand(1, 3), p[j] = irand(0, 2);
        op[j] = irand(0, (s[j] > d[j] ? s[j] : d[j]) - 1);
      }
      const int64_t gc = irand(0, 1) ? 1 : irand(2, 4), gt = irand(0, 1) ? 1 : irand(2, 4);
      run_conv3d(irand(1, 2), gc * irand(1, 5), gc * irand(1, 70 / gc), in, k, s, p, d, irand(0, 1), m, gc);
      run_transpose(irand(1, 2), gt * irand(1, 5), gt * irand(1, 40 / gt), in, k, s, p, op, d, irand(0, 1), m, gt);
      const int64_t groups = irand(1, 4);
      run_gn_mean(irand(1, 3), irand(1, 3), groups * irand(1, 32 / groups), groups, in, k, s, p, d,
                  irand(0, 1) ? 0.0f : 20.0f, m);
    }
  }
  printf("%d failure(s)\n", failures);
  return failures ? 1 : 0;
}
