/* elementwise.c: tensor arithmetic (with broadcasting), fills, reductions, comparisons and random
 * numbers: argument checks and dispatch to src/cpu/elementwise.c or kernels/elementwise.cu.
 * The ops here, by name:
 *   binary (volua_binary, volua_binary_scalar): add, sub, mul, div, maximum, minimum
 *   unary (volua_unary, volua_unary_with_args): neg, abs, relu, and the activations tanh, sigmoid,
 *     exp, log, sqrt, gelu (approximate "none" | "tanh"), silu, mish, softplus, elu, leaky_relu,
 *     hardtanh, hardswish, hardsigmoid, clamp
 *   fill, reduce_all (sum, max, min), max_abs_diff, allclose, random (rand, randn) */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../ops.h"
#include "../cuda.h"
#include "../cpu/cpu.h"
#ifdef VOLUA_CUDA
#include "../../kernels/kernels.h"
#define STREAM ((cudaStream_t)volua_cuda_stream())
#endif

static const char *binop_name[] = {"add", "sub", "mul", "div", "maximum", "minimum"};

static volua_math_mode math_mode = VOLUA_MATH_FP32;
void volua_set_math(volua_math_mode m) { math_mode = m; }
volua_math_mode volua_get_math(void) { return math_mode; }

#ifndef VOLUA_CUDA
static int no_cuda(const char *fn, char *err) {
  snprintf(err, VOLUA_ERR_MAX, "%s: volua was built without CUDA", fn);
  return 1;
}
#endif

static int same_device(const char *fn, const volua_tensor *a, const volua_tensor *b, char *err) {
  if (a->device == b->device) return 0;
  snprintf(err, VOLUA_ERR_MAX, "%s: tensors are on different devices (%s and %s)", fn,
           volua_device_name(a->device), volua_device_name(b->device));
  return 1;
}

/* A float32 copy of an int64 tensor (on its device), for mixed-dtype arithmetic. */
static int as_float(volua_tensor *dst, const volua_tensor *src, char *err) {
  if (volua_tensor_alloc(dst, src->ndim, src->shape, VOLUA_FLOAT32, src->device, err)) return 1;
  if (volua_tensor_copy(dst, src, err)) { volua_tensor_free(dst); return 1; }
  return 0;
}

static int broadcast(const char *fn, const volua_tensor *a, const volua_tensor *b, volua_bcast_geom *g,
                     char *err) {
  int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
  int64_t sa = 1, sb = 1;
  char s1[128], s2[128];
  memset(g, 0, sizeof *g);
  g->ndim = nd;
  for (int i = nd - 1; i >= 0; i--) {
    int ia = i - (nd - a->ndim), ib = i - (nd - b->ndim);
    int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      snprintf(err, VOLUA_ERR_MAX, "%s: shapes %s and %s do not broadcast (dim %d: %lld vs %lld)", fn,
               volua_shape_str(a->ndim, a->shape, s1, sizeof s1),
               volua_shape_str(b->ndim, b->shape, s2, sizeof s2), i + 1, (long long)da, (long long)db);
      return 1;
    }
    g->shape[i] = da == 1 ? db : da;
  }
  /* the result's sizes must multiply within int64, a 0 among them or not (as torch's storage
   * size check): (2^62, 1, 0) and (1, 2^62, 0) do not */
  int64_t count = 1;
  int empty = 0;
  for (int i = 0; i < nd; i++) {
    if (g->shape[i] == 0) empty = 1;
    else if (__builtin_mul_overflow(count, g->shape[i], &count)) {
      snprintf(err, VOLUA_ERR_MAX, "%s: shapes %s and %s broadcast to more elements than int64 can count",
               fn, volua_shape_str(a->ndim, a->shape, s1, sizeof s1),
               volua_shape_str(b->ndim, b->shape, s2, sizeof s2));
      return 1;
    }
  }
  g->numel = empty ? 0 : count;
  if (empty) return 0; /* nothing is read: the strides stay 0 */
  for (int i = nd - 1; i >= 0; i--) { /* each operand has at most count elements: no overflow */
    int ia = i - (nd - a->ndim), ib = i - (nd - b->ndim);
    int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
    g->stride_a[i] = da == 1 ? 0 : sa;
    g->stride_b[i] = db == 1 ? 0 : sb;
    sa *= da;
    sb *= db;
  }
  return 0;
}

