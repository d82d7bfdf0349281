/* elementwise.c: the CPU backend of tensor arithmetic, fills, conversions and whole-tensor reductions.
 * The ops here, by name:
 *   binary: add, sub, mul, div, maximum, minimum (apply_bin, apply_bin_i64, volua_cpu_binary_scalar)
 *   unary: neg, abs, relu; the activations (one function each, act_<name>, in double): tanh,
 *     sigmoid, exp, log, sqrt, gelu, gelu_tanh, silu, mish, softplus, elu, leaky_relu, hardswish,
 *     hardsigmoid, clamp (hardtanh is clamp)
 *   fill, reduce (sum, max, min), max_abs_diff, allclose, convert */
#include <math.h>
#include <stdio.h>

#include "cpu.h"
#include "../tensor.h"

int volua_cpu_check_interrupt(const char *op, char *err) {
  if (!volua_interrupted) return 0;
  snprintf(err, VOLUA_ERR_MAX, "%s: interrupted", op);
  return 1;
}

/* maximum / minimum: NaN propagates (torch.maximum); otherwise std::max / std::min, which keep
 * the first operand on ties (so -0 against +0 gives the first). The GPU's rule is the same. */
static inline double max_nan(double a, double b) { return isnan(a) ? a : isnan(b) ? b : a < b ? b : a; }
static inline double min_nan(double a, double b) { return isnan(a) ? a : isnan(b) ? b : b < a ? b : a; }

static inline double apply_bin(double a, double b, volua_binop op) {
  switch (op) {
  case VOLUA_BIN_ADD: return a + b;
  case VOLUA_BIN_SUB: return a - b;
  case VOLUA_BIN_MUL: return a * b;
  case VOLUA_BIN_MAXIMUM: return max_nan(a, b);
  case VOLUA_BIN_MINIMUM: return min_nan(a, b);
  default: return a / b;
  }
}

/* int64 arithmetic stays in integers (division is checked by the op layer to be float32 only). */
static inline int64_t apply_bin_i64(int64_t a, int64_t b, volua_binop op) {
  switch (op) {
  case VOLUA_BIN_ADD: return (int64_t)((uint64_t)a + (uint64_t)b);
  case VOLUA_BIN_SUB: return (int64_t)((uint64_t)a - (uint64_t)b);
  case VOLUA_BIN_MAXIMUM: return a < b ? b : a;
  case VOLUA_BIN_MINIMUM: return b < a ? b : a;
  default: return (int64_t)((uint64_t)a * (uint64_t)b);
  }
}

/* Offsets of output element i in a and b, walking the broadcast strides. */
static inline void bcast_offsets(const volua_bcast_geom *g, int64_t i, int64_t *oa, int64_t *ob) {
  int64_t a = 0, b = 0;
  for (int d = g->ndim - 1; d >= 0; d--) {
    int64_t k = i % g->shape[d];
    i /= g->shape[d];
    a += k * g->stride_a[d];
    b += k * g->stride_b[d];
  }
  *oa = a;
  *ob = b;
}

int volua_cpu_binary(const volua_bcast_geom *g, int dt, const void *a, const void *b, void *y,
                     volua_binop op) {
  int64_t n = g->numel;
  if (dt == VOLUA_FLOAT32) {
    const float *pa = a, *pb = b;
    float *py = y;
#pragma omp parallel for if (n > 65536)
    for (int64_t i = 0; i < n; i++) {
      int64_t oa, ob;
      bcast_offsets(g, i, &oa, &ob);
      py[i] = (float)apply_bin(pa[oa], pb[ob], op);
    }
  } else {
    const int64_t *pa = a, *pb = b;
    int64_t *py = y;
#pragma omp parallel for if (n > 65536)
    for (int64_t i = 0; i < n; i++) {
      int64_t oa, ob;
      bcast_offsets(g, i, &oa, &ob);
      py[i] = apply_bin_i64(pa[oa], pb[ob], op);
    }
  }
  return 0;
}

int volua_cpu_binary_scalar(int64_t n, int dt, const void *a, double s, void *y, volua_binop op,
                            int scalar_first) {
  if (dt == VOLUA_FLOAT32) {
    const float *pa = a;
    float *py = y;
    float fs = (float)s; /* torch computes in the tensor's dtype */
#pragma omp parallel for if (n > 65536)
    for (int64_t i = 0; i < n; i++) {
      float r;
      switch (op) {
      case VOLUA_BIN_ADD: r = pa[i] + fs; break;
      case VOLUA_BIN_SUB: r = scalar_first ? fs - pa[i] : pa[i] - fs; break;
      case VOLUA_BIN_MUL: r = pa[i] * fs; break;
      case VOLUA_BIN_MAXIMUM: r = (float)max_nan(pa[i], fs); break;
      case VOLUA_BIN_MINIMUM: r = (float)min_nan(pa[i], fs); break;
      default: r = scalar_first ? fs / pa[i] : pa[i] / fs; break;
      }
      py[i] = r;
    }
  } else {
    const int64_t *pa = a;
    int64_t *py = y;
    int64_t is = (int64_t)s;
#pragma omp parallel for if (n > 65536)
    for (int64_t i = 0; i < n; i++)
      py[i] = scalar_first ? apply_bin_i64(is, pa[i], op) : apply_bin_i64(pa[i], is, op);
  }
  return 0;
}

