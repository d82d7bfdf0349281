/* pointwise.c: vol.pointwise (a chain of elementwise steps in one pass) and the convolutions'
 * epilogue: the steps checked against the tensor they apply to (volua_pointwise_resolve), then run
 * on the CPU (src/cpu/pointwise.c: each step as its op) or the GPU (kernels/pointwise.cu, or fused
 * into a convolution's stores). Each step gives exactly what its op alone gives on that device. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../ops.h"
#include "../cuda.h"
#include "../cpu/cpu.h"
#ifdef VOLUA_CUDA
#include "../../kernels/kernels.h"
#include "../../kernels/fast.h"
#endif

static const char *const unary_name[VOLUA_UN_COUNT] = {
  "neg", "abs", "relu", "tanh", "sigmoid", "exp", "log", "sqrt", "gelu", "gelu", "silu", "mish",
  "softplus", "elu", "leaky_relu", "hardtanh", "hardswish", "hardsigmoid", "clamp"};
static const char *const binary_name[] = {"add", "sub", "mul", "div", "maximum", "minimum"};

/* A per-channel operand o for t: o broadcasts to t (right-aligned, o no longer than t) along one
 * dim k at most, where it has t's size; then element i of t meets o's value (i / S) % C, with C
 * t's size along k and S the product of t's sizes after k. A one-value o: vstep 0. */
static int channel_operand(volua_pw_step *st, const char *fn, int k, const volua_tensor *t,
                           const volua_tensor *o, char *err) {
  char s1[160], s2[160];
  const char *name = binary_name[st->op];
  char pname[64];
  snprintf(pname, sizeof pname, "step %d (%s) operand", k + 1, name);
  if (volua_check_f32(fn, pname, o, t->device, err)) return 1;
  volua_shape_str(o->ndim, o->shape, s1, sizeof s1);
  volua_shape_str(t->ndim, t->shape, s2, sizeof s2);
  if (o->ndim > t->ndim) {
    snprintf(err, VOLUA_ERR_MAX, "%s: %s of shape %s has more dims than the tensor %s (it would grow the result)",
             fn, pname, s1, s2);
    return 1;
  }
  int dim = -1; /* t's dim along which o varies */
  for (int j = 0; j < o->ndim; j++) {
    const int d = t->ndim - o->ndim + j;
    if (o->shape[j] == 1) continue;
    if (o->shape[j] != t->shape[d]) {
      snprintf(err, VOLUA_ERR_MAX, "%s: %s of shape %s does not broadcast to %s (size %lld against %lld in dim %d)",
               fn, pname, s1, s2, (long long)o->shape[j], (long long)t->shape[d], d + 1);
      return 1;
    }
    if (dim >= 0) {
      snprintf(err, VOLUA_ERR_MAX,
               "%s: %s of shape %s varies along more than one dim of %s; a step takes a number or one "
               "value per channel, e.g. (C, 1, 1, 1) (use a %s b for other operands)",
               fn, pname, s1, s2, st->op == VOLUA_BIN_ADD ? "+" : st->op == VOLUA_BIN_SUB ? "-" :
               st->op == VOLUA_BIN_MUL ? "*" : st->op == VOLUA_BIN_DIV ? "/" : "vol.maximum/minimum of");
      return 1;
    }
    dim = d;
  }
  st->vec = volua_tensor_f32(o);
  if (dim < 0) { /* one value (or an empty t: nothing reads it) */
    st->C = st->S = 1;
    st->vstep = 0;
    return 0;
  }
  st->C = t->shape[dim];
  st->S = 1;
  for (int d = dim + 1; d < t->ndim; d++) st->S *= t->shape[d];
  st->vstep = 1;
  return 0;
}

