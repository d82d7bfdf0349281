/* group_norm.c: volua_group_norm: F.group_norm's argument checks on (N, C, *) inputs, allocation,
 * and dispatch to src/cpu/group_norm.c or kernels/. */
#include <stdint.h>
#include <stdio.h>

#include "../ops.h"
#include "../cuda.h"
#include "../cpu/cpu.h"
#ifdef VOLUA_CUDA
#include "../../kernels/kernels.h"
#endif

/* weight and bias: float32 vectors of C values on the input's device, or absent. */
static int check_affine(const char *name, const volua_tensor *t, const volua_tensor *x, int64_t C,
                        char *err) {
  char s[160];
  if (!t) return 0;
  if (!t->storage) {
    snprintf(err, VOLUA_ERR_MAX, "group_norm: %s is a freed tensor", name);
    return 1;
  }
  if (t->dtype != VOLUA_FLOAT32) {
    snprintf(err, VOLUA_ERR_MAX, "group_norm: %s dtype %s is not supported (float32 needed)", name,
             volua_dtype_name(t->dtype));
    return 1;
  }
  if (t->ndim != 1 || t->shape[0] != C) {
    char want[48];
    snprintf(err, VOLUA_ERR_MAX, "group_norm: %s must have shape %s, one value per channel, got %s",
             name, volua_shape_str(1, &C, want, sizeof want),
             volua_shape_str(t->ndim, t->shape, s, sizeof s));
    return 1;
  }
  if (t->device != x->device) {
    snprintf(err, VOLUA_ERR_MAX, "group_norm: %s is on %s but the input is on %s", name,
             volua_device_name(t->device), volua_device_name(x->device));
    return 1;
  }
  return 0;
}

int volua_group_norm(volua_tensor *out, const volua_tensor *x, int64_t num_groups,
                     const volua_tensor *weight, const volua_tensor *bias, double eps, char *err) {
  char s[160];
  if (volua_check_input_nc("group_norm", x, err)) return 1;
  const int64_t N = x->shape[0], C = x->shape[1];
  if (num_groups < 1) {
    snprintf(err, VOLUA_ERR_MAX, "group_norm: num_groups (%lld) must be greater than zero",
             (long long)num_groups);
    return 1;
  }
  if (C % num_groups != 0) {
    snprintf(err, VOLUA_ERR_MAX, "group_norm: num_groups (%lld) must divide channels (%lld)",
             (long long)num_groups, (long long)C);
    return 1;
  }
  if (check_affine("weight", weight, x, C, err) || check_affine("bias", bias, x, C, err)) return 1;
  /* eps is used as given (0 included); NaN, infinite or negative eps only make NaNs */
  if (volua_check_eps("group_norm", eps, err)) return 1;

  int64_t S; /* the product of the dims after C (1 for a 2-D input) */
  if (volua_spatial_numel("group_norm", x, &S, err)) return 1;
  /* F.group_norm's _verify_batch_size: it refuses an input where N * C/num_groups * S == 1 */
  const int64_t numel = volua_tensor_numel(x);
  if (numel != 0 && N * (C / num_groups) * S == 1) {
    snprintf(err, VOLUA_ERR_MAX,
             "group_norm: expected more than 1 value per channel (N * C/num_groups * spatial = 1 "
             "for input %s with num_groups %lld), as F.group_norm",
             volua_shape_str(x->ndim, x->shape, s, sizeof s), (long long)num_groups);
    return 1;
  }

  volua_group_norm_geom g = {.N = N, .C = C, .S = S, .groups = num_groups, .eps = eps};
  if (volua_tensor_alloc(out, x->ndim, x->shape, VOLUA_FLOAT32, x->device, err)) return 1;
  if (numel == 0) return 0; /* empty batch, channels or spatial dims: an empty result */

  const float *xp = volua_tensor_f32(x);
  const float *wp = weight ? volua_tensor_f32(weight) : NULL;
  const float *bp = bias ? volua_tensor_f32(bias) : NULL;
  float *yp = volua_tensor_f32(out);
  int rc;
  if (x->device == VOLUA_DEVICE_CPU) {
    rc = volua_cpu_group_norm(&g, xp, wp, bp, yp, err);
  } else {
#ifdef VOLUA_CUDA
    rc = volua_cuda_group_norm(&g, xp, wp, bp, yp, (cudaStream_t)volua_cuda_stream(), err);
#else
    snprintf(err, VOLUA_ERR_MAX, "group_norm: volua was built without CUDA");
    rc = 1;
#endif
  }
  if (rc) volua_tensor_free(out);
  return rc;
}
