/* softmax.c: volua_softmax: torch.softmax and torch.log_softmax over one dim: checks, the slice
 * geometry (outer, size, inner), allocation and dispatch to src/cpu/softmax.c or kernels/softmax.cu. */
#include <stdint.h>
#include <stdio.h>

#include "../ops.h"
#include "../cuda.h"
#include "../cpu/cpu.h"
#ifdef VOLUA_CUDA
#include "../../kernels/kernels.h"
#endif

int volua_softmax(volua_tensor *out, const volua_tensor *x, int dim, int log, char *err) {
  const char *fn = log ? "log_softmax" : "softmax";
  if (!x->storage) {
    snprintf(err, VOLUA_ERR_MAX, "%s: input is a freed tensor", fn);
    return 1;
  }
  if (x->dtype != VOLUA_FLOAT32) {
    /* torch: "softmax_lastdim_kernel_impl" not implemented for 'Long' (no promotion) */
    snprintf(err, VOLUA_ERR_MAX, "%s: input dtype %s is not supported (float32 needed), as torch.%s "
             "refuses integer tensors", fn, volua_dtype_name(x->dtype), fn);
    return 1;
  }
  const int n = x->ndim > 0 ? x->ndim : 1; /* a 0-D input takes dim 0 (or -1), as in torch */
  if (dim < 0 || dim >= n) {
    snprintf(err, VOLUA_ERR_MAX, "%s: dim %d (0-based) is out of range for a %d-D input", fn, dim,
             x->ndim);
    return 1;
  }

  if (volua_tensor_alloc_result(out, fn, "output", x->ndim, x->shape, VOLUA_FLOAT32, x->device, err))
    return 1;
  /* (an empty input's other sizes may multiply past int64: (2^40, 0, 2^40)) */
  if (volua_tensor_numel(x) == 0) return 0;
  volua_softmax_geom g = {1, 1, 1, log}; /* the three products make the element count: no overflow */
  for (int i = 0; i < x->ndim; i++) {
    if (i < dim) g.outer *= x->shape[i];
    else if (i == dim) g.size = x->shape[i];
    else g.inner *= x->shape[i];
  }

  const float *xp = volua_tensor_f32(x);
  float *yp = volua_tensor_f32(out);
  int rc;
  if (x->device == VOLUA_DEVICE_CPU) {
    rc = volua_cpu_softmax(&g, xp, yp, err);
  } else {
#ifdef VOLUA_CUDA
    rc = volua_cuda_softmax(&g, xp, yp, (cudaStream_t)volua_cuda_stream(), err);
#else
    snprintf(err, VOLUA_ERR_MAX, "%s: volua was built without CUDA", fn);
    rc = 1;
#endif
  }
  if (rc) volua_tensor_free(out);
  return rc;
}
