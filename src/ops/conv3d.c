/* conv3d.c: volua_conv3d: F.conv3d's (and nn.Conv3d's padding_mode) argument checks, the conv
 * output-size formula, the geometry shared with conv3d_group_norm_mean, and dispatch. */
#include <stdint.h>
#include <stdio.h>

#include "../ops.h"
#include "../cuda.h"
#include "../cpu/cpu.h"
#ifdef VOLUA_CUDA
#include "../../kernels/kernels.h"
#endif

static const char *const dim_name[3] = {"D", "H", "W"};

int64_t volua_conv_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad_lo,
                               int64_t pad_hi, int64_t dilation) {
  /* floor((in + pad_lo + pad_hi - dilation*(kernel-1) - 1) / stride) + 1, or 0 when the dilated
   * kernel does not fit in the padded input. Callers rule out int64 overflow of the sums first. */
  const int64_t span = in + pad_lo + pad_hi - dilation * (kernel - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

int volua_conv3d_geom_resolve(volua_conv3d_geom *g, const char *fname, const volua_tensor *x,
                              const volua_tensor *weight, const volua_tensor *bias,
                              const volua_conv3d_args *a, char *err) {
  char s1[160], s2[160], s3[160];
  if (volua_check_f32(fname, "input", x, x->device, err)) return 1;
  if (volua_check_f32(fname, "weight", weight, x->device, err)) return 1;
  if (bias && volua_check_f32(fname, "bias", bias, x->device, err)) return 1;
  if (x->ndim != 5) { /* callers add the batch dim of an unbatched input */
    snprintf(err, VOLUA_ERR_MAX, "%s: input must be 5-D (N, C, D, H, W), got %d-D %s", fname, x->ndim,
             volua_shape_str(x->ndim, x->shape, s1, sizeof s1));
    return 1;
  }
  if (weight->ndim != 5) {
    snprintf(err, VOLUA_ERR_MAX,
             "%s: weight must be 5-D (C_out, C_in/groups, kD, kH, kW), got %d-D %s", fname,
             weight->ndim, volua_shape_str(weight->ndim, weight->shape, s1, sizeof s1));
    return 1;
  }
  const int64_t *ws = weight->shape;
  volua_shape_str(5, ws, s1, sizeof s1);

  /* -- scalar arguments ---- */
  if (a->groups < 1) {
    snprintf(err, VOLUA_ERR_MAX, "%s: groups must be positive, got %lld", fname, (long long)a->groups);
    return 1;
  }
  if (a->padding_mode < VOLUA_PAD_ZEROS || a->padding_mode > VOLUA_PAD_CIRCULAR) {
    snprintf(err, VOLUA_ERR_MAX, "%s: padding_mode %d is not one of zeros, reflect, replicate, circular",
             fname, (int)a->padding_mode);
    return 1;
  }
  if (a->padding_kind < VOLUA_PADDING_EXPLICIT || a->padding_kind > VOLUA_PADDING_VALID) {
    snprintf(err, VOLUA_ERR_MAX, "%s: padding kind %d is not explicit, \"same\" or \"valid\"", fname,
             (int)a->padding_kind);
    return 1;
  }
  for (int i = 0; i < 3; i++) {
    if (a->stride[i] < 1) {
      snprintf(err, VOLUA_ERR_MAX, "%s: stride must be positive, got %s", fname,
               volua_shape_str(3, a->stride, s2, sizeof s2));
      return 1;
    }
    if (a->dilation[i] < 1) {
      snprintf(err, VOLUA_ERR_MAX, "%s: dilation must be positive, got %s", fname,
               volua_shape_str(3, a->dilation, s2, sizeof s2));
      return 1;
    }
    if (a->padding_kind == VOLUA_PADDING_EXPLICIT && a->padding[i] < 0) {
      snprintf(err, VOLUA_ERR_MAX, "%s: padding must be non-negative, got %s", fname,
               volua_shape_str(3, a->padding, s2, sizeof s2));
      return 1;
    }
  }

  /* -- channels and groups ---- */
  const int64_t C_in = x->shape[1], C_out = ws[0];
  if (C_out < a->groups || C_out % a->groups != 0) {
    snprintf(err, VOLUA_ERR_MAX,
             "%s: groups (%lld) must divide the weight's out channels (%lld); weight is %s", fname,
             (long long)a->groups, (long long)C_out, s1);
    return 1;
  }
  int64_t expect;
  if (__builtin_mul_overflow(ws[1], a->groups, &expect)) {
    snprintf(err, VOLUA_ERR_MAX, "%s: weight channels x groups (%lld x %lld) overflows int64", fname,
             (long long)ws[1], (long long)a->groups);
    return 1;
  }
  if (C_in != expect) {
    snprintf(err, VOLUA_ERR_MAX,
             "%s: input channels (%lld) do not match weight channels x groups (%lld) "
             "(weight %s, groups=%lld)",
             fname, (long long)C_in, (long long)expect, s1, (long long)a->groups);
    return 1;
  }
  if (ws[2] < 1 || ws[3] < 1 || ws[4] < 1) {
    snprintf(err, VOLUA_ERR_MAX, "%s: weight %s has an empty kernel (kD, kH, kW must be positive)",
             fname, s1);
    return 1;
  }
  if (bias && (bias->ndim != 1 || bias->shape[0] != C_out)) {
    snprintf(err, VOLUA_ERR_MAX,
             "%s: bias must have shape (%lld), one value per out channel of weight %s, got %s", fname,
             (long long)C_out, s1, volua_shape_str(bias->ndim, bias->shape, s2, sizeof s2));
    return 1;
  }

  /* -- padding: explicit, "same" or "valid", then the padding mode's limits ---- */
  g->N = x->shape[0];
  g->C_in = C_in;
  g->C_out = C_out;
  g->groups = a->groups;
  g->padding_mode = a->padding_mode;
  int64_t eff[3], padded[3];
  for (int i = 0; i < 3; i++) {
    g->in[i] = x->shape[2 + i];
    g->kernel[i] = ws[2 + i];
    g->stride[i] = a->stride[i];
    g->dilation[i] = a->dilation[i];
    /* the dilated kernel's extent, dilation*(k-1)+1 */
    if (__builtin_mul_overflow(a->dilation[i], ws[2 + i] - 1, &eff[i]) ||
        __builtin_add_overflow(eff[i], 1, &eff[i])) {
      snprintf(err, VOLUA_ERR_MAX, "%s: dilation %s x kernel %s overflows int64", fname,
               volua_shape_str(3, a->dilation, s2, sizeof s2), volua_shape_str(3, ws + 2, s3, sizeof s3));
      return 1;
    }
    if (a->padding_kind == VOLUA_PADDING_SAME) {
      if (a->stride[i] != 1) {
        snprintf(err, VOLUA_ERR_MAX,
                 "%s: padding=\"same\" is not supported for strided convolutions (stride %s)", fname,
                 volua_shape_str(3, a->stride, s2, sizeof s2));
        return 1;
      }
      /* as F.conv3d's convolution_same and nn.Conv3d's _reversed_padding_repeated_twice: the
       * total dilation*(k-1) is split with the odd one out on the high side */
      const int64_t total = eff[i] - 1;
      g->pad_lo[i] = total / 2;
      g->pad_hi[i] = total - total / 2;
    } else if (a->padding_kind == VOLUA_PADDING_VALID) {
      g->pad_lo[i] = g->pad_hi[i] = 0;
    } else {
      g->pad_lo[i] = g->pad_hi[i] = a->padding[i];
    }
  }
  for (int i = 0; i < 3; i++) {
    const int64_t n = g->in[i], lo = g->pad_lo[i], hi = g->pad_hi[i];
    if (lo == 0 && hi == 0) continue;
    if (a->padding_mode == VOLUA_PAD_REFLECT && (lo >= n || hi >= n)) {
      snprintf(err, VOLUA_ERR_MAX,
               "%s: padding (%lld, %lld) must be smaller than the input size (%lld) in dim %s for "
               "padding_mode=\"reflect\"",
               fname, (long long)lo, (long long)hi, (long long)n, dim_name[i]);
      return 1;
    }
    if (a->padding_mode == VOLUA_PAD_CIRCULAR && (lo > n || hi > n)) {
      snprintf(err, VOLUA_ERR_MAX,
               "%s: padding (%lld, %lld) must be at most the input size (%lld) in dim %s for "
               "padding_mode=\"circular\" (it would wrap around more than once)",
               fname, (long long)lo, (long long)hi, (long long)n, dim_name[i]);
      return 1;
    }
    if (a->padding_mode == VOLUA_PAD_REPLICATE && n == 0) {
      snprintf(err, VOLUA_ERR_MAX,
               "%s: padding_mode=\"replicate\" cannot pad dim %s of size 0 (padding (%lld, %lld))",
               fname, dim_name[i], (long long)lo, (long long)hi);
      return 1;
    }
  }

  /* -- the kernel must fit in the padded input; then the output size ---- */
  int fits = 1;
  for (int i = 0; i < 3; i++) {
    if (__builtin_add_overflow(g->in[i], g->pad_lo[i], &padded[i]) ||
        __builtin_add_overflow(padded[i], g->pad_hi[i], &padded[i])) {
      snprintf(err, VOLUA_ERR_MAX, "%s: input size %lld plus padding (%lld, %lld) overflows int64 in dim %s",
               fname, (long long)g->in[i], (long long)g->pad_lo[i], (long long)g->pad_hi[i],
               dim_name[i]);
      return 1;
    }
    if (padded[i] < eff[i]) fits = 0;
  }
  if (!fits) {
    snprintf(err, VOLUA_ERR_MAX,
             "%s: kernel size %lld x %lld x %lld (dilated) can't be greater than the padded input "
             "size per channel %lld x %lld x %lld",
             fname, (long long)eff[0], (long long)eff[1], (long long)eff[2], (long long)padded[0],
             (long long)padded[1], (long long)padded[2]);
    return 1;
  }
  /* PyTorch's _select_conv_backend serves an empty input only with N = 0 or C_in = 0 ("Only zero
   * batch or zero channel inputs are supported"); its calc_output_size gives C_in = 0 an output
   * of 0 channels: (N, 0, out...), empty, with no bias in it */
  if (g->N > 0 && C_in > 0 && volua_tensor_numel(x) == 0) {
    snprintf(err, VOLUA_ERR_MAX,
             "%s: input %s is empty but its batch and channels are not: only zero batch or zero "
             "channel inputs are supported, as in PyTorch", fname,
             volua_shape_str(5, x->shape, s2, sizeof s2));
    return 1;
  }
  if (C_in == 0) g->C_out = 0;
  for (int i = 0; i < 3; i++)
    g->out[i] = volua_conv_output_size(g->in[i], g->kernel[i], g->stride[i], g->pad_lo[i],
                                       g->pad_hi[i], g->dilation[i]);
  return 0;
}

/* An unbatched (C, D, H, W) input viewed as (1, C, D, H, W); a 5-D one as it is. */
int volua_conv_batch_view(volua_tensor *view, const volua_tensor *x, const char *fname, char *err) {
  char s[160];
  *view = *x; /* a borrowed view: same storage, no reference taken */
  if (x->ndim == 5) return 0;
  if (x->ndim != 4) {
    snprintf(err, VOLUA_ERR_MAX,
             "%s: input must be 5-D (N, C, D, H, W) or 4-D unbatched (C, D, H, W), got %d-D %s", fname,
             x->ndim, volua_shape_str(x->ndim, x->shape, s, sizeof s));
    return 1;
  }
  view->ndim = 5;
  view->shape[0] = 1;
  for (int i = 0; i < 4; i++) view->shape[i + 1] = x->shape[i];
  return 0;
}

int volua_conv3d(volua_tensor *out, const volua_tensor *x, const volua_tensor *weight,
                 const volua_tensor *bias, const volua_conv3d_args *a, char *err) {
  volua_tensor xb;
  volua_conv3d_geom g;
  /* a freed input is reported by the geometry's checks */
  if (volua_conv_batch_view(&xb, x, "conv3d", err)) return 1;
  if (volua_conv3d_geom_resolve(&g, "conv3d", &xb, weight, bias, a, err)) return 1;

  const int64_t shape[5] = {g.N, g.C_out, g.out[0], g.out[1], g.out[2]};
  if (volua_tensor_alloc_result(out, "conv3d", "output", 5, shape, VOLUA_FLOAT32, x->device, err))
    return 1;
  /* the epilogue: checked against the output before anything runs; fused where the kernel can */
  volua_pw_chain epi;
  const int has_epi = a->epilogue && a->epilogue->n > 0;
  if (has_epi && volua_pointwise_resolve(&epi, "conv3d: epilogue", out, a->epilogue, err)) {
    volua_tensor_free(out);
    return 1;
  }
  int rc = 0;
  if (volua_tensor_numel(out) > 0) { /* N = 0: an empty result, as PyTorch */
    const float *xp = volua_tensor_f32(&xb), *wp = volua_tensor_f32(weight);
    const float *bp = bias ? volua_tensor_f32(bias) : NULL;
    float *yp = volua_tensor_f32(out);
    if (x->device == VOLUA_DEVICE_CPU) {
      rc = volua_cpu_conv3d(&g, xp, wp, bp, yp, err);
      if (rc == 0 && has_epi) rc = volua_pointwise_apply(out, &epi, 0, "conv3d: epilogue", err);
    } else {
#ifdef VOLUA_CUDA
      /* the weight of this call, for its prepared layout kept across calls (src/cuda.c) */
      volua_cuda_weight_id_set(wp, weight->storage->id, weight->storage->version);
      volua_cuda_epilogue_offer(has_epi ? &epi : NULL);
      rc = volua_cuda_conv3d(&g, xp, wp, bp, yp, volua_get_math(), (cudaStream_t)volua_cuda_stream(),
                             err);
      const int fused = volua_cuda_epilogue_end(); /* the first steps, applied by the kernel */
      volua_cuda_weight_id_clear();
      if (rc == 0 && has_epi) rc = volua_pointwise_apply(out, &epi, fused, "conv3d: epilogue", err);
#else
      snprintf(err, VOLUA_ERR_MAX, "conv3d: volua was built without CUDA");
      rc = 1;
#endif
    }
  }
  if (rc) {
    volua_tensor_free(out);
    return rc;
  }
  if (x->ndim == 4) { /* unbatched in, unbatched out: drop the batch dim again */
    out->ndim = 4;
    for (int i = 0; i < 4; i++) out->shape[i] = out->shape[i + 1];
  }
  return 0;
}
