/* adaptive_pool3d.c: volua_adaptive_avg_pool3d and volua_adaptive_max_pool3d: PyTorch's checks
 * (output_size non-negative, None keeping the input's size; the input's as the other pools',
 * src/ops/pool3d.c), allocation, and dispatch to src/cpu/adaptive_pool3d.c or
 * kernels/adaptive_pool3d.cu. */
#include <stdint.h>
#include <stdio.h>

#include "../ops.h"
#include "../cuda.h"
#include "../cpu/cpu.h"
#ifdef VOLUA_CUDA
#include "../../kernels/kernels.h"
#endif

/* Checks x and output_size and fills g; fname names the op in messages. */
static int adaptive_resolve(volua_adaptive_pool3d_geom *g, const char *fname,
                            const volua_tensor *x, const volua_adaptive_pool3d_args *a,
                            char *err) {
  for (int i = 0; i < 3; i++) {
    if (!a->keep[i] && a->output_size[i] < 0) {
      snprintf(err, VOLUA_ERR_MAX,
               "%s: output_size must be non-negative, got %lld in dim %s", fname,
               (long long)a->output_size[i], i == 0 ? "D" : i == 1 ? "H" : "W");
      return 1;
    }
  }
  if (volua_pool3d_check_input(fname, x, 1, err)) return 1;

  const int64_t *spatial = x->shape + x->ndim - 3;
  *g = (volua_adaptive_pool3d_geom){0};
  g->planes = x->ndim == 5 ? x->shape[0] * x->shape[1] : x->shape[0];
  for (int i = 0; i < 3; i++) {
    g->in[i] = spatial[i];
    g->out[i] = a->keep[i] ? spatial[i] : a->output_size[i];
    /* volua_adaptive_start and _end multiply an output index by the input size */
    if (g->out[i] > 0 && g->in[i] > (((int64_t)1 << 62) / g->out[i])) {
      snprintf(err, VOLUA_ERR_MAX,
               "%s: output_size %lld with an input size of %lld in dim %s is out of range "
               "(their product must stay below 2^62)",
               fname, (long long)g->out[i], (long long)g->in[i], i == 0 ? "D" : i == 1 ? "H" : "W");
      return 1;
    }
  }
  return 0;
}

int volua_adaptive_avg_pool3d(volua_tensor *out, const volua_tensor *x,
                              const volua_adaptive_pool3d_args *a, char *err) {
  volua_adaptive_pool3d_geom g;
  if (adaptive_resolve(&g, "adaptive_avg_pool3d", x, a, err)) return 1;
  if (volua_pool3d_alloc(out, NULL, x, g.out, err)) return 1;
  if (volua_tensor_numel(out) == 0) return 0; /* an empty batch or output_size 0: empty */

  const float *xp = volua_tensor_f32(x);
  float *yp = volua_tensor_f32(out);
  int rc;
  if (x->device == VOLUA_DEVICE_CPU) {
    rc = volua_cpu_adaptive_avg_pool3d(&g, xp, yp, err);
  } else {
#ifdef VOLUA_CUDA
    rc = volua_cuda_adaptive_avg_pool3d(&g, xp, yp, (cudaStream_t)volua_cuda_stream(), err);
#else
    snprintf(err, VOLUA_ERR_MAX, "adaptive_avg_pool3d: volua was built without CUDA");
    rc = 1;
#endif
  }
  if (rc) volua_tensor_free(out);
  return rc;
}

int volua_adaptive_max_pool3d(volua_tensor *out, volua_tensor *indices, const volua_tensor *x,
                              const volua_adaptive_pool3d_args *a, char *err) {
  volua_adaptive_pool3d_geom g;
  if (adaptive_resolve(&g, "adaptive_max_pool3d", x, a, err)) return 1;
  if (a->return_indices && !indices) {
    snprintf(err, VOLUA_ERR_MAX, "adaptive_max_pool3d: return_indices needs an indices tensor");
    return 1;
  }
  g.return_indices = a->return_indices != 0;
  if (volua_pool3d_alloc(out, g.return_indices ? indices : NULL, x, g.out, err)) return 1;
  if (volua_tensor_numel(out) == 0) return 0;

  const float *xp = volua_tensor_f32(x);
  float *yp = volua_tensor_f32(out);
  int64_t *ip = g.return_indices ? volua_tensor_i64(indices) : NULL;
  int rc;
  if (x->device == VOLUA_DEVICE_CPU) {
    rc = volua_cpu_adaptive_max_pool3d(&g, xp, yp, ip, err);
  } else {
#ifdef VOLUA_CUDA
    rc = volua_cuda_adaptive_max_pool3d(&g, xp, yp, ip, (cudaStream_t)volua_cuda_stream(), err);
#else
    snprintf(err, VOLUA_ERR_MAX, "adaptive_max_pool3d: volua was built without CUDA");
    rc = 1;
#endif
  }
  if (rc) {
    volua_tensor_free(out);
    if (g.return_indices) volua_tensor_free(indices);
  }
  return rc;
}
