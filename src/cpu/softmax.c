/* softmax.c: the CPU reference of softmax and log_softmax over one dim, in double, with PyTorch's
 * formula written out: m = the slice's max (a NaN propagates), then exp(x - m) / sum exp(x - m),
 * or (x - m) - log(sum exp(x - m)). Its special values follow from it as they do in torch: a NaN
 * in a slice, a +inf (inf - inf) or a slice of -inf only (-inf - -inf) make the whole slice NaN. */
#include <math.h>
#include <stdint.h>

#include "cpu.h"
#include "../tensor.h"

int volua_cpu_softmax(const volua_softmax_geom *g, const float *x, float *y, char *err) {
  const int64_t size = g->size, inner = g->inner, slices = g->outer * g->inner;
  if (size == 0) return 0; /* nothing to write (and outer * inner may not even fit) */
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < slices; s++) {
    if (volua_interrupted) continue;
    const int64_t o = s / inner, i = s % inner;
    const float *xs = x + o * size * inner + i; /* the slice: xs[k * inner], k < size */
    float *ys = y + o * size * inner + i;

    double m = -INFINITY;
    for (int64_t k = 0; k < size; k++) {
      const double v = xs[k * inner];
      if (v != v || v > m) m = v; /* once m is NaN, no value replaces it */
    }
    double sum = 0.0;
    for (int64_t k = 0; k < size; k++) sum += exp(xs[k * inner] - m);
    const double log_sum = log(sum);
    for (int64_t k = 0; k < size; k++) {
      const double d = xs[k * inner] - m;
      ys[k * inner] = (float)(g->log ? d - log_sum : exp(d) / sum);
    }
  }
  return volua_cpu_check_interrupt(g->log ? "log_softmax" : "softmax", err);
}
