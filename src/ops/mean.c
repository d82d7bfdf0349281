/* mean.c: volua_mean and volua_sum: torch.mean and torch.sum over a set of dims (0-based, already
 * normalised by the binding) with keepdim; checks, output shape, allocation and dispatch to src/cpu
 * or kernels/ (one backend for both: a sum is a mean without the division). */
#include <stdint.h>
#include <stdio.h>

#include "../ops.h"
#include "../cuda.h"
#include "../cpu/cpu.h"
#ifdef VOLUA_CUDA
#include "../../kernels/kernels.h"
#endif

/* -- the geometry, shared with src/ops/reductions.c (logsumexp, amax, amin) ---- */

int volua_mean_geom_resolve(volua_mean_geom *out_g, int64_t shape[VOLUA_MAX_DIMS], int *out_ndim,
                            const char *fn, const volua_tensor *x, int ndims, const int *dims,
                            int keepdim, char *err) {
  if (x->ndim > VOLUA_MEAN_MAX_DIMS) {
    snprintf(err, VOLUA_ERR_MAX, "%s: input has %d dims, at most %d are supported", fn, x->ndim,
             VOLUA_MEAN_MAX_DIMS);
    return 1;
  }
  if (ndims < 0 || ndims > x->ndim || (ndims > 0 && !dims)) {
    snprintf(err, VOLUA_ERR_MAX, "%s: %d dims given for a %d-D input", fn, ndims, x->ndim);
    return 1;
  }

  volua_mean_geom g = {0};
  g.ndim = x->ndim;
  for (int i = 0; i < x->ndim; i++) {
    g.shape[i] = x->shape[i];
    g.reduce[i] = ndims == 0; /* no dims: every dim */
  }
  for (int j = 0; j < ndims; j++) {
    int d = dims[j];
    if (d < 0 || d >= x->ndim) {
      snprintf(err, VOLUA_ERR_MAX, "%s: dim %d (0-based) is out of range for a %d-D input", fn, d,
               x->ndim);
      return 1;
    }
    if (g.reduce[d]) {
      snprintf(err, VOLUA_ERR_MAX, "%s: dim %d (0-based) appears more than once in dims", fn, d);
      return 1;
    }
    g.reduce[d] = 1;
  }

  int nd = 0;
  g.out_numel = 1;
  g.reduce_numel = 1;
  for (int i = 0; i < x->ndim; i++) {
    /* checked: with a zero size elsewhere the other sizes may multiply past int64 */
    int64_t *product = g.reduce[i] ? &g.reduce_numel : &g.out_numel;
    if (__builtin_mul_overflow(*product, x->shape[i], product)) {
      snprintf(err, VOLUA_ERR_MAX, "%s: input shape is too large", fn);
      return 1;
    }
    if (!g.reduce[i] || keepdim) shape[nd++] = g.reduce[i] ? 1 : x->shape[i];
  }

  *out_g = g;
  *out_ndim = nd;
  return 0;
}

static int reduce_dims(const char *fn, int sum, volua_tensor *out, const volua_tensor *x, int ndims,
                       const int *dims, int keepdim, char *err) {
  if (!x->storage) {
    snprintf(err, VOLUA_ERR_MAX, "%s: input is a freed tensor", fn);
    return 1;
  }
  if (x->dtype != VOLUA_FLOAT32) {
    if (sum)
      snprintf(err, VOLUA_ERR_MAX,
               "sum: input dtype %s is not supported over dims (float32 only: an int64 sum over dims "
               "is not built; t:sum() sums a whole int64 tensor)", volua_dtype_name(x->dtype));
    else
      snprintf(err, VOLUA_ERR_MAX,
               "mean: input dtype %s is not supported (float32 needed), as torch.mean refuses "
               "integer tensors", volua_dtype_name(x->dtype));
    return 1;
  }
  volua_mean_geom g;
  int64_t shape[VOLUA_MAX_DIMS];
  int nd;
  if (volua_mean_geom_resolve(&g, shape, &nd, fn, x, ndims, dims, keepdim, err)) return 1;
  g.sum = sum;

  /* an empty input may still ask for a huge result: (2^55, 0) averaged over dim 2 */
  if (volua_tensor_alloc_result(out, fn, "output", nd, shape, VOLUA_FLOAT32, x->device, err))
    return 1;
  if (g.out_numel == 0) return 0;
  /* with reduce_numel == 0 every output is the mean of nothing: NaN, as torch.mean (the backends
   * compute it as 0 / 0), or the sum of nothing: 0, as torch.sum */

  const float *xp = volua_tensor_f32(x);
  float *yp = volua_tensor_f32(out);
  int rc;
  if (x->device == VOLUA_DEVICE_CPU) {
    rc = volua_cpu_mean(&g, xp, yp, err);
  } else {
#ifdef VOLUA_CUDA
    rc = volua_cuda_mean(&g, xp, yp, (cudaStream_t)volua_cuda_stream(), err);
#else
    snprintf(err, VOLUA_ERR_MAX, "%s: volua was built without CUDA", fn);
    rc = 1;
#endif
  }
  if (rc) volua_tensor_free(out);
  return rc;
}

int volua_mean(volua_tensor *out, const volua_tensor *x, int ndims, const int *dims, int keepdim,
               char *err) {
  return reduce_dims("mean", 0, out, x, ndims, dims, keepdim, err);
}

int volua_sum(volua_tensor *out, const volua_tensor *x, int ndims, const int *dims, int keepdim,
              char *err) {
  return reduce_dims("sum", 1, out, x, ndims, dims, keepdim, err);
}
