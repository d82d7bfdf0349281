/* instance_norm.c: volua_instance_norm: F.instance_norm's checks on (N, C, *) inputs, then
 * - use_input_stats: each (sample, channel) normalised over its own values, which is group_norm with
 *   one group per channel (src/ops/group_norm.c and its backends), and the running statistics, where
 *   given, updated (src/cpu/instance_norm.c, kernels/instance_norm.cu);
 * - otherwise: the running statistics' normalisation, which is batch_norm's eval mode. */
#include <stdint.h>
#include <stdio.h>

#include "../ops.h"
#include "../cuda.h"
#include "../cpu/cpu.h"
#ifdef VOLUA_CUDA
#include "../../kernels/kernels.h"
#endif

/* A float32 vector of shape (C) on the input's device, or absent (torch repeats it over the batch,
 * which needs one dim). */
static int check_channel_vector(const char *name, const volua_tensor *t, const volua_tensor *x, int64_t C,
                                char *err) {
  char s[160], want[48];
  if (!t) return 0;
  if (volua_check_f32("instance_norm", name, t, x->device, err)) return 1;
  if (t->ndim != 1 || t->shape[0] != C) {
    snprintf(err, VOLUA_ERR_MAX, "instance_norm: %s must have shape %s, one value per channel, got %s", name,
             volua_shape_str(1, &C, want, sizeof want), volua_shape_str(t->ndim, t->shape, s, sizeof s));
    return 1;
  }
  return 0;
}

int volua_instance_norm(volua_tensor *out, const volua_tensor *x, volua_tensor *running_mean,
                        volua_tensor *running_var, const volua_tensor *weight, const volua_tensor *bias,
                        int use_input_stats, double momentum, double eps, char *err) {
  char s[160];
  if (volua_check_input_nc("instance_norm", x, err)) return 1;
  const int64_t N = x->shape[0], C = x->shape[1];
  int64_t S;
  if (volua_spatial_numel("instance_norm", x, &S, err)) return 1;
  /* F.instance_norm's _verify_spatial_size, on the sizes alone (a 2-D input has one "spatial" value) */
  if (use_input_stats && S == 1) {
    snprintf(err, VOLUA_ERR_MAX,
             "instance_norm: Expected more than 1 spatial element when training, got input size %s",
             volua_shape_str(x->ndim, x->shape, s, sizeof s));
    return 1;
  }
  if (!use_input_stats && (!running_mean || !running_var)) {
    snprintf(err, VOLUA_ERR_MAX,
             "instance_norm: Expected running_mean and running_var to be defined when use_input_stats is false");
    return 1;
  }
  if (check_channel_vector("running_mean", running_mean, x, C, err) ||
      check_channel_vector("running_var", running_var, x, C, err) ||
      check_channel_vector("weight", weight, x, C, err) || check_channel_vector("bias", bias, x, C, err))
    return 1;
  if (volua_check_eps("instance_norm", eps, err)) return 1;

  if (!use_input_stats) /* every check batch_norm makes has passed above */
    return volua_batch_norm(out, x, running_mean, running_var, weight, bias, 0, momentum, eps, err);

  if (volua_tensor_numel(x) == 0) /* empty: nothing to normalise, the running statistics untouched */
    return volua_tensor_alloc_result(out, "instance_norm", "output", x->ndim, x->shape, VOLUA_FLOAT32,
                                     x->device, err);
  if (volua_group_norm(out, x, C, weight, bias, eps, err)) return 1;
  if (!running_mean && !running_var) return 0;

  volua_batch_norm_geom g = {.N = N, .C = C, .S = S, .eps = eps, .momentum = momentum, .training = 1};
  const float *xp = volua_tensor_f32(x);
  float *rm = running_mean ? volua_tensor_f32(running_mean) : NULL;
  float *rv = running_var ? volua_tensor_f32(running_var) : NULL;
  if (running_mean) volua_storage_written(running_mean->storage);
  if (running_var) volua_storage_written(running_var->storage);
  int rc;
  if (x->device == VOLUA_DEVICE_CPU) {
    rc = volua_cpu_instance_norm_update(&g, xp, rm, rv, err);
  } else {
#ifdef VOLUA_CUDA
    rc = volua_cuda_instance_norm_update(&g, xp, rm, rv, (cudaStream_t)volua_cuda_stream(), err);
#else
    snprintf(err, VOLUA_ERR_MAX, "instance_norm: volua was built without CUDA");
    rc = 1;
#endif
  }
  if (rc) volua_tensor_free(out);
  return rc;
}
