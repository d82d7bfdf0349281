/* conv_transpose3d.c: the CPU reference of conv_transpose3d, as a gather: output row
 * (n, c_out, od, oh) sums, in double, every input element and tap that lands on it, where input
 * i and tap k land on o = i*stride - padding + k*dilation. Rows are shared between the cores. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cpu.h"
#include "../tensor.h"

/* floor(a / b) and ceil(a / b) for b > 0 and any sign of a. */
static inline int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}
static inline int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

/* The input coordinate that reaches output o through tap k, or -1 if none does
 * (o + padding - k*dilation must be a multiple of the stride, inside [0, n*stride)). */
static inline int64_t source_index(int64_t o, int64_t k, int64_t stride, int64_t pad,
                                   int64_t dilation, int64_t n) {
  const int64_t t = o + pad - k * dilation;
  if (t < 0 || t % stride != 0) return -1;
  return t / stride < n ? t / stride : -1;
}

/* Output row (n, co, od, oh) into row[0 .. out[2]), bias included. */
static void transpose_row(const volua_conv_transpose3d_geom *g, const float *x, const float *w,
                          const float *b, int64_t n, int64_t co, int64_t od, int64_t oh, double *row) {
  const int64_t D = g->in[0], H = g->in[1], W = g->in[2], Wo = g->out[2];
  const int64_t kD = g->kernel[0], kH = g->kernel[1], kW = g->kernel[2];
  const int64_t sw = g->stride[2], dw = g->dilation[2];
  const int64_t cin_g = g->C_in / g->groups, cout_g = g->C_out / g->groups;
  const int64_t grp = co / cout_g, col = co % cout_g; /* co's group and its place in it */

  const double bias = b ? b[co] : 0.0;
  for (int64_t ow = 0; ow < Wo; ow++) row[ow] = bias;

  for (int64_t ci = grp * cin_g; ci < (grp + 1) * cin_g; ci++) {
    const float *xc = x + (n * g->C_in + ci) * D * H * W;
    const float *wc = w + (ci * cout_g + col) * kD * kH * kW; /* weight (C_in, C_out/groups, k) */
    for (int64_t kd = 0; kd < kD; kd++) {
      const int64_t id = source_index(od, kd, g->stride[0], g->padding[0], g->dilation[0], D);
      if (id < 0) continue;
      for (int64_t kh = 0; kh < kH; kh++) {
        const int64_t ih = source_index(oh, kh, g->stride[1], g->padding[1], g->dilation[1], H);
        if (ih < 0) continue;
        const float *xr = xc + (id * H + ih) * W;
        for (int64_t kw = 0; kw < kW; kw++) {
          /* input iw lands on ow = iw*sw + off; [lo, hi) are the iw that land inside the row */
          const int64_t off = kw * dw - g->padding[2];
          int64_t lo = ceil_div(-off, sw), hi = floor_div(Wo - 1 - off, sw) + 1;
          if (lo < 0) lo = 0;
          if (hi > W) hi = W;
          const double wv = wc[(kd * kH + kh) * kW + kw];
          for (int64_t iw = lo; iw < hi; iw++) row[iw * sw + off] += wv * xr[iw];
        }
      }
    }
  }
}

/* The arguments of one call, for the rows of volua_cpu_rows. */
typedef struct { const volua_conv_transpose3d_geom *g; const float *x, *w, *b; } conv_transpose3d_args;

/* Row r of slab s = (n, co, od) in y's order. */
static void conv_transpose3d_slab_row(const void *ctx, int64_t s, int64_t oh, double *row) {
  const conv_transpose3d_args *a = ctx;
  const int64_t Do = a->g->out[0];
  const int64_t od = s % Do, co = s / Do % a->g->C_out, n = s / Do / a->g->C_out;
  transpose_row(a->g, a->x, a->w, a->b, n, co, od, oh, row);
}

int volua_cpu_conv_transpose3d(const volua_conv_transpose3d_geom *g, const float *x, const float *w, const float *b, float *y, char *err) {
  conv_transpose3d_args a = {g, x, w, b};
  return volua_cpu_rows(g->N * g->C_out * g->out[0], g->out[1], g->out[2], conv_transpose3d_slab_row, &a, y,
                        "conv_transpose3d", err);
}
