/* max_pool3d.c: the CPU reference of max_pool3d, following PyTorch's CPU kernel (cpu_max_pool)
 * window by window, including which index wins when there are NaNs. */
#include <math.h>
#include <stdint.h>

#include "cpu.h"
#include "../tensor.h"

/* The input positions of one window along one dim: start, start + dilation, ... < end.
 * Positions in the padding are skipped by moving start forward a whole number of dilations,
 * so start may end up >= end (a window that sees no input). */
static void window(int64_t o, int64_t in, int64_t kernel, int64_t stride, int64_t pad,
                   int64_t dilation, int64_t *start, int64_t *end) {
  int64_t s = o * stride - pad;
  int64_t e = s + (kernel - 1) * dilation + 1;
  *end = e < in ? e : in;
  if (s < 0) s += (-s + dilation - 1) / dilation * dilation;
  *start = s;
}

int volua_cpu_max_pool3d(const volua_pool3d_geom *g, const float *x, float *y, int64_t *indices,
                         char *err) {
  const int64_t ID = g->in[0], IH = g->in[1], IW = g->in[2];
  const int64_t OD = g->out[0], OH = g->out[1], OW = g->out[2];
  const int64_t in_volume = ID * IH * IW, out_volume = OD * OH * OW;
  const int64_t rows = g->planes * OD; /* one output depth slice of one plane per iteration */

#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++) {
    if (volua_interrupted) continue;
    const int64_t plane = r / OD, od = r % OD;
    const float *xp = x + plane * in_volume;
    float *yp = y + plane * out_volume + od * OH * OW;
    int64_t *ip = indices ? indices + plane * out_volume + od * OH * OW : NULL;

    int64_t d0, d1;
    window(od, ID, g->kernel[0], g->stride[0], g->padding[0], g->dilation[0], &d0, &d1);
    for (int64_t oh = 0; oh < OH; oh++) {
      int64_t h0, h1;
      window(oh, IH, g->kernel[1], g->stride[1], g->padding[1], g->dilation[1], &h0, &h1);
      for (int64_t ow = 0; ow < OW; ow++) {
        int64_t w0, w1;
        window(ow, IW, g->kernel[2], g->stride[2], g->padding[2], g->dilation[2], &w0, &w1);

        /* As PyTorch: start from -inf at the window's first position; a larger value or
         * any NaN takes over, so the last NaN in the window wins. */
        float best = -INFINITY;
        int64_t best_index = d0 * IH * IW + h0 * IW + w0;
        for (int64_t d = d0; d < d1; d += g->dilation[0])
          for (int64_t h = h0; h < h1; h += g->dilation[1])
            for (int64_t w = w0; w < w1; w += g->dilation[2]) {
              const int64_t i = d * IH * IW + h * IW + w;
              const float v = xp[i];
              if (v > best || isnan(v)) {
                best = v;
                best_index = i;
              }
            }
        yp[oh * OW + ow] = best;
        if (ip) ip[oh * OW + ow] = best_index;
      }
    }
  }
  return volua_cpu_check_interrupt("max_pool3d", err);
}