/* -- activations: PyTorch's formulas (aten/src/ATen/native/cpu/Activation.cpp, UnaryOps), in
 * double, rounded once to float32 by the caller ---- */

static double act_tanh(double x, const volua_unary_args *p) { (void)p; return tanh(x); }
/* exp(-x) overflows to inf for x < -709: 1 / inf is 0, as sigmoid(-1000) must be */
static double act_sigmoid(double x, const volua_unary_args *p) { (void)p; return 1.0 / (1.0 + exp(-x)); }
static double act_exp(double x, const volua_unary_args *p) { (void)p; return exp(x); }
static double act_log(double x, const volua_unary_args *p) { (void)p; return log(x); }
static double act_sqrt(double x, const volua_unary_args *p) { (void)p; return sqrt(x); }
/* gelu(-inf) is -inf * 0 = NaN, as torch's formula gives */
static double act_gelu(double x, const volua_unary_args *p) {
  (void)p;
  return x * 0.5 * (1.0 + erf(x * M_SQRT1_2));
}
static double act_gelu_tanh(double x, const volua_unary_args *p) {
  (void)p;
  const double beta = M_SQRT2 * M_2_SQRTPI * 0.5, kappa = 0.044715;
  return 0.5 * x * (1.0 + tanh(beta * (x + kappa * x * x * x)));
}
/* silu(-inf) = -inf / (1 + inf) = NaN, as torch's x / (1 + exp(-x)) */
static double act_silu(double x, const volua_unary_args *p) { (void)p; return x / (1.0 + exp(-x)); }
static double act_mish(double x, const volua_unary_args *p) { (void)p; return x * tanh(log1p(exp(x))); }
/* beta p0, threshold p1: above the threshold the input itself (torch's (x * beta) > threshold) */
static double act_softplus(double x, const volua_unary_args *p) {
  return x * p->p0 > p->p1 ? x : log1p(exp(x * p->p0)) / p->p0;
}
static double act_elu(double x, const volua_unary_args *p) { return x > 0 ? x : expm1(x) * p->p0; }
static double act_leaky_relu(double x, const volua_unary_args *p) { return x > 0 ? x : x * p->p0; }
/* std::min(std::max(...)) as torch writes them: NaN passes through both */
static double act_hardswish(double x, const volua_unary_args *p) {
  (void)p;
  double m = x + 3.0;
  m = m < 0.0 ? 0.0 : m;
  m = 6.0 < m ? 6.0 : m;
  return x * m / 6.0;
}
static double act_hardsigmoid(double x, const volua_unary_args *p) {
  (void)p;
  double m = x + 3.0;
  m = m < 0.0 ? 0.0 : m;
  m = 6.0 < m ? 6.0 : m;
  return m / 6.0;
}
/* min p0 (-inf when absent), max p1 (+inf): std::min(std::max(x, min), max); min > max gives max */
static double act_clamp(double x, const volua_unary_args *p) {
  double r = x < p->p0 ? p->p0 : x;
  return p->p1 < r ? p->p1 : r;
}

typedef double (*act_fn)(double x, const volua_unary_args *p);

static act_fn activation(volua_unop op) {
  switch (op) {
  case VOLUA_UN_TANH: return act_tanh;
  case VOLUA_UN_SIGMOID: return act_sigmoid;
  case VOLUA_UN_EXP: return act_exp;
  case VOLUA_UN_LOG: return act_log;
  case VOLUA_UN_SQRT: return act_sqrt;
  case VOLUA_UN_GELU: return act_gelu;
  case VOLUA_UN_GELU_TANH: return act_gelu_tanh;
  case VOLUA_UN_SILU: return act_silu;
  case VOLUA_UN_MISH: return act_mish;
  case VOLUA_UN_SOFTPLUS: return act_softplus;
  case VOLUA_UN_ELU: return act_elu;
  case VOLUA_UN_LEAKY_RELU: return act_leaky_relu;
  case VOLUA_UN_HARDSWISH: return act_hardswish;
  case VOLUA_UN_HARDSIGMOID: return act_hardsigmoid;
  case VOLUA_UN_HARDTANH: /* the op layer sends hardtanh as clamp; the same formula either way */
  case VOLUA_UN_CLAMP: return act_clamp;
  default: return NULL;
  }
}

/* An int64 clamp bound from its double (-inf and +inf: no bound). */
static int64_t bound_i64(double v) {
  return v <= -0x1p63 ? INT64_MIN : v >= 0x1p63 ? INT64_MAX : (int64_t)v;
}

