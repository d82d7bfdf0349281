/* pool3d.c: what the 3-D pooling ops share (max_pool3d, avg_pool3d, the adaptive pools): the
 * pooling output size, written once, and PyTorch's argument checks, each message naming the op. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../ops.h"

static const char *const dim_name[3] = {"D", "H", "W"};

/* -- the output size (PyTorch's pooling_output_shape, written once) ---- */

/* Division rounding towards minus infinity (PyTorch's div_rtn): the numerator below is
 * negative when the kernel does not fit the padded input. */
static int64_t div_floor(int64_t a, int64_t b) {
  int64_t q = a / b, r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) q--;
  return q;
}

/* Expects kernel, stride, dilation >= 1 and pad >= 0 (volua_pool3d_geom_resolve checks them
 * first); returns 0 for arguments it cannot size. */
int64_t volua_pool_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad,
                               int64_t dilation, int ceil_mode) {
  if (kernel < 1 || stride < 1 || dilation < 1 || pad < 0) return 0;
  int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1;
  int64_t out = div_floor(span + (ceil_mode ? stride - 1 : 0), stride) + 1;
  /* ceil_mode may add a window; it must start inside the input or the left padding */
  if (ceil_mode && (out - 1) * stride >= in + pad) out--;
  return out;
}

/* -- argument checks, in PyTorch's words where they fit ---- */

/* "(a, b, c)" of three values into buf */
static const char *triple_str(const int64_t v[3], char *buf, size_t n) {
  snprintf(buf, n, "(%lld, %lld, %lld)", (long long)v[0], (long long)v[1], (long long)v[2]);
  return buf;
}

/* PyTorch narrows these parameters to int (safe_downcast) and rejects what does not fit;
 * the bound also keeps every product below in int64. */
static int check_param(const char *fname, const char *name, const int64_t v[3], int64_t min,
                       char *err) {
  char s[96];
  for (int i = 0; i < 3; i++) {
    if (v[i] < min) {
      snprintf(err, VOLUA_ERR_MAX, "%s: %s must be %s, got %s", fname, name,
               min == 0 ? "non-negative" : "greater than zero", triple_str(v, s, sizeof s));
      return 1;
    }
    if (v[i] > INT32_MAX) {
      snprintf(err, VOLUA_ERR_MAX, "%s: %s %s is out of range (at most %d)", fname, name,
               triple_str(v, s, sizeof s), INT32_MAX);
      return 1;
    }
  }
  return 0;
}

int volua_pool3d_check_input(const char *fname, const volua_tensor *x, int empty_first_dim,
                             char *err) {
  char s[160];
  if (volua_check_input_f32(fname, x, err)) return 1;
  if (x->ndim != 4 && x->ndim != 5) {
    snprintf(err, VOLUA_ERR_MAX,
             "%s: input must be 5-D (N, C, D, H, W) or 4-D (C, D, H, W), got %d-D %s", fname,
             x->ndim, volua_shape_str(x->ndim, x->shape, s, sizeof s));
    return 1;
  }
  /* only the batch of a 5-D input may be empty (or the first dim of any, empty_first_dim) */
  for (int i = x->ndim == 5 || empty_first_dim ? 1 : 0; i < x->ndim; i++) {
    if (x->shape[i] <= 0) {
      snprintf(err, VOLUA_ERR_MAX,
               "%s: input %s has a zero-size non-batch dimension (dim %d); only the %s may be 0",
               fname, volua_shape_str(x->ndim, x->shape, s, sizeof s), i + 1,
               empty_first_dim ? "first dim" : "batch N");
      return 1;
    }
  }
  return 0;
}

/* PyTorch checks padding twice: against half the effective kernel (pooling_output_shape) and,
 * for 3-D pooling, against half the kernel itself (pool3d_shape_check). For ops without a
 * dilation (has_dilation 0) the two are one rule, said without the word. */
static int check_padding(const char *fname, const int64_t kernel[3], const int64_t padding[3],
                         const int64_t dilation[3], int has_dilation, char *err) {
  for (int i = 0; i < 3; i++) {
    int64_t p = padding[i], k = kernel[i];
    int64_t effective = (k - 1) * dilation[i] + 1;
    if (p > effective / 2 && !has_dilation) {
      snprintf(err, VOLUA_ERR_MAX,
               "%s: padding (%lld) must be at most half of the kernel size (%lld) in dim %s",
               fname, (long long)p, (long long)k, dim_name[i]);
      return 1;
    }
    if (p > effective / 2) {
      snprintf(err, VOLUA_ERR_MAX,
               "%s: padding (%lld) must be at most half of the effective kernel size (%lld) in "
               "dim %s (kernel_size %lld, dilation %lld)",
               fname, (long long)p, (long long)effective, dim_name[i], (long long)k,
               (long long)dilation[i]);
      return 1;
    }
    if (p > k / 2) {
      snprintf(err, VOLUA_ERR_MAX,
               "%s: padding (%lld) must be at most half of the kernel size (%lld) in dim "
               "%s, as PyTorch requires for 3-D pooling (effective kernel size %lld)",
               fname, (long long)p, (long long)k, dim_name[i], (long long)effective);
      return 1;
    }
  }
  return 0;
}