int volua_binary(volua_tensor *out, const volua_tensor *a, const volua_tensor *b, volua_binop op,
                 char *err) {
  const char *fn = binop_name[op];
  if (same_device(fn, a, b, err)) return 1;
  /* int64 with float32, or int64 true division: compute in float32 as torch promotes */
  if (a->dtype != b->dtype || (op == VOLUA_BIN_DIV && a->dtype == VOLUA_INT64)) {
    volua_tensor fa = {0}, fb = {0};
    int rc = 1;
    if (a->dtype == VOLUA_INT64 ? as_float(&fa, a, err) : (volua_tensor_share(&fa, a), 0)) return 1;
    if (b->dtype == VOLUA_INT64 ? as_float(&fb, b, err) : (volua_tensor_share(&fb, b), 0)) goto done;
    rc = volua_binary(out, &fa, &fb, op, err);
  done:
    volua_tensor_free(&fa);
    volua_tensor_free(&fb);
    return rc;
  }
  volua_bcast_geom g;
  if (broadcast(fn, a, b, &g, err)) return 1;
  /* broadcasting (n, 1) with (1, m) may ask for far more than either operand holds */
  if (volua_tensor_alloc_result(out, fn, "result", g.ndim, g.shape, a->dtype, a->device, err)) return 1;
  if (g.numel == 0) return 0;
  if (a->device == VOLUA_DEVICE_CPU)
    return volua_cpu_binary(&g, a->dtype, volua_tensor_data(a), volua_tensor_data(b),
                            volua_tensor_data(out), op);
#ifdef VOLUA_CUDA
  return volua_cuda_binary(&g, a->dtype, volua_tensor_data(a), volua_tensor_data(b),
                           volua_tensor_data(out), op, STREAM, err);
#else
  return no_cuda(fn, err);
#endif
}

/* Whether s is a float power of two whose reciprocal is a float too (s = +-2^k, -127 <= k <= 127). */
int volua_exact_reciprocal(double s) {
  int e;
  if (!isfinite(s) || s == 0.0 || (double)(float)s != s) return 0;
  return fabs(frexp(s, &e)) == 0.5 && fabs(s) >= 0x1p-127 && fabs(s) <= 0x1p127;
}

int volua_binary_scalar(volua_tensor *out, const volua_tensor *a, double s, volua_binop op,
                        int scalar_first, char *err) {
  /* (a whole scalar past int64's range, 1e30 say, computes in float32 too: the int64 cast would be
   * undefined, and vol.maximum(ints, 1e30) must give 1e30) */
  if (a->dtype == VOLUA_INT64 && (op == VOLUA_BIN_DIV || s != floor(s) || !(fabs(s) < 0x1p63))) {
    volua_tensor fa = {0};
    if (as_float(&fa, a, err)) return 1;
    int rc = volua_binary_scalar(out, &fa, s, op, scalar_first, err);
    volua_tensor_free(&fa);
    return rc;
  }
  /* x / 2^k is x * 2^-k to the bit (the exact quotient is the exact product, rounded once either
   * way; 2^-k a float: |s| >= 2^-127): the multiply is the cheaper map on the GPU (run s37r4, 868 M
   * values: x / 2 took 2.28 ms, a map at the copy rate 1.67) */
  if (op == VOLUA_BIN_DIV && !scalar_first && a->dtype == VOLUA_FLOAT32 && volua_exact_reciprocal(s)) {
    op = VOLUA_BIN_MUL;
    s = 1.0 / s;
  }
  if (volua_tensor_alloc(out, a->ndim, a->shape, a->dtype, a->device, err)) return 1;
  int64_t n = volua_tensor_numel(a);
  if (n == 0) return 0;
  if (a->device == VOLUA_DEVICE_CPU)
    return volua_cpu_binary_scalar(n, a->dtype, volua_tensor_data(a), s, volua_tensor_data(out), op,
                                   scalar_first);
#ifdef VOLUA_CUDA
  return volua_cuda_binary_scalar(n, a->dtype, volua_tensor_data(a), s, volua_tensor_data(out), op,
                                  scalar_first, STREAM, err);
#else
  return no_cuda(binop_name[op], err);
#endif
}

