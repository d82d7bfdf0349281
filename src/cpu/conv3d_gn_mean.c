/* conv3d_gn_mean.c: the CPU reference of conv3d -> group_norm -> mean over (C, D, H, W),
 * per sample: its conv output in a double scratch buffer, per-channel means and a two-pass
 * group variance, then a closed form. The cores share the samples, or each sample's loops.
 *
 * The closed form. For one sample let z[c, s] be the conv output (C channels, S positions),
 * group g hold the channels G_g (C/groups of them), mu_g and var_g = mean((z - mu_g)^2) its
 * mean and biased variance over the |G_g| * S values, r_g = 1 / sqrt(var_g + eps), and
 * zbar_c = (1/S) sum_s z[c, s] the channel mean. group_norm gives
 *     u[c, s] = (z[c, s] - mu_g) * r_g * w_c + b_c        (g the group of c)
 * and the mean over all C * S values is
 *     (1/(C S)) sum_c sum_s u[c, s] = (1/C) sum_c ( w_c * r_g * (zbar_c - mu_g) + b_c ),
 * since sum_s (z[c, s] - mu_g) = S * (zbar_c - mu_g). Only channel means and group variances are
 * needed; mu_g is the mean of its channels' means (the channels have the same S). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "cpu.h"
#include "../tensor.h"

/* y for sample n. z (C*S doubles) and chan_mean, chan_sq (C doubles each) are scratch; `inner`
 * shares the sample's loops between the cores (when the samples themselves are not shared). */
static double sample_mean(const volua_conv3d_gn_mean_geom *g, const float *x, const float *cw,
                          const float *cb, const float *gw, const float *gb, int64_t n, double *z,
                          double *chan_mean, double *chan_sq, int inner) {
  const volua_conv3d_geom *c = &g->conv;
  const int64_t C = c->C_out, Do = c->out[0], Ho = c->out[1], Wo = c->out[2];
  const int64_t S = Do * Ho * Wo, cpg = C / g->groups; /* positions, channels per group */

#pragma omp parallel for schedule(dynamic, 1) if (inner)
  for (int64_t s = 0; s < C * Do; s++) { /* (co, od) slabs of Ho rows */
    if (volua_interrupted) continue;
    const int64_t co = s / Do, od = s % Do;
    for (int64_t oh = 0; oh < Ho; oh++)
      volua_cpu_conv3d_row(c, x, cw, cb, n, co, od, oh, z + (s * Ho + oh) * Wo);
  }

#pragma omp parallel for schedule(static) if (inner)
  for (int64_t co = 0; co < C; co++) {
    const double *zc = z + co * S;
    double sum = 0.0;
    for (int64_t i = 0; i < S; i++) sum += zc[i];
    chan_mean[co] = sum / (double)S;
  }

  /* the second pass: squared deviations from the group mean, summed per channel */
#pragma omp parallel for schedule(static) if (inner)
  for (int64_t co = 0; co < C; co++) {
    const int64_t first = co / cpg * cpg;
    double mu = 0.0;
    for (int64_t k = first; k < first + cpg; k++) mu += chan_mean[k];
    mu /= (double)cpg;
    const double *zc = z + co * S;
    double sq = 0.0;
    for (int64_t i = 0; i < S; i++) {
      const double d = zc[i] - mu;
      sq += d * d;
    }
    chan_sq[co] = sq;
  }

  double total = 0.0;
  for (int64_t grp = 0; grp < g->groups; grp++) {
    const int64_t first = grp * cpg;
    double mu = 0.0, sq = 0.0;
    for (int64_t k = first; k < first + cpg; k++) { /* mu summed as in the loop above */
      mu += chan_mean[k];
      sq += chan_sq[k];
    }
    mu /= (double)cpg;
    const double var = sq / ((double)cpg * (double)S);
    const double rstd = 1.0 / sqrt(var + g->eps);
    for (int64_t k = first; k < first + cpg; k++) {
      const double wk = gw ? gw[k] : 1.0, bk = gb ? gb[k] : 0.0;
      total += wk * rstd * (chan_mean[k] - mu) + bk;
    }
  }
  return total / (double)C;
}

int volua_cpu_conv3d_gn_mean(const volua_conv3d_gn_mean_geom *g, const float *x, const float *cw,
                             const float *cb, const float *gw, const float *gb, float *y, char *err) {
  const volua_conv3d_geom *c = &g->conv;
  const int64_t C = c->C_out, S = c->out[0] * c->out[1] * c->out[2]; /* countable: src/ops checked */
  /* With as many samples as threads each thread takes whole samples (fewer barriers); else the
   * threads share each sample's loops. */
#ifdef _OPENMP
  const int outer = c->N >= omp_get_max_threads();
#else
  const int outer = 1;
#endif
  int nomem = 0;

#pragma omp parallel if (outer)
  {
    double *z = malloc((size_t)(C * S) * sizeof *z); /* one sample's conv output (C, S) */
    double *chan_mean = malloc((size_t)C * sizeof *chan_mean);
    double *chan_sq = malloc((size_t)C * sizeof *chan_sq);
    const int ok = z && chan_mean && chan_sq;
    if (!ok) {
#pragma omp atomic write
      nomem = 1;
    }
#pragma omp for schedule(dynamic, 1)
    for (int64_t n = 0; n < c->N; n++) {
      if (!ok || volua_interrupted) continue;
      y[n] = (float)sample_mean(g, x, cw, cb, gw, gb, n, z, chan_mean, chan_sq, !outer);
    }
    free(z);
    free(chan_mean);
    free(chan_sq);
  }
  if (nomem) {
    snprintf(err, VOLUA_ERR_MAX,
             "conv3d_group_norm_mean: out of memory for the conv output of one sample (%lld doubles)",
             (long long)(C * S));
    return 1;
  }
  return volua_cpu_check_interrupt("conv3d_group_norm_mean", err);
}
