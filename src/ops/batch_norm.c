/* batch_norm.c: volua_batch_norm: F.batch_norm's checks on (N, C, *) inputs (torch's own messages
 * after the function's name), allocation, and dispatch to src/cpu/batch_norm.c or kernels/. */
#include <stdint.h>
#include <stdio.h>

#include "../ops.h"
#include "../cuda.h"
#include "../cpu/cpu.h"
#ifdef VOLUA_CUDA
#include "../../kernels/kernels.h"
#endif

/* A float32 tensor of C values on the input's device, or absent; torch checks the element count
 * only ("running_mean should contain 4 elements not 3"). */
static int check_channel_vector(const char *name, const volua_tensor *t, const volua_tensor *x, int64_t C,
                                char *err) {
  if (!t) return 0;
  if (volua_check_f32("batch_norm", name, t, x->device, err)) return 1;
  const int64_t n = volua_tensor_numel(t);
  if (n != C) {
    snprintf(err, VOLUA_ERR_MAX, "batch_norm: %s should contain %lld elements not %lld", name, (long long)C,
             (long long)n);
    return 1;
  }
  return 0;
}

int volua_batch_norm(volua_tensor *out, const volua_tensor *x, volua_tensor *running_mean,
                     volua_tensor *running_var, const volua_tensor *weight, const volua_tensor *bias,
                     int training, double momentum, double eps, char *err) {
  char s[160];
  if (volua_check_input_nc("batch_norm", x, err)) return 1;
  const int64_t N = x->shape[0], C = x->shape[1];
  int64_t S; /* the product of the dims after C (1 for a 2-D input) */
  if (volua_spatial_numel("batch_norm", x, &S, err)) return 1;
  /* F.batch_norm's _verify_batch_size, on the sizes alone (an empty input with N * S == 1 too) */
  int64_t per_channel;
  if (training && !__builtin_mul_overflow(N, S, &per_channel) && per_channel == 1) {
    snprintf(err, VOLUA_ERR_MAX, "batch_norm: Expected more than 1 value per channel when training, got input size %s",
             volua_shape_str(x->ndim, x->shape, s, sizeof s));
    return 1;
  }
  if (!running_mean && !training) {
    snprintf(err, VOLUA_ERR_MAX, "batch_norm: running_mean must be defined in evaluation mode");
    return 1;
  }
  if (check_channel_vector("running_mean", running_mean, x, C, err)) return 1;
  if (!running_var && !training) {
    snprintf(err, VOLUA_ERR_MAX, "batch_norm: running_var must be defined in evaluation mode");
    return 1;
  }
  if (check_channel_vector("running_var", running_var, x, C, err) ||
      check_channel_vector("weight", weight, x, C, err) || check_channel_vector("bias", bias, x, C, err))
    return 1;
  if (volua_check_eps("batch_norm", eps, err)) return 1;

  volua_batch_norm_geom g = {.N = N, .C = C, .S = S, .eps = eps, .momentum = momentum, .training = training};
  if (volua_tensor_alloc_result(out, "batch_norm", "output", x->ndim, x->shape, VOLUA_FLOAT32, x->device, err))
    return 1;
  /* an empty input: an empty result, the running statistics untouched (torch returns early too) */
  if (volua_tensor_numel(x) == 0) return 0;

  const float *xp = volua_tensor_f32(x);
  const float *wp = weight ? volua_tensor_f32(weight) : NULL;
  const float *bp = bias ? volua_tensor_f32(bias) : NULL;
  float *rm = running_mean ? volua_tensor_f32(running_mean) : NULL;
  float *rv = running_var ? volua_tensor_f32(running_var) : NULL;
  if (training) { /* written in place: retire what was derived from the old contents */
    if (running_mean) volua_storage_written(running_mean->storage);
    if (running_var) volua_storage_written(running_var->storage);
  }
  float *yp = volua_tensor_f32(out);
  int rc;
  if (x->device == VOLUA_DEVICE_CPU) {
    rc = volua_cpu_batch_norm(&g, xp, wp, bp, rm, rv, yp, err);
  } else {
#ifdef VOLUA_CUDA
    rc = volua_cuda_batch_norm(&g, xp, wp, bp, rm, rv, yp, (cudaStream_t)volua_cuda_stream(), err);
#else
    snprintf(err, VOLUA_ERR_MAX, "batch_norm: volua was built without CUDA");
    rc = 1;
#endif
  }
  if (rc) volua_tensor_free(out);
  return rc;
}
