/* reductions.c: the CPU reference of logsumexp, amax / amin and max / min (with indices) over any
 * set of dims, in double where it adds: each output walks its reduced elements in row-major order
 * (the reduced dims like an odometer, as src/cpu/mean.c), with PyTorch's formulas written out. */
#include <math.h>
#include <stdint.h>

#include "cpu.h"
#include "../tensor.h"

/* The input offsets of one output's reduced elements, in row-major order over the reduced dims. */
typedef struct reduced_walk {
  int n;                              /* reduced dims */
  int64_t size[VOLUA_MEAN_MAX_DIMS], stride[VOLUA_MEAN_MAX_DIMS];
  int64_t coord[VOLUA_MEAN_MAX_DIMS]; /* where the walk is */
  int64_t offset;                     /* the input offset of the element at coord */
} reduced_walk;

static void walk_next(reduced_walk *w) {
  for (int r = w->n - 1; r >= 0; r--) {
    w->offset += w->stride[r];
    if (++w->coord[r] < w->size[r]) return;
    w->offset -= w->coord[r] * w->stride[r];
    w->coord[r] = 0;
  }
}

/* torch.logsumexp: with M the max (a NaN propagates) and M' = 0 where M is +-inf, else M,
 * log(sum exp(x - M')) + M'. So a NaN gives NaN, a +inf +inf, only -inf (or nothing) -inf. */
static double logsumexp_of(const float *x, reduced_walk w, int64_t count) {
  double m = -INFINITY;
  reduced_walk first = w;
  for (int64_t j = 0; j < count; j++, walk_next(&w)) {
    const double v = x[w.offset];
    if (v != v || v > m) m = v;
  }
  if (isinf(m)) m = 0.0;
  double sum = 0.0;
  w = first;
  for (int64_t j = 0; j < count; j++, walk_next(&w)) sum += exp(x[w.offset] - m);
  return log(sum) + m;
}

/* torch.max(x, dim)'s loop (aten's max_kernel_impl): the first element, replaced by any later one
 * that is not <= it (greater, or NaN), stopping at a NaN: the first occurrence of the max, or of
 * the first NaN. min: not >= it. count > 0. One function per dtype: int64 values compare exactly
 * (through a double they would round past 2^53). */
#define EXTREME_OF(name, T)                                                                      \
  static T name(const T *x, reduced_walk w, int64_t count, int is_max, int64_t *index) {        \
    T best = x[w.offset];                                                                        \
    int64_t at = 0;                                                                              \
    for (int64_t j = 0; j < count; j++, walk_next(&w)) {                                         \
      const T v = x[w.offset];                                                                   \
      if (is_max ? !(v <= best) : !(v >= best)) {                                                \
        best = v;                                                                                \
        at = j;                                                                                  \
        if (v != v) break;                                                                       \
      }                                                                                          \
    }                                                                                            \
    *index = at;                                                                                 \
    return best;                                                                                 \
  }
EXTREME_OF(extreme_of_f32, float)
EXTREME_OF(extreme_of_i64, int64_t)

int volua_cpu_reduce_dims(const volua_mean_geom *g, volua_dim_reduce_op op, int dt, const void *x,
                          void *y, int64_t *indices, char *err) {
  const char *name = op == VOLUA_DIMRED_LOGSUMEXP ? "logsumexp" : op == VOLUA_DIMRED_MAX ? "max" : "min";
  /* row-major strides of the input, and its dims split into kept and reduced ones */
  int64_t stride[VOLUA_MEAN_MAX_DIMS];
  int kept[VOLUA_MEAN_MAX_DIMS], nkept = 0;
  reduced_walk start = {0};
  int64_t s = 1;
  for (int i = g->ndim - 1; i >= 0; i--) {
    stride[i] = s;
    s *= g->shape[i];
  }
  for (int i = 0; i < g->ndim; i++) {
    if (g->reduce[i]) {
      start.size[start.n] = g->shape[i];
      start.stride[start.n++] = stride[i];
    } else {
      kept[nkept++] = i;
    }
  }

#pragma omp parallel for schedule(static)
  for (int64_t o = 0; o < g->out_numel; o++) {
    if (volua_interrupted) continue;
    /* the input offset of this output's first element, from its kept coordinates */
    reduced_walk w = start;
    int64_t rest = o;
    for (int k = nkept - 1; k >= 0; k--) {
      const int d = kept[k];
      w.offset += rest % g->shape[d] * stride[d];
      rest /= g->shape[d];
    }
    int64_t at = 0;
    if (op == VOLUA_DIMRED_LOGSUMEXP) /* (float32 only: ops promotes an int64 input first) */
      ((float *)y)[o] = (float)logsumexp_of(x, w, g->reduce_numel);
    else if (dt == VOLUA_INT64)
      ((int64_t *)y)[o] = extreme_of_i64(x, w, g->reduce_numel, op == VOLUA_DIMRED_MAX, &at);
    else
      ((float *)y)[o] = extreme_of_f32(x, w, g->reduce_numel, op == VOLUA_DIMRED_MAX, &at);
    if (indices) indices[o] = at;
  }
  return volua_cpu_check_interrupt(name, err);
}
