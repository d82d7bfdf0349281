/* max_pool3d.c: volua_max_pool3d: PyTorch's argument checks, the pooling output size, allocation
 * of the output (and int64 indices), and dispatch to src/cpu/max_pool3d.c or kernels/. */
#include <stdint.h>
#include <stdio.h>

#include "../ops.h"
#include "../cuda.h"
#include "../cpu/cpu.h"
#ifdef VOLUA_CUDA
#include "../../kernels/kernels.h"
#endif

static const char *const dim_name[3] = {"D", "H", "W"};

/* -- the output size (PyTorch's pooling_output_shape, written once) ---- */

/* Division rounding towards minus infinity (PyTorch's div_rtn): the numerator below is
 * negative when the kernel does not fit the padded input. */
static int64_t div_floor(int64_t a, int64_t b) {
  int64_t q = a / b, r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) q--;
  return q;
}

/* Expects kernel, stride, dilation >= 1 and pad >= 0 (volua_max_pool3d checks them first);
 * returns 0 for arguments it cannot size. */
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
static int check_param(const char *name, const int64_t v[3], int64_t min, char *err) {
  char s[96];
  for (int i = 0; i < 3; i++) {
    if (v[i] < min) {
      snprintf(err, VOLUA_ERR_MAX, "max_pool3d: %s must be %s, got %s", name,
               min == 0 ? "non-negative" : "greater than zero", triple_str(v, s, sizeof s));
      return 1;
    }
    if (v[i] > INT32_MAX) {
      snprintf(err, VOLUA_ERR_MAX, "max_pool3d: %s %s is out of range (at most %d)", name,
               triple_str(v, s, sizeof s), INT32_MAX);
      return 1;
    }
  }
  return 0;
}

static int check_input(const volua_tensor *x, char *err) {
  char s[160];
  if (!x->storage) {
    snprintf(err, VOLUA_ERR_MAX, "max_pool3d: input is a freed tensor");
    return 1;
  }
  if (x->dtype != VOLUA_FLOAT32) {
    snprintf(err, VOLUA_ERR_MAX, "max_pool3d: input dtype %s is not supported (float32 needed)",
             volua_dtype_name(x->dtype));
    return 1;
  }
  if (x->ndim != 4 && x->ndim != 5) {
    snprintf(err, VOLUA_ERR_MAX,
             "max_pool3d: input must be 5-D (N, C, D, H, W) or 4-D (C, D, H, W), got %d-D %s",
             x->ndim, volua_shape_str(x->ndim, x->shape, s, sizeof s));
    return 1;
  }
  /* only the batch of a 5-D input may be empty */
  for (int i = x->ndim == 5 ? 1 : 0; i < x->ndim; i++) {
    if (x->shape[i] <= 0) {
      snprintf(err, VOLUA_ERR_MAX,
               "max_pool3d: input %s has a zero-size non-batch dimension (dim %d); only the "
               "batch N may be 0", volua_shape_str(x->ndim, x->shape, s, sizeof s), i + 1);
      return 1;
    }
  }
  return 0;
}

/* PyTorch checks padding twice: against half the effective kernel (pooling_output_shape) and,
 * for 3-D pooling, against half the kernel itself (pool3d_shape_check). */
static int check_padding(const volua_max_pool3d_args *a, char *err) {
  for (int i = 0; i < 3; i++) {
    int64_t p = a->padding[i], k = a->kernel_size[i];
    int64_t effective = (k - 1) * a->dilation[i] + 1;
    if (p > effective / 2) {
      snprintf(err, VOLUA_ERR_MAX,
               "max_pool3d: padding (%lld) must be at most half of the effective kernel size "
               "(%lld) in dim %s (kernel_size %lld, dilation %lld)",
               (long long)p, (long long)effective, dim_name[i], (long long)k,
               (long long)a->dilation[i]);
      return 1;
    }
    if (p > k / 2) {
      snprintf(err, VOLUA_ERR_MAX,
               "max_pool3d: padding (%lld) must be at most half of the kernel size (%lld) in dim "
               "%s, as PyTorch requires for 3-D pooling (effective kernel size %lld)",
               (long long)p, (long long)k, dim_name[i], (long long)effective);
      return 1;
    }
  }
  return 0;
}