int volua_cpu_unary(int64_t n, int dt, const void *a, void *y, volua_unop op, const volua_unary_args *p) {
  act_fn f = activation(op);
  if (dt == VOLUA_FLOAT32 && f) {
    const float *pa = a;
    float *py = y;
#pragma omp parallel for if (n > 16384)
    for (int64_t i = 0; i < n; i++) py[i] = (float)f(pa[i], p);
    return 0;
  }
  if (dt == VOLUA_INT64 && f) { /* only clamp keeps int64 (the op layer promotes or refuses the rest) */
    const int64_t *pa = a;
    int64_t *py = y;
    const int64_t lo = bound_i64(p->p0), hi = bound_i64(p->p1);
#pragma omp parallel for if (n > 65536)
    for (int64_t i = 0; i < n; i++) {
      int64_t r = pa[i] < lo ? lo : pa[i];
      py[i] = hi < r ? hi : r;
    }
    return 0;
  }
  if (dt == VOLUA_FLOAT32) {
    const float *pa = a;
    float *py = y;
#pragma omp parallel for if (n > 65536)
    for (int64_t i = 0; i < n; i++) {
      float v = pa[i];
      /* relu keeps NaN, as torch.relu does */
      py[i] = op == VOLUA_UN_NEG ? -v : op == VOLUA_UN_ABS ? fabsf(v) : (v < 0.0f ? 0.0f : v);
    }
  } else {
    const int64_t *pa = a;
    int64_t *py = y;
#pragma omp parallel for if (n > 65536)
    for (int64_t i = 0; i < n; i++) {
      int64_t v = pa[i];
      py[i] = op == VOLUA_UN_NEG ? (int64_t)(0 - (uint64_t)v)
              : op == VOLUA_UN_ABS ? (v < 0 ? (int64_t)(0 - (uint64_t)v) : v)
                                   : (v < 0 ? 0 : v);
    }
  }
  return 0;
}

int volua_cpu_fill(int64_t n, int dt, void *y, double v) {
  if (dt == VOLUA_FLOAT32) {
    float *p = y, f = (float)v;
#pragma omp parallel for if (n > 65536)
    for (int64_t i = 0; i < n; i++) p[i] = f;
  } else {
    int64_t *p = y, k = (int64_t)v;
#pragma omp parallel for if (n > 65536)
    for (int64_t i = 0; i < n; i++) p[i] = k;
  }
  return 0;
}

static inline double load(int dt, const void *p, int64_t i) {
  return dt == VOLUA_FLOAT32 ? (double)((const float *)p)[i] : (double)((const int64_t *)p)[i];
}

double volua_cpu_reduce(int64_t n, int dt, const void *a, volua_reduce_op op) {
  if (op == VOLUA_RED_SUM) {
    double s = 0.0;
#pragma omp parallel for reduction(+ : s) if (n > 65536)
    for (int64_t i = 0; i < n; i++) s += load(dt, a, i);
    return s;
  }
  /* max/min propagate NaN, like torch.max() */
  if (n == 0) return NAN;
  double r = load(dt, a, 0);
  for (int64_t i = 1; i < n; i++) {
    double v = load(dt, a, i);
    if (isnan(v)) return v;
    if (op == VOLUA_RED_MAX ? v > r : v < r) r = v;
  }
  return r;
}

double volua_cpu_max_abs_diff(int64_t n, int dt, const void *a, const void *b) {
  double m = 0.0;
  for (int64_t i = 0; i < n; i++) {
    double x = load(dt, a, i), y = load(dt, b, i);
    if (isnan(x) && isnan(y)) continue;
    if (isnan(x) || isnan(y)) return NAN;
    if (x == y) continue; /* also inf == inf */
    double d = fabs(x - y);
    if (d > m || isnan(d)) m = d;
  }
  return m;
}

int volua_cpu_allclose(int64_t n, int dt, const void *a, const void *b, double rtol, double atol,
                       int equal_nan) {
  for (int64_t i = 0; i < n; i++) {
    double x = load(dt, a, i), y = load(dt, b, i);
    if (isnan(x) || isnan(y)) {
      if (equal_nan && isnan(x) && isnan(y)) continue;
      return 0;
    }
    if (x == y) continue;          /* also inf == inf */
    if (isinf(x) || isinf(y)) return 0; /* an infinite difference is never close, as in torch */
    if (!(fabs(x - y) <= atol + rtol * fabs(y))) return 0;
  }
  return 1;
}

void volua_cpu_convert(int64_t n, int dst_dt, void *dst, int src_dt, const void *src) {
  if (dst_dt == src_dt) {
    for (int64_t i = 0; i < n * 4 * (dst_dt == VOLUA_INT64 ? 2 : 1); i++)
      ((char *)dst)[i] = ((const char *)src)[i];
    return;
  }
  if (dst_dt == VOLUA_FLOAT32) {
    const int64_t *s = src;
    float *d = dst;
    for (int64_t i = 0; i < n; i++) d[i] = (float)s[i];
  } else {
    const float *s = src;
    int64_t *d = dst;
    /* truncation toward zero, as torch's float -> int64 cast; out-of-range values saturate */
    for (int64_t i = 0; i < n; i++) {
      float v = s[i];
      d[i] = isnan(v) ? 0 : v >= 9.2233720368547758e18f ? INT64_MAX : v <= -9.2233720368547758e18f ? INT64_MIN : (int64_t)v;
    }
  }
}
