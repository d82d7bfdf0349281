/* layer_norm.c: the CPU reference of layer_norm on x viewed as (rows, cols): per row a two-pass
 * mean and biased variance in double, then y = (x - mean) / sqrt(var + eps) * weight[j] + bias[j]
 * with weight and bias elementwise over the row (the normalized_shape). */
#include <math.h>
#include <stdint.h>

#include "cpu.h"
#include "../tensor.h"

int volua_cpu_layer_norm(const volua_layer_norm_geom *g, const float *x, const float *w, const float *b,
                         float *y, char *err) {
  const int64_t cols = g->cols;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < g->rows; r++) {
    if (volua_interrupted) continue;
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    double sum = 0.0;
    for (int64_t j = 0; j < cols; j++) sum += xr[j];
    const double mean = sum / (double)cols;
    double squares = 0.0;
    for (int64_t j = 0; j < cols; j++) {
      const double d = xr[j] - mean;
      squares += d * d;
    }
    const double rstd = 1.0 / sqrt(squares / (double)cols + g->eps);
    for (int64_t j = 0; j < cols; j++)
      yr[j] = (float)((xr[j] - mean) * rstd * (w ? w[j] : 1.0) + (b ? b[j] : 0.0));
  }
  return volua_cpu_check_interrupt("layer_norm", err);
}