/* -- the op ---- */

int volua_max_pool3d(volua_tensor *out, volua_tensor *indices, const volua_tensor *x,
                     const volua_max_pool3d_args *a, char *err) {
  if (check_param("kernel_size", a->kernel_size, 1, err)) return 1;
  if (check_param("stride", a->stride, 1, err)) return 1;
  if (check_param("dilation", a->dilation, 1, err)) return 1;
  if (check_param("padding", a->padding, 0, err)) return 1;
  if (check_input(x, err)) return 1;
  if (check_padding(a, err)) return 1;
  if (a->return_indices && !indices) {
    snprintf(err, VOLUA_ERR_MAX, "max_pool3d: return_indices needs an indices tensor");
    return 1;
  }

  const int batched = x->ndim == 5;
  const int64_t *spatial = x->shape + x->ndim - 3;
  volua_pool3d_geom g = {0};
  g.planes = batched ? x->shape[0] * x->shape[1] : x->shape[0];
  for (int i = 0; i < 3; i++) {
    g.in[i] = spatial[i];
    g.kernel[i] = a->kernel_size[i];
    g.stride[i] = a->stride[i];
    g.padding[i] = a->padding[i];
    g.dilation[i] = a->dilation[i];
    g.out[i] = volua_pool_output_size(g.in[i], g.kernel[i], g.stride[i], g.padding[i],
                                      g.dilation[i], a->ceil_mode);
  }
  g.ceil_mode = a->ceil_mode != 0;
  g.return_indices = a->return_indices != 0;

  if (g.out[0] < 1 || g.out[1] < 1 || g.out[2] < 1) {
#define TRIPLE(v) (long long)(v)[0], (long long)(v)[1], (long long)(v)[2]
    snprintf(err, VOLUA_ERR_MAX,
             "max_pool3d: output size is too small: input (D, H, W) = (%lld, %lld, %lld) gives "
             "(%lld, %lld, %lld) with kernel_size (%lld, %lld, %lld), stride (%lld, %lld, %lld), "
             "padding (%lld, %lld, %lld), dilation (%lld, %lld, %lld), ceil_mode %s",
             TRIPLE(g.in), TRIPLE(g.out), TRIPLE(g.kernel), TRIPLE(g.stride), TRIPLE(g.padding),
             TRIPLE(g.dilation), g.ceil_mode ? "true" : "false");
#undef TRIPLE
    return 1;
  }

  int64_t shape[5];
  int nd = x->ndim;
  for (int i = 0; i < nd - 3; i++) shape[i] = x->shape[i];
  for (int i = 0; i < 3; i++) shape[nd - 3 + i] = g.out[i];
  if (volua_tensor_alloc(out, nd, shape, VOLUA_FLOAT32, x->device, err)) return 1;
  if (g.return_indices && volua_tensor_alloc(indices, nd, shape, VOLUA_INT64, x->device, err)) {
    volua_tensor_free(out);
    return 1;
  }
  if (g.planes == 0) return 0; /* an empty batch: empty results, as PyTorch */

  const float *xp = volua_tensor_f32(x);
  float *yp = volua_tensor_f32(out);
  int64_t *ip = g.return_indices ? volua_tensor_i64(indices) : NULL;
  int rc;
  if (x->device == VOLUA_DEVICE_CPU) {
    rc = volua_cpu_max_pool3d(&g, xp, yp, ip, err);
  } else {
#ifdef VOLUA_CUDA
    rc = volua_cuda_max_pool3d(&g, xp, yp, ip, (cudaStream_t)volua_cuda_stream(), err);
#else
    snprintf(err, VOLUA_ERR_MAX, "max_pool3d: volua was built without CUDA");
    rc = 1;
#endif
  }
  if (rc) {
    volua_tensor_free(out);
    if (g.return_indices) volua_tensor_free(indices);
  }
  return rc;
}
