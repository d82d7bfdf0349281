/* avg_pool3d.c: volua_avg_pool3d: PyTorch's argument checks (the pooling ones, shared with
 * max_pool3d in src/ops/pool3d.c, and divisor_override non-zero), allocation of the output, and
 * dispatch to src/cpu/avg_pool3d.c or kernels/avg_pool3d.cu. */
#include <stdint.h>
#include <stdio.h>

#include "../ops.h"
#include "../cuda.h"
#include "../cpu/cpu.h"
#ifdef VOLUA_CUDA
#include "../../kernels/kernels.h"
#endif

int volua_avg_pool3d(volua_tensor *out, const volua_tensor *x, const volua_avg_pool3d_args *a,
                     char *err) {
  volua_avg_pool3d_geom g = {0};
  if (volua_pool3d_geom_resolve(&g.pool, "avg_pool3d", x, a->kernel_size, a->stride, a->padding,
                                NULL, a->ceil_mode, 1, err))
    return 1;
  if (a->has_divisor_override && a->divisor_override == 0) {
    snprintf(err, VOLUA_ERR_MAX, "avg_pool3d: divisor_override must not be zero");
    return 1;
  }
  g.count_include_pad = a->count_include_pad != 0;
  g.divisor_override = a->has_divisor_override ? a->divisor_override : 0;

  if (volua_pool3d_alloc(out, NULL, x, g.pool.out, err)) return 1;
  if (g.pool.planes == 0) return 0; /* an empty batch: an empty result, as PyTorch */

  const float *xp = volua_tensor_f32(x);
  float *yp = volua_tensor_f32(out);
  int rc;
  if (x->device == VOLUA_DEVICE_CPU) {
    rc = volua_cpu_avg_pool3d(&g, xp, yp, err);
  } else {
#ifdef VOLUA_CUDA
    rc = volua_cuda_avg_pool3d(&g, xp, yp, (cudaStream_t)volua_cuda_stream(), err);
#else
    snprintf(err, VOLUA_ERR_MAX, "avg_pool3d: volua was built without CUDA");
    rc = 1;
#endif
  }
  if (rc) volua_tensor_free(out);
  return rc;
}
