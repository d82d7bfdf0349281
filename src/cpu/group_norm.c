/* group_norm.c: the CPU reference of group_norm: per (sample, group) a two-pass mean and
 * biased variance in double (stable when the mean is large against the spread), then
 * y = (x - mean) / sqrt(var + eps) * weight + bias. */
#include <math.h>
#include <stdint.h>

#include "cpu.h"
#include "../tensor.h"

int volua_cpu_group_norm(const volua_group_norm_geom *g, const float *x, const float *w,
                         const float *b, float *y, char *err) {
  const int64_t channels_per_group = g->C / g->groups;
  const int64_t group_size = channels_per_group * g->S; /* values normalised together */
  const int64_t count = g->N * g->groups;

  /* group i = n * groups + k holds channels k*Cg .. (k+1)*Cg - 1 of sample n: with x laid out as
   * (N, C, S) that is the contiguous run x[i * group_size .. (i+1) * group_size) */
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; i++) {
    if (volua_interrupted) continue;
    const int64_t k = i % g->groups;
    const float *xg = x + i * group_size;
    float *yg = y + i * group_size;

    double sum = 0.0;
    for (int64_t j = 0; j < group_size; j++) sum += xg[j];
    const double mean = sum / (double)group_size;

    double squares = 0.0;
    for (int64_t j = 0; j < group_size; j++) {
      const double d = xg[j] - mean;
      squares += d * d;
    }
    const double var = squares / (double)group_size;
    const double rstd = 1.0 / sqrt(var + g->eps);

    for (int64_t c = 0; c < channels_per_group; c++) {
      const int64_t channel = k * channels_per_group + c;
      const double scale = w ? w[channel] : 1.0;
      const double shift = b ? b[channel] : 0.0;
      const float *xc = xg + c * g->S;
      float *yc = yg + c * g->S;
      for (int64_t s = 0; s < g->S; s++) yc[s] = (float)((xc[s] - mean) * rstd * scale + shift);
    }
  }
  return volua_cpu_check_interrupt("group_norm", err);
}