int volua_unary(volua_tensor *out, const volua_tensor *a, volua_unop op, char *err) {
  return volua_unary_with_args(out, a, op, NULL, err);
}

/* -- the unary family with parameters: activations and clamp ---- */

static const char *unop_name[VOLUA_UN_COUNT] = {
  "neg", "abs", "relu", "tanh", "sigmoid", "exp", "log", "sqrt", "gelu", "gelu", "silu", "mish",
  "softplus", "elu", "leaky_relu", "hardtanh", "hardswish", "hardsigmoid", "clamp"};

/* A bound that an int64 tensor can be clamped to: whole and within int64's range. */
static int whole_int64(double v) { return v == floor(v) && v >= -0x1p63 && v < 0x1p63; }

/* hardtanh is clamp(min_val, max_val), as torch's hardtanh_out calls clamp; on an int64 input torch
 * first truncates both bounds to integers (Scalar::toLong), and keeps the result int64. */
static int hardtanh_as_clamp(const char *fn, const volua_tensor *a, volua_unary_args *p, char *err) {
  if (a->dtype == VOLUA_INT64) {
    const double v[2] = {p->p0, p->p1};
    const char *names[2] = {"min_val", "max_val"};
    for (int i = 0; i < 2; i++)
      if (!(fabs(v[i]) < 0x1p63)) {
        snprintf(err, VOLUA_ERR_MAX, "%s: %s %g cannot be converted to int64 (the input is int64)", fn,
                 names[i], v[i]);
        return 1;
      }
    p->p0 = trunc(p->p0);
    p->p1 = trunc(p->p1);
  }
  p->has_p0 = p->has_p1 = 1;
  return 0;
}

int volua_clamp_bounds(volua_unary_args *p) {
  if (!p->has_p0 && !p->has_p1) return VOLUA_CLAMP_NO_BOUND;
  if (p->has_p0 && p->has_p1 && (isnan(p->p0) || isnan(p->p1))) return VOLUA_CLAMP_FILL_NAN;
  if (!p->has_p0 || isnan(p->p0)) p->p0 = -INFINITY;
  if (!p->has_p1 || isnan(p->p1)) p->p1 = INFINITY;
  return VOLUA_CLAMP_RANGE;
}

/* dtype rules, as torch's:
 *   int64 stays int64: neg, abs, relu; clamp and hardtanh (clamp with a fractional, infinite or NaN
 *     bound computes in float32, as torch promotes to the bound's float type);
 *   int64 is promoted to float32: tanh, sigmoid, exp, log, sqrt (torch's unary float ops);
 *   int64 is refused: gelu, silu, mish, softplus, elu, leaky_relu, hardswish, hardsigmoid (torch:
 *     "... not implemented for 'Long'").
 * clamp: min_val > max_val gives max_val everywhere, NaN inputs stay NaN; NaN bounds as
 * volua_clamp_bounds settles them. */