int volua_pointwise_resolve(volua_pw_chain *c, const char *fn, const volua_tensor *t,
                            const volua_pw_spec *spec, char *err) {
  memset(c, 0, sizeof *c);
  if (spec->n < 0 || spec->n > VOLUA_PW_MAX) {
    snprintf(err, VOLUA_ERR_MAX, "%s: a chain has at most %d steps, got %d", fn, VOLUA_PW_MAX, spec->n);
    return 1;
  }
  for (int k = 0; k < spec->n; k++) {
    volua_pw_step *st = &c->step[k];
    st->kind = spec->step[k].kind;
    st->op = spec->step[k].op;
    st->scalar_first = spec->step[k].scalar_first;
    if (st->kind == VOLUA_PW_UNARY) {
      volua_unary_args a = spec->step[k].args;
      if (st->op < 0 || st->op >= VOLUA_UN_COUNT) {
        snprintf(err, VOLUA_ERR_MAX, "%s: step %d has an unknown op", fn, k + 1);
        return 1;
      }
      if (st->op == VOLUA_UN_HARDTANH) { /* clamp(min_val, max_val), as volua_unary_with_args */
        st->op = VOLUA_UN_CLAMP;
        a.has_p0 = a.has_p1 = 1;
      }
      const int bounds = st->op == VOLUA_UN_CLAMP ? volua_clamp_bounds(&a) : VOLUA_CLAMP_RANGE;
      if (bounds == VOLUA_CLAMP_NO_BOUND) {
        snprintf(err, VOLUA_ERR_MAX, "%s: step %d (%s): at least one of min and max must be given", fn, k + 1,
                 unary_name[spec->step[k].op]);
        return 1;
      }
      if (bounds == VOLUA_CLAMP_FILL_NAN) { /* torch fills NaN */
        st->kind = VOLUA_PW_FILL;
        st->p0 = NAN;
        st->f0 = NAN;
        continue;
      }
      st->p0 = a.p0;
      st->p1 = a.p1;
    } else if (st->kind == VOLUA_PW_SCALAR) {
      double s = spec->step[k].s;
      if (st->op == VOLUA_BIN_DIV && !st->scalar_first && volua_exact_reciprocal(s)) {
        st->op = VOLUA_BIN_MUL; /* the same float to the bit (volua_binary_scalar) */
        s = 1.0 / s;
      }
      st->p0 = s;
    } else if (st->kind == VOLUA_PW_CHANNEL) {
      if (channel_operand(st, fn, k, t, spec->step[k].t, err)) return 1;
    } else {
      snprintf(err, VOLUA_ERR_MAX, "%s: step %d has an unknown kind", fn, k + 1);
      return 1;
    }
    st->f0 = (float)st->p0;
    st->f1 = (float)st->p1;
  }
  c->n = spec->n;
  return 0;
}

/* Steps [first, c->n) of c on the n values x into y (y may be x), on t's device. */
static int run(const volua_pw_chain *c, int first, volua_device dev, int64_t n, const float *x, float *y,
               const char *fn, char *err) {
  if (n == 0) return 0;
  if (dev == VOLUA_DEVICE_CPU) return volua_cpu_pointwise(c, first, n, x, y, err);
#ifdef VOLUA_CUDA
  return volua_cuda_pointwise(c, first, c->n, n, x, y, NULL, 0, (cudaStream_t)volua_cuda_stream(), err);
#else
  (void)first;
  snprintf(err, VOLUA_ERR_MAX, "%s: volua was built without CUDA", fn);
  return 1;
#endif
}

int volua_pointwise(volua_tensor *out, const volua_tensor *x, const volua_pw_spec *spec, char *err) {
  const char *fn = "pointwise";
  volua_pw_chain c;
  if (volua_check_input_f32(fn, x, err)) return 1;
  if (volua_pointwise_resolve(&c, fn, x, spec, err)) return 1;
  if (volua_tensor_alloc(out, x->ndim, x->shape, VOLUA_FLOAT32, x->device, err)) return 1;
  if (run(&c, 0, x->device, volua_tensor_numel(x), volua_tensor_f32(x), volua_tensor_f32(out), fn, err)) {
    volua_tensor_free(out);
    return 1;
  }
  return 0;
}

int volua_pointwise_apply(volua_tensor *t, const volua_pw_chain *c, int first, const char *fn, char *err) {
  if (first >= c->n) return 0;
  return run(c, first, t->device, volua_tensor_numel(t), volua_tensor_f32(t), volua_tensor_f32(t), fn, err);
}
