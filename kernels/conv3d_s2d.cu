// conv3d_s2d.cu: strided convolutions whose input patch does not fit conv3d_tc.cu's shared memory
// (large kernels over wide rows, as the 7x7x7 stride-2 stems of video networks), rewritten as
// stride-1 convolutions by space-to-depth and run on conv3d_tc.cu's path.
//
// With strides (sd, sh, sw) and P = sd sh sw phases q = (qd sh + qh) sw + qw, the padded input
// becomes x2 (N, C_in P, ceil(L / s)) with x2[n, c P + q, i, j, k] = xpad[n, c, i sd + qd, j sh + qh,
// k sw + qw] (L: the padded extent, zeros past it), and the weights w2 (C_out, C_in/groups P,
// ceil(k / s)) with w2[o, c P + q, a, b, e] = w[o, c, a sd + qd, b sh + qh, e sw + qw] (zero past
// k). Then y[o] = sum over taps t of xpad[o s + t] w[t] = sum over (a, q) of x2[q][o + a] w2[q][a]:
// the same products, in another order, plus products with zero weights. Those meet inputs outside an
// output's window, and 0 x inf or 0 x NaN is NaN: the input copy stamps a device flag where it
// finds a value that is not finite, and the direct kernel then redoes the output, gated on the
// device by the flag (as conv_transpose3d_tc.cu's every-phase GEMM). A group's channels stay
// contiguous (c P + q). Dilation 1 only. The kernel grows to ceil(k / s) s per dimension: 7 -> 8 at
// stride 2, (8/7)^3 = 1.49 times the products of a 7x7x7 stem.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common.cuh"
#include "fast.h"

// x2 from x (zero padding as g's): a block per plane (n, c P + q, i) of x2 in turn, its threads over
// the plane's rows (y) and columns (x), so that the divisions that locate a plane are per plane, not
// per element; *flag = stamp where a value is not finite. (One element a thread, with seven 64-bit
// divisions each, the copy took 192 us of the I3D stem's 572 in "tf32"; this way 45: ncu, H200,
// bench/NOTES.md, twenty-third session.)
static __global__ void s2d_input_kernel(volua_conv3d_geom g, volua_conv3d_geom g2, const float *__restrict__ x,
                                        float *__restrict__ x2, int *flag, int stamp) {
  const int64_t sd = g.stride[0], sh = g.stride[1], sw = g.stride[2], P = sd * sh * sw;
  const int64_t planes = g2.N * g2.C_in * g2.in[0], H2 = g2.in[1], W2 = g2.in[2];
  for (int64_t pl = blockIdx.x; pl < planes; pl += gridDim.x) {
    const int64_t i = pl % g2.in[0], nc = pl / g2.in[0], c2 = nc % g2.C_in, n = nc / g2.C_in;
    const int64_t c = c2 / P, q = c2 - c * P, qw = q % sw, qh = q / sw % sh, qd = q / (sw * sh);
    const int64_t d = i * sd + qd - g.pad_lo[0];
    const bool din = d >= 0 && d < g.in[0];
    const float *src = x + ((n * g.C_in + c) * g.in[0] + (din ? d : 0)) * g.in[1] * g.in[2]; // (any plane where !din)
    float *dst = x2 + pl * H2 * W2;
    for (int64_t j = threadIdx.y; j < H2; j += blockDim.y) {
      const int64_t h = j * sh + qh - g.pad_lo[1];
      const bool hin = din && h >= 0 && h < g.in[1];
      const float *srow = src + (hin ? h : 0) * g.in[2];
      for (int64_t k = threadIdx.x; k < W2; k += blockDim.x) {
        const int64_t w = k * sw + qw - g.pad_lo[2];
        const float v = hin && w >= 0 && w < g.in[2] ? srow[w] : 0.0f;
        if (!isfinite(v)) *flag = stamp;
        dst[j * W2 + k] = v;
      }
    }
  }
}

// w2 from w, one element a thread.
static __global__ void s2d_weight_kernel(volua_conv3d_geom g, volua_conv3d_geom g2, const float *__restrict__ w,
                                         float *__restrict__ w2) {
  const int64_t sd = g.stride[0], sh = g.stride[1], sw = g.stride[2], P = sd * sh * sw;
  const int64_t cin_g = g.C_in / g.groups, cin2 = cin_g * P;
  const int64_t total = g.C_out * cin2 * g2.kernel[0] * g2.kernel[1] * g2.kernel[2];
  VOLUA_GRID_LOOP(i, total) {
    const volua_coord5<int64_t> o = volua_unflatten5<int64_t>(i, cin2, g2.kernel[0], g2.kernel[1], g2.kernel[2]);
    const int64_t c = o.c / P, q = o.c - c * P, qw = q % sw, qh = q / sw % sh, qd = q / (sw * sh);
    const int64_t a = o.d * sd + qd, b = o.h * sh + qh, e = o.w * sw + qw;
    const bool in = a < g.kernel[0] && b < g.kernel[1] && e < g.kernel[2];
    w2[i] = in ? w[(((o.n * cin_g + c) * g.kernel[0] + a) * g.kernel[1] + b) * g.kernel[2] + e] : 0.0f;
  }
}

