/* max_pool3d.c: volua_max_pool3d: PyTorch's argument checks and the pooling output size (shared
 * with the other pools, src/ops/pool3d.c), allocation of the output (and int64 indices), and
 * dispatch to src/cpu/max_pool3d.c or kernels/. */
#include <stdint.h>
#include <stdio.h>

#include "../ops.h"
#include "../cuda.h"
#include "../cpu/cpu.h"
#ifdef VOLUA_CUDA
#include "../../kernels/kernels.h"
#endif

/* -- the op ---- */

int volua_max_pool3d(volua_tensor *out, volua_tensor *indices, const volua_tensor *x,
                     const volua_max_pool3d_args *a, char *err) {
  volua_pool3d_geom g;
  if (volua_pool3d_geom_resolve(&g, "max_pool3d", x, a->kernel_size, a->stride, a->padding,
                                a->dilation, a->ceil_mode, 0, err))
    return 1;
  if (a->return_indices && !indices) {
    snprintf(err, VOLUA_ERR_MAX, "max_pool3d: return_indices needs an indices tensor");
    return 1;
  }
  g.return_indices = a->return_indices != 0;

  if (volua_pool3d_alloc(out, g.return_indices ? indices : NULL, x, g.out, err)) return 1;
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
