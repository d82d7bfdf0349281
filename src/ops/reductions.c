/* reductions.c: torch.logsumexp, torch.amax / amin over dims and torch.max / min over one dim
 * (values and int64 indices): checks, the geometry (vol.mean's: src/ops/mean.c), allocation and
 * dispatch to src/cpu/reductions.c or kernels/softmax.cu. Inputs float32 or int64 (logsumexp
 * promotes int64 to float32, as torch). Dims are 0-based, already normalised. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../ops.h"
#include "../cuda.h"
#include "../cpu/cpu.h"
#ifdef VOLUA_CUDA
#include "../../kernels/kernels.h"
#endif

/* Runs op over g on x's device into out (and indices), both allocated; frees them on failure. */
static int dispatch(const char *fn, const volua_mean_geom *g, volua_dim_reduce_op op,
                    const volua_tensor *x, volua_tensor *out, volua_tensor *indices, char *err) {
  if (g->out_numel == 0) return 0;
  const void *xp = volua_tensor_data(x);
  void *yp = volua_tensor_data(out);
  int64_t *ip = indices ? volua_tensor_i64(indices) : NULL;
  int rc;
  if (x->device == VOLUA_DEVICE_CPU) {
    rc = volua_cpu_reduce_dims(g, op, (int)x->dtype, xp, yp, ip, err);
  } else {
#ifdef VOLUA_CUDA
    rc = volua_cuda_reduce_dims(g, op, (int)x->dtype, xp, yp, ip, (cudaStream_t)volua_cuda_stream(),
                                err);
#else
    snprintf(err, VOLUA_ERR_MAX, "%s: volua was built without CUDA", fn);
    rc = 1;
#endif
  }
  if (rc) {
    volua_tensor_free(out);
    if (indices) volua_tensor_free(indices);
  }
  return rc;
}

static int check_live(const char *fn, const volua_tensor *x, char *err) {
  if (x->storage) return 0;
  snprintf(err, VOLUA_ERR_MAX, "%s: input is a freed tensor", fn);
  return 1;
}

/* torch's rule for max, min, amax and amin: the max of nothing is undefined, so every reduced dim
 * must be non-empty (even where the output is empty too). dims are named 1-based, as in Lua. */
static int check_nonempty(const char *fn, const volua_mean_geom *g, const volua_tensor *x, char *err) {
  char s[160];
  for (int i = 0; i < g->ndim; i++) {
    if (g->reduce[i] && g->shape[i] == 0) {
      snprintf(err, VOLUA_ERR_MAX, "%s: cannot reduce over dim %d of size 0 (input %s): the %s of "
               "nothing is undefined (torch raises too)", fn, i + 1,
               volua_shape_str(x->ndim, x->shape, s, sizeof s), strstr(fn, "max") ? "max" : "min");
      return 1;
    }
  }
  return 0;
}

int volua_logsumexp(volua_tensor *out, const volua_tensor *x, int ndims, const int *dims,
                    int keepdim, char *err) {
  const char *fn = "logsumexp";
  if (check_live(fn, x, err)) return 1;
  /* torch promotes an integer input to the default float dtype (float32) before reducing */
  volua_tensor promoted = {0};
  const volua_tensor *xf = x;
  if (x->dtype != VOLUA_FLOAT32) {
    if (volua_tensor_alloc_result(&promoted, fn, "float32 copy of the input", x->ndim, x->shape,
                                  VOLUA_FLOAT32, x->device, err) ||
        volua_tensor_copy(&promoted, x, err)) {
      volua_tensor_free(&promoted);
      return 1;
    }
    xf = &promoted;
  }
  volua_mean_geom g;
  int64_t shape[VOLUA_MAX_DIMS];
  int nd;
  int rc = volua_mean_geom_resolve(&g, shape, &nd, fn, xf, ndims, dims, keepdim, err) ||
           volua_tensor_alloc_result(out, fn, "output", nd, shape, VOLUA_FLOAT32, x->device, err) ||
           dispatch(fn, &g, VOLUA_DIMRED_LOGSUMEXP, xf, out, NULL, err);
  volua_tensor_free(&promoted);
  return rc;
}

int volua_amax(volua_tensor *out, const volua_tensor *x, int ndims, const int *dims, int keepdim,
               int is_max, char *err) {
  const char *fn = is_max ? "amax" : "amin";
  if (check_live(fn, x, err)) return 1;
  volua_mean_geom g; /* (float32 or int64, the result of the input's dtype, as torch.amax) */
  int64_t shape[VOLUA_MAX_DIMS];
  int nd;
  if (volua_mean_geom_resolve(&g, shape, &nd, fn, x, ndims, dims, keepdim, err) ||
      check_nonempty(fn, &g, x, err) ||
      volua_tensor_alloc_result(out, fn, "output", nd, shape, x->dtype, x->device, err))
    return 1;
  return dispatch(fn, &g, is_max ? VOLUA_DIMRED_MAX : VOLUA_DIMRED_MIN, x, out, NULL, err);
}

int volua_max_dim(volua_tensor *values, volua_tensor *indices, const volua_tensor *x, int dim,
                  int keepdim, int is_max, char *err) {
  const char *fn = is_max ? "max" : "min";
  if (check_live(fn, x, err)) return 1;
  /* values of the input's dtype (float32 or int64), as torch.max; a 0-D input takes dim 0 (or -1),
   * as in torch: its one element, index 0 */
  volua_mean_geom g;
  int64_t shape[VOLUA_MAX_DIMS];
  int nd;
  if (volua_mean_geom_resolve(&g, shape, &nd, fn, x, x->ndim > 0 ? 1 : 0, &dim, keepdim, err) ||
      check_nonempty(fn, &g, x, err))
    return 1;
  if (volua_tensor_alloc_result(values, fn, "values", nd, shape, x->dtype, x->device, err))
    return 1;
  if (volua_tensor_alloc_result(indices, fn, "indices", nd, shape, VOLUA_INT64, x->device, err)) {
    volua_tensor_free(values);
    return 1;
  }
  return dispatch(fn, &g, is_max ? VOLUA_DIMRED_MAX : VOLUA_DIMRED_MIN, x, values, indices, err);
}