int volua_unary_with_args(volua_tensor *out, const volua_tensor *a, volua_unop op,
                          const volua_unary_args *args, char *err) {
  const char *fn = (unsigned)op < VOLUA_UN_COUNT ? unop_name[op] : "unary";
  volua_unary_args p = {0, 0, 0, 0};
  if (args) p = *args;
  if (op == VOLUA_UN_HARDTANH) {
    if (hardtanh_as_clamp(fn, a, &p, err)) return 1;
    op = VOLUA_UN_CLAMP;
  }
  int promote = 0;
  if (op == VOLUA_UN_CLAMP) {
    if (!p.has_p0 && !p.has_p1) {
      snprintf(err, VOLUA_ERR_MAX, "%s: at least one of min and max must be given (both are nil)", fn);
      return 1;
    }
    if (a->dtype == VOLUA_INT64)
      promote = (p.has_p0 && !whole_int64(p.p0)) || (p.has_p1 && !whole_int64(p.p1));
    if (!promote && volua_clamp_bounds(&p) == VOLUA_CLAMP_FILL_NAN) {
      if (volua_tensor_alloc(out, a->ndim, a->shape, VOLUA_FLOAT32, a->device, err)) return 1;
      return volua_fill(out, NAN, err);
    }
  } else if (a->dtype == VOLUA_INT64 && op >= VOLUA_UN_TANH) {
    if (op > VOLUA_UN_SQRT) {
      snprintf(err, VOLUA_ERR_MAX, "%s: input dtype int64 is not supported (float32 only, as torch's %s)",
               fn, fn);
      return 1;
    }
    promote = 1;
  }
  if (promote) {
    volua_tensor fa = {0};
    if (as_float(&fa, a, err)) return 1;
    int rc = volua_unary_with_args(out, &fa, op, &p, err);
    volua_tensor_free(&fa);
    return rc;
  }
  if (volua_tensor_alloc(out, a->ndim, a->shape, a->dtype, a->device, err)) return 1;
  int64_t n = volua_tensor_numel(a);
  if (n == 0) return 0;
  if (a->device == VOLUA_DEVICE_CPU)
    return volua_cpu_unary(n, a->dtype, volua_tensor_data(a), volua_tensor_data(out), op, &p);
#ifdef VOLUA_CUDA
  return volua_cuda_unary(n, a->dtype, volua_tensor_data(a), volua_tensor_data(out), op, &p, STREAM, err);
#else
  return no_cuda(fn, err);
#endif
}

int volua_fill(volua_tensor *t, double v, char *err) {
  int64_t n = volua_tensor_numel(t);
  if (t->dtype == VOLUA_INT64 && (v != floor(v) || !(fabs(v) < 9.2e18))) {
    snprintf(err, VOLUA_ERR_MAX, "fill: value %.17g does not fit an int64 tensor", v);
    return 1;
  }
  if (n == 0) return 0;
  volua_storage_written(t->storage);
  if (t->device == VOLUA_DEVICE_CPU) return volua_cpu_fill(n, t->dtype, volua_tensor_data(t), v);
#ifdef VOLUA_CUDA
  return volua_cuda_fill(n, t->dtype, volua_tensor_data(t), v, STREAM, err);
#else
  return no_cuda("fill", err);
#endif
}

int volua_reduce_all(const volua_tensor *t, volua_reduce_op op, double *result, char *err) {
  static const char *names[] = {"sum", "max", "min"};
  int64_t n = volua_tensor_numel(t);
  if (n == 0 && op != VOLUA_RED_SUM) {
    snprintf(err, VOLUA_ERR_MAX, "%s: the tensor is empty (numel 0), so it has no %s", names[op],
             names[op]);
    return 1;
  }
  if (t->device == VOLUA_DEVICE_CPU) {
    *result = volua_cpu_reduce(n, t->dtype, volua_tensor_data(t), op);
    return 0;
  }
#ifdef VOLUA_CUDA
  if (n == 0) { *result = 0; return 0; }
  return volua_cuda_reduce(n, t->dtype, volua_tensor_data(t), op, result, STREAM, err);
#else
  return no_cuda(names[op], err);
#endif
}

/* Both comparisons need equal shapes and dtypes on one device. */
static int compare_args(const char *fn, const volua_tensor *a, const volua_tensor *b, char *err) {
  if (same_device(fn, a, b, err)) return 1;
  if (a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) != 0) {
    char s1[128], s2[128];
    snprintf(err, VOLUA_ERR_MAX, "%s: shapes differ: %s and %s", fn,
             volua_shape_str(a->ndim, a->shape, s1, sizeof s1),
             volua_shape_str(b->ndim, b->shape, s2, sizeof s2));
    return 1;
  }
  if (a->dtype != b->dtype) {
    snprintf(err, VOLUA_ERR_MAX, "%s: dtypes differ: %s and %s", fn, volua_dtype_name(a->dtype),
             volua_dtype_name(b->dtype));
    return 1;
  }
  return 0;
}

