/* conv3d.c: the CPU reference of conv3d. Each output row (n, c_out, od, oh) is accumulated in
 * double from the input rows its taps reach; the padding modes map coordinates that fall
 * outside the input through one helper, and OpenMP shares the rows between the cores. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cpu.h"
#include "../tensor.h"

/* floor(a / b) and ceil(a / b) for b > 0 and any sign of a (C's / truncates toward zero). */
static inline int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}
static inline int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }
static inline int64_t clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Where coordinate i of a padded axis reads the input of size n: an index in [0, n), or -1 when
 * it reads a zero (the zeros mode). As F.pad: "reflect" mirrors about the edge without
 * repeating it (-1 -> 1), "replicate" repeats the edge, "circular" wraps around. The checks in
 * src/ops keep the padding within one fold (reflect: pad < n; circular: pad <= n) and n >= 1
 * whenever a non-zeros mode pads; the general folds below are only a guard. */
static inline int64_t pad_index(int64_t i, int64_t n, volua_padding_mode mode) {
  if (i >= 0 && i < n) return i;
  if (n <= 0) return -1;
  switch (mode) {
  case VOLUA_PAD_REFLECT: {
    if (n == 1) return 0;
    const int64_t period = 2 * (n - 1);
    int64_t r = i % period;
    if (r < 0) r += period;
    return r < n ? r : period - r;
  }
  case VOLUA_PAD_REPLICATE: return i < 0 ? 0 : n - 1;
  case VOLUA_PAD_CIRCULAR: {
    const int64_t r = i % n;
    return r < 0 ? r + n : r;
  }
  default: return -1;
  }
}

/* The row loop is where the CPU spends its time: it is also built for AVX2 + FMA (x86-64-v3),
 * chosen at load time where the CPU has them (the default build targets plain x86-64). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
void volua_cpu_conv3d_row(const volua_conv3d_geom *g, const float *x, const float *w, const float *b,
                          int64_t n, int64_t co, int64_t od, int64_t oh, double *row) {
  const int64_t D = g->in[0], H = g->in[1], W = g->in[2], Wo = g->out[2];
  const int64_t kD = g->kernel[0], kH = g->kernel[1], kW = g->kernel[2];
  const int64_t sw = g->stride[2], dw = g->dilation[2];
  const int64_t cin_g = g->C_in / g->groups, cout_g = g->C_out / g->groups;
  const int64_t ci0 = co / cout_g * cin_g; /* the first input channel of co's group */
  const volua_padding_mode mode = g->padding_mode;

  const double bias = b ? b[co] : 0.0;
  for (int64_t ow = 0; ow < Wo; ow++) row[ow] = bias;

  for (int64_t kw = 0; kw < kW; kw++) {
    /* tap kw reads iw = ow*sw + off; for ow in [lo, hi) that is inside the input */
    const int64_t off = kw * dw - g->pad_lo[2];
    const int64_t lo = clamp(ceil_div(-off, sw), 0, Wo);
    const int64_t hi = clamp(floor_div(W - 1 - off, sw) + 1, lo, Wo);
    for (int64_t ci = 0; ci < cin_g; ci++) {
      const float *xc = x + (n * g->C_in + ci0 + ci) * D * H * W;
      const float *wc = w + (co * cin_g + ci) * kD * kH * kW;
      for (int64_t kd = 0; kd < kD; kd++) {
        const int64_t id = pad_index(od * g->stride[0] + kd * g->dilation[0] - g->pad_lo[0], D, mode);
        if (id < 0) continue;
        for (int64_t kh = 0; kh < kH; kh++) {
          const int64_t ih =
              pad_index(oh * g->stride[1] + kh * g->dilation[1] - g->pad_lo[1], H, mode);
          if (ih < 0) continue;
          const double wv = wc[(kd * kH + kh) * kW + kw];
          const float *xr = xc + (id * H + ih) * W;
          if (sw == 1) {
#pragma omp simd
            for (int64_t ow = lo; ow < hi; ow++) row[ow] += wv * xr[ow + off];
          } else {
            for (int64_t ow = lo; ow < hi; ow++) row[ow] += wv * xr[ow * sw + off];
          }
          if (mode != VOLUA_PAD_ZEROS) { /* the borders read mapped coordinates */
            for (int64_t ow = 0; ow < lo; ow++) row[ow] += wv * xr[pad_index(ow * sw + off, W, mode)];
            for (int64_t ow = hi; ow < Wo; ow++) row[ow] += wv * xr[pad_index(ow * sw + off, W, mode)];
          }
        }
      }
    }
  }
}

/* The arguments of one call, for the rows of volua_cpu_rows. */
typedef struct { const volua_conv3d_geom *g; const float *x, *w, *b; } conv3d_args;

/* Row r of slab s = (n, co, od) in y's order. */
static void conv3d_slab_row(const void *ctx, int64_t s, int64_t oh, double *row) {
  const conv3d_args *a = ctx;
  const int64_t Do = a->g->out[0];
  const int64_t od = s % Do, co = s / Do % a->g->C_out, n = s / Do / a->g->C_out;
  volua_cpu_conv3d_row(a->g, a->x, a->w, a->b, n, co, od, oh, row);
}

int volua_cpu_conv3d(const volua_conv3d_geom *g, const float *x, const float *w, const float *b, float *y, char *err) {
  conv3d_args a = {g, x, w, b};
  return volua_cpu_rows(g->N * g->C_out * g->out[0], g->out[1], g->out[2], conv3d_slab_row, &a, y,
                        "conv3d", err);
}