int volua_pool3d_geom_resolve(volua_pool3d_geom *g, const char *fname, const volua_tensor *x,
                              const int64_t kernel[3], const int64_t stride[3],
                              const int64_t padding[3], const int64_t *dilation, int ceil_mode,
                              int check_input_size, char *err) {
  static const int64_t one[3] = {1, 1, 1};
  const int has_dilation = dilation != NULL;
  if (!dilation) dilation = one;
  if (check_param(fname, "kernel_size", kernel, 1, err)) return 1;
  if (check_param(fname, "stride", stride, 1, err)) return 1;
  if (check_param(fname, "dilation", dilation, 1, err)) return 1;
  if (check_param(fname, "padding", padding, 0, err)) return 1;
  if (volua_pool3d_check_input(fname, x, 0, err)) return 1;
  if (check_padding(fname, kernel, padding, dilation, has_dilation, err)) return 1;
  /* avg_pool3d's rule (PyTorch's check_input_size): the input, padding aside, holds a kernel */
  const int64_t *spatial = x->shape + x->ndim - 3;
  for (int i = 0; check_input_size && i < 3; i++) {
    if (spatial[i] < kernel[i]) {
      snprintf(err, VOLUA_ERR_MAX,
               "%s: input (D, H, W) = (%lld, %lld, %lld) is smaller than kernel_size (%lld, %lld, "
               "%lld) in dim %s (PyTorch requires a whole kernel inside the input, padding aside)",
               fname, (long long)spatial[0], (long long)spatial[1], (long long)spatial[2],
               (long long)kernel[0], (long long)kernel[1], (long long)kernel[2], dim_name[i]);
      return 1;
    }
  }

  *g = (volua_pool3d_geom){0};
  g->planes = x->ndim == 5 ? x->shape[0] * x->shape[1] : x->shape[0];
  for (int i = 0; i < 3; i++) {
    g->in[i] = spatial[i];
    g->kernel[i] = kernel[i];
    g->stride[i] = stride[i];
    g->padding[i] = padding[i];
    g->dilation[i] = dilation[i];
    g->out[i] = volua_pool_output_size(g->in[i], g->kernel[i], g->stride[i], g->padding[i],
                                       g->dilation[i], ceil_mode);
  }
  g->ceil_mode = ceil_mode != 0;

  if (g->out[0] < 1 || g->out[1] < 1 || g->out[2] < 1) {
#define TRIPLE(v) (long long)(v)[0], (long long)(v)[1], (long long)(v)[2]
    if (has_dilation)
      snprintf(err, VOLUA_ERR_MAX,
               "%s: output size is too small: input (D, H, W) = (%lld, %lld, %lld) gives (%lld, "
               "%lld, %lld) with kernel_size (%lld, %lld, %lld), stride (%lld, %lld, %lld), "
               "padding (%lld, %lld, %lld), dilation (%lld, %lld, %lld), ceil_mode %s",
               fname, TRIPLE(g->in), TRIPLE(g->out), TRIPLE(kernel), TRIPLE(stride),
               TRIPLE(padding), TRIPLE(dilation), ceil_mode ? "true" : "false");
    else
      snprintf(err, VOLUA_ERR_MAX,
               "%s: output size is too small: input (D, H, W) = (%lld, %lld, %lld) gives (%lld, "
               "%lld, %lld) with kernel_size (%lld, %lld, %lld), stride (%lld, %lld, %lld), "
               "padding (%lld, %lld, %lld), ceil_mode %s",
               fname, TRIPLE(g->in), TRIPLE(g->out), TRIPLE(kernel), TRIPLE(stride),
               TRIPLE(padding), ceil_mode ? "true" : "false");
#undef TRIPLE
    return 1;
  }
  return 0;
}

int volua_pool3d_alloc(volua_tensor *out, volua_tensor *indices, const volua_tensor *x,
                       const int64_t size[3], char *err) {
  int64_t shape[5];
  const int nd = x->ndim;
  for (int i = 0; i < nd - 3; i++) shape[i] = x->shape[i];
  for (int i = 0; i < 3; i++) shape[nd - 3 + i] = size[i];
  if (volua_tensor_alloc(out, nd, shape, VOLUA_FLOAT32, x->device, err)) return 1;
  if (indices && volua_tensor_alloc(indices, nd, shape, VOLUA_INT64, x->device, err)) {
    volua_tensor_free(out);
    return 1;
  }
  return 0;
}
