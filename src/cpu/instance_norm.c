/* instance_norm.c: the CPU reference of instance_norm's running-statistics update (its output is
 * group_norm's with one group per channel, src/cpu/group_norm.c). torch's instance_norm runs
 * batch_norm on x viewed as (1, N*C, S) with the running statistics repeated N times, then copies
 * back their mean over the batch: running = momentum * mean_n(mean of instance (n, c)) +
 * (1 - momentum) * running, and the same with each instance's unbiased variance (over S - 1).
 * Each instance's statistics two-pass in double. */
#include <math.h>
#include <stdint.h>

#include "cpu.h"
#include "../tensor.h"

int volua_cpu_instance_norm_update(const volua_batch_norm_geom *g, const float *x, float *running_mean,
                                   float *running_var, char *err) {
  const int64_t N = g->N, C = g->C, S = g->S;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < C; c++) {
    if (volua_interrupted) continue;
    double mean_sum = 0.0, var_sum = 0.0; /* over the batch */
    for (int64_t n = 0; n < N; n++) {
      const float *xr = x + (n * C + c) * S;
      double sum = 0.0;
      for (int64_t s = 0; s < S; s++) sum += xr[s];
      const double mean = sum / (double)S;
      double squares = 0.0;
      for (int64_t s = 0; s < S; s++) {
        const double d = xr[s] - mean;
        squares += d * d;
      }
      mean_sum += mean;
      var_sum += squares / (double)(S - 1);
    }
    if (running_mean)
      running_mean[c] = (float)(g->momentum * (mean_sum / (double)N) + (1.0 - g->momentum) * running_mean[c]);
    if (running_var)
      running_var[c] = (float)(g->momentum * (var_sum / (double)N) + (1.0 - g->momentum) * running_var[c]);
  }
  return volua_cpu_check_interrupt("instance_norm", err);
}