// Tried by conv3d.cu where conv3d_tc.cu declined (VOLUA_S2D=1: before it, on every strided shape it
// can take; 0: never; both for measuring and the specs).
extern "C" int volua_cuda_conv3d_s2d(const volua_conv3d_geom *g, const float *x, const float *w, const float *b,
                                     float *y, volua_math_mode math, cudaStream_t s, char *err) {
  const char *op = "conv3d";
  const char *e = getenv("VOLUA_S2D");
  if (volua_cuda_fast_disabled() || (e && strcmp(e, "0") == 0) || g->padding_mode != VOLUA_PAD_ZEROS)
    return VOLUA_FAST_NOT_APPLICABLE;
  int64_t P = 1;
  for (int d = 0; d < 3; d++) {
    if (g->dilation[d] != 1 || g->stride[d] < 1 || g->stride[d] > 8 || g->out[d] <= 0) return VOLUA_FAST_NOT_APPLICABLE;
    P *= g->stride[d];
  }
  if (P == 1 || g->N <= 0 || g->C_in <= 0 || g->C_out <= 0) return VOLUA_FAST_NOT_APPLICABLE;
  volua_conv3d_geom g2 = *g;
  g2.C_in = g->C_in * P;
  int64_t xn = g->N * g2.C_in, wn = g->C_out * (g->C_in / g->groups) * P;
  for (int d = 0; d < 3; d++) {
    const int64_t L = g->in[d] + g->pad_lo[d] + g->pad_hi[d], st = g->stride[d];
    g2.in[d] = (L + st - 1) / st;
    g2.kernel[d] = (g->kernel[d] + st - 1) / st;
    g2.stride[d] = 1;
    g2.pad_lo[d] = 0;
    if (d == 2) g2.in[d] = (g2.in[d] + 3) / 4 * 4; // rows of a multiple of 4 floats: conv3d_tc.cu's 16-byte and TMA staging
    g2.pad_hi[d] = g->out[d] + g2.kernel[d] - 1 - g2.in[d]; // (<= 0: the outputs are g's; no output reads past)
    if (g2.pad_hi[d] > 0) return VOLUA_FAST_NOT_APPLICABLE; // (cannot happen for a valid g)
    xn *= g2.in[d];
    wn *= g2.kernel[d];
  }
  // the non-finite flag: one int kept for the process, cleared once; each call writes its own stamp
  static int *flag = NULL;
  static int stamp = 0;
  if (!flag) {
    char ferr[VOLUA_ERR_MAX];
    if (volua_cuda_malloc(reinterpret_cast<void **>(&flag), sizeof(int), ferr)) {
      (void)cudaGetLastError();
      flag = NULL;
      return VOLUA_FAST_NOT_APPLICABLE;
    }
    const cudaError_t me = cudaMemsetAsync(flag, 0, sizeof(int), s);
    if (me != cudaSuccess) {
      volua_cuda_free(flag);
      flag = NULL;
      return volua_kernel_error(err, op, me, "cudaMemsetAsync", __FILE__, __LINE__);
    }
  }
  stamp = stamp == INT32_MAX ? 1 : stamp + 1;
  float *x2 = NULL, *w2 = NULL;
  char merr[VOLUA_ERR_MAX];
  if (volua_cuda_malloc((void **)&x2, xn * (int64_t)sizeof(float), merr) ||
      volua_cuda_malloc((void **)&w2, wn * (int64_t)sizeof(float), merr)) {
    volua_cuda_free(x2); // no memory for the copies: the direct kernel
    (void)cudaGetLastError();
    return VOLUA_FAST_NOT_APPLICABLE;
  }
  int rc = 0;
  const int64_t planes = g2.N * g2.C_in * g2.in[0]; // s2d_input_kernel: a block a plane, 32 x 8 threads (as conv3d_pad_kernel)
  s2d_input_kernel<<<volua_grid_for(planes, 1), dim3(32, 8), 0, s>>>(*g, g2, x, x2, flag, stamp);
  cudaError_t le = cudaGetLastError();
  if (le == cudaSuccess) {
    s2d_weight_kernel<<<volua_grid_for(wn, VOLUA_THREADS), VOLUA_THREADS, 0, s>>>(*g, g2, w, w2);
    le = cudaGetLastError();
  }
  if (le != cudaSuccess)
    rc = volua_kernel_error(err, op, le, "s2d copies", __FILE__, __LINE__);
  else
    rc = volua_cuda_conv3d_tc(&g2, x2, w2, b, y, math, s, err);
  if (rc == 0) rc = volua_cuda_conv3d_redo(g, x, w, b, y, math, flag, stamp, s, err); // (gated: see the top)
  if (rc == 0) rc = volua_cuda_epilogue_redo(g->N * g->C_out * g->out[0] * g->out[1] * g->out[2], y, flag, stamp, s, err);
  volua_cuda_free(x2); // (stream-ordered: reused only by work queued after this call's)
  volua_cuda_free(w2);
  return rc;
}
