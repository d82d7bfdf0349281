/* adaptive_pool3d.c: the CPU references of adaptive_avg_pool3d (the mean in double) and
 * adaptive_max_pool3d (PyTorch's scan, as max_pool3d's), over PyTorch's adaptive windows:
 * output i of out along a dim of in covers [floor(i*in/out), ceil((i+1)*in/out)). */
#include <math.h>
#include <stdint.h>

#include "cpu.h"
#include "../tensor.h"

/* The input window of flat output o (planes x out, W fastest): its plane and [d0, d1) x
 * [h0, h1) x [w0, w1) within the plane. */
typedef struct adaptive_window {
  int64_t plane, d0, d1, h0, h1, w0, w1;
} adaptive_window;

static adaptive_window window_of(const volua_adaptive_pool3d_geom *g, int64_t o) {
  const int64_t ow = o % g->out[2];
  o /= g->out[2];
  const int64_t oh = o % g->out[1];
  o /= g->out[1];
  const int64_t od = o % g->out[0];
  adaptive_window w;
  w.plane = o / g->out[0];
  w.d0 = volua_adaptive_start(od, g->out[0], g->in[0]);
  w.d1 = volua_adaptive_end(od, g->out[0], g->in[0]);
  w.h0 = volua_adaptive_start(oh, g->out[1], g->in[1]);
  w.h1 = volua_adaptive_end(oh, g->out[1], g->in[1]);
  w.w0 = volua_adaptive_start(ow, g->out[2], g->in[2]);
  w.w1 = volua_adaptive_end(ow, g->out[2], g->in[2]);
  return w;
}

static int64_t outputs(const volua_adaptive_pool3d_geom *g) {
  return g->planes * g->out[0] * g->out[1] * g->out[2];
}

int volua_cpu_adaptive_avg_pool3d(const volua_adaptive_pool3d_geom *g, const float *x, float *y,
                                  char *err) {
  const int64_t IH = g->in[1], IW = g->in[2], in_volume = g->in[0] * IH * IW;
  const int64_t n = outputs(g);
#pragma omp parallel for schedule(static)
  for (int64_t o = 0; o < n; o++) {
    if (volua_interrupted) continue;
    const adaptive_window win = window_of(g, o);
    const float *xp = x + win.plane * in_volume;
    double sum = 0.0;
    for (int64_t d = win.d0; d < win.d1; d++)
      for (int64_t h = win.h0; h < win.h1; h++)
        for (int64_t w = win.w0; w < win.w1; w++) sum += xp[(d * IH + h) * IW + w];
    const int64_t count = (win.d1 - win.d0) * (win.h1 - win.h0) * (win.w1 - win.w0);
    y[o] = (float)(sum / (double)count);
  }
  return volua_cpu_check_interrupt("adaptive_avg_pool3d", err);
}

int volua_cpu_adaptive_max_pool3d(const volua_adaptive_pool3d_geom *g, const float *x, float *y,
                                  int64_t *indices, char *err) {
  const int64_t IH = g->in[1], IW = g->in[2], in_volume = g->in[0] * IH * IW;
  const int64_t n = outputs(g);
#pragma omp parallel for schedule(static)
  for (int64_t o = 0; o < n; o++) {
    if (volua_interrupted) continue;
    const adaptive_window win = window_of(g, o);
    const float *xp = x + win.plane * in_volume;
    /* As PyTorch: from -inf at the window's first position, a larger value or any NaN takes
     * over, so the first maximum wins, or the last NaN. */
    float best = -INFINITY;
    int64_t best_index = (win.d0 * IH + win.h0) * IW + win.w0;
    for (int64_t d = win.d0; d < win.d1; d++)
      for (int64_t h = win.h0; h < win.h1; h++)
        for (int64_t w = win.w0; w < win.w1; w++) {
          const int64_t i = (d * IH + h) * IW + w;
          const float v = xp[i];
          if (v > best || isnan(v)) {
            best = v;
            best_index = i;
          }
        }
    y[o] = best;
    if (indices) indices[o] = best_index;
  }
  return volua_cpu_check_interrupt("adaptive_max_pool3d", err);
}
