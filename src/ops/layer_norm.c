/* layer_norm.c: volua_layer_norm: F.layer_norm's checks (torch's messages after the function's
 * name), the (rows, cols) view of x, allocation, and dispatch to src/cpu/layer_norm.c or kernels/. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../ops.h"
#include "../cuda.h"
#include "../cpu/cpu.h"
#ifdef VOLUA_CUDA
#include "../../kernels/kernels.h"
#endif

/* weight or bias: absent, or float32 of exactly normalized_shape on the input's device. */
static int check_affine(const char *name, const volua_tensor *t, const volua_tensor *x, int nnorm,
                        const int64_t *nshape, char *err) {
  char s[160], want[160];
  if (!t) return 0;
  if (volua_check_f32("layer_norm", name, t, x->device, err)) return 1;
  if (t->ndim != nnorm || memcmp(t->shape, nshape, (size_t)nnorm * sizeof *nshape) != 0) {
    snprintf(err, VOLUA_ERR_MAX,
             "layer_norm: Expected %s to be of same shape as normalized_shape, but got %s of shape %s and "
             "normalized_shape = %s", name, name, volua_shape_str(t->ndim, t->shape, s, sizeof s),
             volua_shape_str(nnorm, nshape, want, sizeof want));
    return 1;
  }
  return 0;
}

int volua_layer_norm(volua_tensor *out, const volua_tensor *x, int nnorm, const int64_t *normalized_shape,
                     const volua_tensor *weight, const volua_tensor *bias, double eps, char *err) {
  char s[160], want[160];
  if (volua_check_input_f32("layer_norm", x, err)) return 1;
  if (nnorm < 1) {
    snprintf(err, VOLUA_ERR_MAX,
             "layer_norm: Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
             "one element, but got normalized_shape = ()");
    return 1;
  }
  if (nnorm > VOLUA_MAX_DIMS) {
    snprintf(err, VOLUA_ERR_MAX, "layer_norm: normalized_shape has %d dims, at most %d are supported", nnorm,
             VOLUA_MAX_DIMS);
    return 1;
  }
  if (check_affine("weight", weight, x, nnorm, normalized_shape, err) ||
      check_affine("bias", bias, x, nnorm, normalized_shape, err))
    return 1;
  const int lead = x->ndim - nnorm;
  if (lead < 0 || memcmp(x->shape + lead, normalized_shape, (size_t)nnorm * sizeof *normalized_shape) != 0) {
    /* torch's "expected input with shape [*, 4, 5]", in volua's parentheses */
    char star[200] = "(*";
    for (int i = 0; i < nnorm; i++)
      snprintf(star + strlen(star), sizeof star - strlen(star), ", %lld", (long long)normalized_shape[i]);
    snprintf(err, VOLUA_ERR_MAX,
             "layer_norm: Given normalized_shape=%s, expected input with shape %s), but got input of size %s",
             volua_shape_str(nnorm, normalized_shape, want, sizeof want), star,
             volua_shape_str(x->ndim, x->shape, s, sizeof s));
    return 1;
  }
  if (volua_check_eps("layer_norm", eps, err)) return 1;

  if (volua_tensor_alloc_result(out, "layer_norm", "output", x->ndim, x->shape, VOLUA_FLOAT32, x->device, err))
    return 1;
  const int64_t numel = volua_tensor_numel(x);
  if (numel == 0) return 0; /* (an empty input's sizes may multiply past int64: stop before) */
  volua_layer_norm_geom g = {.rows = 1, .cols = 1, .eps = eps};
  for (int i = 0; i < x->ndim; i++) {
    if (i < lead) g.rows *= x->shape[i];
    else g.cols *= x->shape[i];
  }

  const float *xp = volua_tensor_f32(x);
  const float *wp = weight ? volua_tensor_f32(weight) : NULL;
  const float *bp = bias ? volua_tensor_f32(bias) : NULL;
  float *yp = volua_tensor_f32(out);
  int rc;
  if (x->device == VOLUA_DEVICE_CPU) {
    rc = volua_cpu_layer_norm(&g, xp, wp, bp, yp, err);
  } else {
#ifdef VOLUA_CUDA
    rc = volua_cuda_layer_norm(&g, xp, wp, bp, yp, (cudaStream_t)volua_cuda_stream(), err);
#else
    snprintf(err, VOLUA_ERR_MAX, "layer_norm: volua was built without CUDA");
    rc = 1;
#endif
  }
  if (rc) volua_tensor_free(out);
  return rc;
}
