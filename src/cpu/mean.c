/* mean.c: the CPU reference of mean and sum over any set of dims: each output element sums its
 * reduced elements in double, walking the reduced dims like an odometer, and a mean divides the
 * sum by their count. */
#include <stdint.h>

#include "cpu.h"
#include "../tensor.h"

int volua_cpu_mean(const volua_mean_geom *g, const float *x, float *y, char *err) {
  /* row-major strides of the input, and its dims split into kept and reduced ones */
  int64_t stride[VOLUA_MEAN_MAX_DIMS];
  int kept[VOLUA_MEAN_MAX_DIMS], reduced[VOLUA_MEAN_MAX_DIMS];
  int nkept = 0, nreduced = 0;
  int64_t s = 1;
  for (int i = g->ndim - 1; i >= 0; i--) {
    stride[i] = s;
    s *= g->shape[i];
  }
  for (int i = 0; i < g->ndim; i++) {
    if (g->reduce[i]) reduced[nreduced++] = i;
    else kept[nkept++] = i;
  }
  /* a mean of nothing is 0 / 0 = NaN, as torch.mean; a sum of nothing 0, as torch.sum */
  const double count = g->sum ? 1.0 : (double)g->reduce_numel;

  if (g->out_numel == 1) {
    /* every dim reduced (or only size-1 dims kept): one sum over the contiguous input,
     * shared between the threads */
    double sum = 0.0;
#pragma omp parallel for reduction(+ : sum) schedule(static)
    for (int64_t i = 0; i < g->reduce_numel; i++) sum += x[i];
    y[0] = (float)(sum / count);
    return volua_cpu_check_interrupt("mean", err);
  }

  /* the innermost reduced dim is walked by a plain strided loop, the others by the odometer */
  const int inner = nreduced > 0 ? reduced[nreduced - 1] : -1;
  const int64_t inner_size = inner >= 0 ? g->shape[inner] : 1;
  const int64_t inner_stride = inner >= 0 ? stride[inner] : 0;
  const int64_t outer_count = inner_size > 0 ? g->reduce_numel / inner_size : 0;

#pragma omp parallel for schedule(static)
  for (int64_t o = 0; o < g->out_numel; o++) {
    if (volua_interrupted) continue;
    /* the input offset of this output's first element, from its kept coordinates */
    int64_t base = 0, rest = o;
    for (int k = nkept - 1; k >= 0; k--) {
      const int d = kept[k];
      base += rest % g->shape[d] * stride[d];
      rest /= g->shape[d];
    }

    int64_t coord[VOLUA_MEAN_MAX_DIMS] = {0}; /* coordinates of the outer reduced dims */
    int64_t offset = base;
    double sum = 0.0;
    for (int64_t j = 0; j < outer_count; j++) {
      for (int64_t i = 0; i < inner_size; i++) sum += x[offset + i * inner_stride];
      /* advance the odometer over reduced[0 .. nreduced-2] */
      for (int r = nreduced - 2; r >= 0; r--) {
        const int d = reduced[r];
        offset += stride[d];
        if (++coord[r] < g->shape[d]) break;
        offset -= coord[r] * stride[d];
        coord[r] = 0;
      }
    }
    y[o] = (float)(sum / count);
  }
  return volua_cpu_check_interrupt("mean", err);
}
