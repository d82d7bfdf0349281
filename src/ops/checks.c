/* checks.c: argument checks shared by the ops. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "../ops.h"

int volua_check_f32(const char *fname, const char *pname, const volua_tensor *t, volua_device dev,
                    char *err) {
  if (!t->storage) {
    snprintf(err, VOLUA_ERR_MAX, "%s: %s is a freed tensor", fname, pname);
    return 1;
  }
  if (t->dtype != VOLUA_FLOAT32) {
    snprintf(err, VOLUA_ERR_MAX, "%s: %s dtype %s is not supported (float32 needed)", fname, pname,
             volua_dtype_name(t->dtype));
    return 1;
  }
  if (t->device != dev) {
    snprintf(err, VOLUA_ERR_MAX, "%s: %s is on %s but the input is on %s", fname, pname,
             volua_device_name(t->device), volua_device_name(dev));
    return 1;
  }
  return 0;
}

int volua_check_input_f32(const char *fname, const volua_tensor *x, char *err) {
  if (!x->storage) {
    snprintf(err, VOLUA_ERR_MAX, "%s: input is a freed tensor", fname);
    return 1;
  }
  if (x->dtype != VOLUA_FLOAT32) {
    snprintf(err, VOLUA_ERR_MAX, "%s: input dtype %s is not supported (float32 needed)", fname,
             volua_dtype_name(x->dtype));
    return 1;
  }
  return 0;
}

/* -- the channel norms' checks (batch_norm, instance_norm, group_norm; eps: layer_norm too) ---- */

int volua_check_input_nc(const char *fname, const volua_tensor *x, char *err) {
  char s[160];
  if (volua_check_input_f32(fname, x, err)) return 1;
  if (x->ndim < 2) {
    snprintf(err, VOLUA_ERR_MAX, "%s: input must have at least 2 dims (N, C, *), got %d-D %s", fname,
             x->ndim, volua_shape_str(x->ndim, x->shape, s, sizeof s));
    return 1;
  }
  return 0;
}

int volua_spatial_numel(const char *fname, const volua_tensor *x, int64_t *S, char *err) {
  char s[160];
  *S = 1;
  for (int i = 2; i < x->ndim; i++) {
    if (__builtin_mul_overflow(*S, x->shape[i], S)) {
      snprintf(err, VOLUA_ERR_MAX, "%s: input shape %s is too large", fname,
               volua_shape_str(x->ndim, x->shape, s, sizeof s));
      return 1;
    }
  }
  return 0;
}

int volua_check_eps(const char *fname, double eps, char *err) {
  if (!isfinite(eps) || eps < 0) {
    snprintf(err, VOLUA_ERR_MAX, "%s: eps (%g) must be a finite non-negative number", fname, eps);
    return 1;
  }
  return 0;
}