int volua_max_abs_diff(const volua_tensor *a, const volua_tensor *b, double *result, char *err) {
  if (compare_args("max_abs_diff", a, b, err)) return 1;
  int64_t n = volua_tensor_numel(a);
  if (a->device == VOLUA_DEVICE_CPU || n == 0) {
    *result = n ? volua_cpu_max_abs_diff(n, a->dtype, volua_tensor_data(a), volua_tensor_data(b)) : 0.0;
    return 0;
  }
#ifdef VOLUA_CUDA
  return volua_cuda_max_abs_diff(n, a->dtype, volua_tensor_data(a), volua_tensor_data(b), result,
                                 STREAM, err);
#else
  return no_cuda("max_abs_diff", err);
#endif
}

int volua_allclose(const volua_tensor *a, const volua_tensor *b, double rtol, double atol,
                   int equal_nan, int *result, char *err) {
  if (compare_args("allclose", a, b, err)) return 1;
  if (!(rtol >= 0) || !(atol >= 0)) {
    snprintf(err, VOLUA_ERR_MAX, "allclose: rtol (%g) and atol (%g) must be non-negative", rtol, atol);
    return 1;
  }
  int64_t n = volua_tensor_numel(a);
  if (a->device == VOLUA_DEVICE_CPU || n == 0) {
    *result = n ? volua_cpu_allclose(n, a->dtype, volua_tensor_data(a), volua_tensor_data(b), rtol,
                                     atol, equal_nan)
                : 1;
    return 0;
  }
#ifdef VOLUA_CUDA
  return volua_cuda_allclose(n, a->dtype, volua_tensor_data(a), volua_tensor_data(b), rtol, atol,
                             equal_nan, result, STREAM, err);
#else
  return no_cuda("allclose", err);
#endif
}

/* -- random numbers: xoshiro256** seeded by splitmix64, generated on the CPU so that a seed
 * gives the same values on every device ---- */

typedef struct { uint64_t s[4]; } rng_state;

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
static void rng_seed(rng_state *r, uint64_t seed) {
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}
static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static uint64_t rng_next(rng_state *r) {
  uint64_t *s = r->s, res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotl(s[3], 45);
  return res;
}
/* 24 random bits: every float32 in [0, 1) on a 2^-24 grid, never 1. */
static float rng_uniform(rng_state *r) { return (float)(rng_next(r) >> 40) * (1.0f / 16777216.0f); }

static rng_state global_rng;
static int global_seeded = 0;
void volua_manual_seed(uint64_t seed) { rng_seed(&global_rng, seed); global_seeded = 1; }

int volua_random(volua_tensor *t, int normal, const uint64_t *seed, char *err) {
  rng_state local, *r = &local;
  if (seed) rng_seed(&local, *seed);
  else {
    if (!global_seeded) volua_manual_seed(67280421310721ULL); /* torch's default seed */
    r = &global_rng;
  }
  if (t->dtype != VOLUA_FLOAT32) {
    snprintf(err, VOLUA_ERR_MAX, "%s: dtype %s is not supported (float32 only)",
             normal ? "randn" : "rand", volua_dtype_name(t->dtype));
    return 1;
  }
  int64_t n = volua_tensor_numel(t);
  volua_storage_written(t->storage);
  volua_tensor host = {0};
  const volua_tensor *dst = t;
  if (t->device != VOLUA_DEVICE_CPU) {
    if (volua_tensor_alloc(&host, t->ndim, t->shape, t->dtype, VOLUA_DEVICE_CPU, err)) return 1;
    dst = &host;
  }
  float *p = volua_tensor_f32(dst);
  if (!normal) {
    for (int64_t i = 0; i < n; i++) p[i] = rng_uniform(r);
  } else {
    for (int64_t i = 0; i < n; i += 2) { /* Box-Muller, two values per draw */
      double u1 = ((double)(rng_next(r) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
      double u2 = (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
      double rad = sqrt(-2.0 * log(u1));
      p[i] = (float)(rad * cos(2.0 * M_PI * u2));
      if (i + 1 < n) p[i + 1] = (float)(rad * sin(2.0 * M_PI * u2));
    }
  }
  int rc = 0;
  if (dst != t) {
    rc = volua_tensor_copy(t, &host, err);
    volua_tensor_free(&host);
  }
  return rc;
}
