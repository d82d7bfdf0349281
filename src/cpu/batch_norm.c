/* batch_norm.c: the CPU reference of batch_norm on x viewed as (N, C, S). Training: per channel a
 * two-pass mean and biased variance over its N runs of S values, in double; y = (x - mean) /
 * sqrt(var + eps) * weight + bias; then, where given, running = momentum * batch + (1 - momentum) *
 * running (the variance unbiased: over N*S - 1), as torch's batch_norm_cpu_update_stats. Eval: the
 * running statistics take the batch's place. */
#include <math.h>
#include <stdint.h>

#include "cpu.h"
#include "../tensor.h"

int volua_cpu_batch_norm(const volua_batch_norm_geom *g, const float *x, const float *w, const float *b,
                         float *running_mean, float *running_var, float *y, char *err) {
  const int64_t N = g->N, C = g->C, S = g->S;
  const double count = (double)N * (double)S;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < C; c++) {
    if (volua_interrupted) continue;
    double mean, var;
    if (g->training) {
      double sum = 0.0;
      for (int64_t n = 0; n < N; n++) {
        const float *xr = x + (n * C + c) * S;
        for (int64_t s = 0; s < S; s++) sum += xr[s];
      }
      mean = sum / count;
      double squares = 0.0;
      for (int64_t n = 0; n < N; n++) {
        const float *xr = x + (n * C + c) * S;
        for (int64_t s = 0; s < S; s++) {
          const double d = xr[s] - mean;
          squares += d * d;
        }
      }
      var = squares / count;
      if (running_mean) running_mean[c] = (float)(g->momentum * mean + (1.0 - g->momentum) * running_mean[c]);
      if (running_var)
        running_var[c] = (float)(g->momentum * (squares / (count - 1.0)) + (1.0 - g->momentum) * running_var[c]);
    } else {
      mean = running_mean[c];
      var = running_var[c];
    }
    const double rstd = 1.0 / sqrt(var + g->eps);
    const double scale = w ? w[c] : 1.0, shift = b ? b[c] : 0.0;
    for (int64_t n = 0; n < N; n++) {
      const float *xr = x + (n * C + c) * S;
      float *yr = y + (n * C + c) * S;
      for (int64_t s = 0; s < S; s++) yr[s] = (float)((xr[s] - mean) * rstd * scale + shift);
    }
  }
  return volua_cpu_check_interrupt("batch_norm", err);
}
