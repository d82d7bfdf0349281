/* conv3d_group_norm_mean.c: volua_conv3d_group_norm_mean: the checks of
 * group_norm(conv3d(x)).mean(dim=[1, 2, 3, 4]) as PyTorch makes them, and dispatch to the
 * CPU reference or the fused CUDA kernel. The result has shape (N).
 *
 * An unbatched (C, D, H, W) input is refused: in PyTorch conv3d would return (C_out, D, H, W),
 * group_norm would then take D for the channels, and mean(dim=[1, 2, 3, 4]) fails on 4 dims, so
 * the composed expression has no answer for it; we say so instead of inventing one. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "../ops.h"
#include "../cuda.h"
#include "../cpu/cpu.h"
#ifdef VOLUA_CUDA
#include "../../kernels/kernels.h"
#endif

#define FNAME "conv3d_group_norm_mean"

/* gn_w / gn_b: float32 vectors of C values on the input's device, or absent. */
static int check_affine(const char *pname, const volua_tensor *t, const volua_tensor *x, int64_t C,
                        char *err) {
  char s[160];
  if (!t) return 0;
  if (volua_check_f32(FNAME, pname, t, x->device, err)) return 1;
  if (t->ndim != 1 || t->shape[0] != C) {
    snprintf(err, VOLUA_ERR_MAX,
             FNAME ": %s must have shape (%lld), one value per channel of the conv's output, got %s",
             pname, (long long)C, volua_shape_str(t->ndim, t->shape, s, sizeof s));
    return 1;
  }
  return 0;
}

int volua_conv3d_group_norm_mean(volua_tensor *out, const volua_tensor *x, const volua_tensor *conv_w,
                                 const volua_tensor *conv_b, int64_t num_groups,
                                 const volua_tensor *gn_w, const volua_tensor *gn_b, double eps,
                                 const volua_conv3d_args *a, char *err) {
  char s[160];
  volua_conv3d_gn_mean_geom g;
  if (!x->storage) {
    snprintf(err, VOLUA_ERR_MAX, FNAME ": input is a freed tensor");
    return 1;
  }
  if (x->ndim != 5) {
    snprintf(err, VOLUA_ERR_MAX,
             FNAME ": input must be 5-D (N, C, D, H, W), got %d-D %s (the mean over dims 1..4 of "
             "group_norm(conv3d(x)) needs a batch dim, as in PyTorch)",
             x->ndim, volua_shape_str(x->ndim, x->shape, s, sizeof s));
    return 1;
  }
  if (volua_conv3d_geom_resolve(&g.conv, FNAME, x, conv_w, conv_b, a, err)) return 1;

  const int64_t C = g.conv.C_out; /* 0 when x has no channels, as PyTorch's conv3d output */
  if (num_groups < 1) {
    snprintf(err, VOLUA_ERR_MAX, FNAME ": num_groups (%lld) must be greater than zero",
             (long long)num_groups);
    return 1;
  }
  if (C % num_groups != 0) {
    snprintf(err, VOLUA_ERR_MAX,
             FNAME ": num_groups (%lld) must divide channels (%lld), the conv's out channels",
             (long long)num_groups, (long long)C);
    return 1;
  }
  if (check_affine("gn_w", gn_w, x, C, err) || check_affine("gn_b", gn_b, x, C, err)) return 1;
  if (volua_check_eps(FNAME, eps, err)) return 1; /* as volua_group_norm */
  /* the conv output of one sample, (C, out...), must be countable (the CPU keeps one in double) */
  const int64_t sample[4] = {C, g.conv.out[0], g.conv.out[1], g.conv.out[2]};
  int64_t per_sample;
  if (volua_shape_numel(4, sample, sizeof(double), &per_sample, err)) {
    snprintf(err, VOLUA_ERR_MAX, FNAME ": the conv output per sample %s is too large",
             volua_shape_str(4, sample, s, sizeof s));
    return 1;
  }
  /* F.group_norm's _verify_batch_size: N * C/num_groups * spatial == 1 is refused */
  if (g.conv.N == 1 && C > 0 && C / num_groups == 1 && per_sample / C == 1) {
    snprintf(err, VOLUA_ERR_MAX,
             FNAME ": group_norm expects more than 1 value per channel (N * C/num_groups * spatial "
             "= 1 for the conv output (%lld, %lld, 1, 1, 1) with num_groups %lld), as F.group_norm",
             (long long)g.conv.N, (long long)C, (long long)num_groups);
    return 1;
  }
  g.groups = num_groups;
  g.eps = eps;

  const int64_t shape[1] = {g.conv.N};
  if (volua_tensor_alloc(out, 1, shape, VOLUA_FLOAT32, x->device, err)) return 1;
  if (g.conv.N == 0) return 0; /* an empty batch: an empty result, as PyTorch */
  if (C == 0) { /* group_norm of (N, 0, ...) is empty; its mean over nothing is NaN (torch.mean) */
    if (volua_fill(out, NAN, err)) { volua_tensor_free(out); return 1; }
    return 0;
  }

  const float *xp = volua_tensor_f32(x), *cw = volua_tensor_f32(conv_w);
  const float *cb = conv_b ? volua_tensor_f32(conv_b) : NULL;
  const float *gw = gn_w ? volua_tensor_f32(gn_w) : NULL;
  const float *gb = gn_b ? volua_tensor_f32(gn_b) : NULL;
  float *yp = volua_tensor_f32(out);
  int rc;
  if (x->device == VOLUA_DEVICE_CPU) {
    rc = volua_cpu_conv3d_gn_mean(&g, xp, cw, cb, gw, gb, yp, err);
  } else {
#ifdef VOLUA_CUDA
    /* the convolution's weight, for its prepared layout kept across calls (src/cuda.c) */
    volua_cuda_weight_id_set(cw, conv_w->storage->id, conv_w->storage->version);
    rc = volua_cuda_conv3d_gn_mean(&g, xp, cw, cb, gw, gb, yp, volua_get_math(),
                                   (cudaStream_t)volua_cuda_stream(), err);
    volua_cuda_weight_id_clear();
#else
    snprintf(err, VOLUA_ERR_MAX, FNAME ": volua was built without CUDA");
    rc = 1;
#endif
  }
  if (rc) volua_tensor_free(out);
  return rc;
}
