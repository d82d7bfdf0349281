/* avg_pool3d.c: the CPU reference of avg_pool3d, following PyTorch's CPU kernel (cpu_avg_pool3d)
 * window by window (the window and divisor rules: src/op_params.h), with the sum and the division
 * in double. */
#include <stdint.h>

#include "cpu.h"
#include "../tensor.h"

int volua_cpu_avg_pool3d(const volua_avg_pool3d_geom *ag, const float *x, float *y, char *err) {
  const volua_pool3d_geom *g = &ag->pool;
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

    int64_t d0, d1, pd;
    volua_avg_pool_window(od, ID, g->kernel[0], g->stride[0], g->padding[0], &d0, &d1, &pd);
    for (int64_t oh = 0; oh < OH; oh++) {
      int64_t h0, h1, ph;
      volua_avg_pool_window(oh, IH, g->kernel[1], g->stride[1], g->padding[1], &h0, &h1, &ph);
      for (int64_t ow = 0; ow < OW; ow++) {
        int64_t w0, w1, pw;
        volua_avg_pool_window(ow, IW, g->kernel[2], g->stride[2], g->padding[2], &w0, &w1, &pw);
        /* a window that sees no input gives 0, as PyTorch (the argument checks leave none) */
        if (d0 >= d1 || h0 >= h1 || w0 >= w1) {
          yp[oh * OW + ow] = 0.0f;
          continue;
        }
        double sum = 0.0;
        for (int64_t d = d0; d < d1; d++)
          for (int64_t h = h0; h < h1; h++)
            for (int64_t w = w0; w < w1; w++) sum += xp[(d * IH + h) * IW + w];
        const int64_t divisor =
            volua_avg_pool_divisor(ag, pd * ph * pw, (d1 - d0) * (h1 - h0) * (w1 - w0));
        yp[oh * OW + ow] = (float)(sum / (double)divisor);
      }
    }
  }
  return volua_cpu_check_interrupt("avg_pool3d", err);
}
