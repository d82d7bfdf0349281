/* conv_transpose3d.c: volua_conv_transpose3d: F.conv_transpose3d's argument checks, its
 * output-size formula, allocation and dispatch. */
#include <stdint.h>
#include <stdio.h>

#include "../ops.h"
#include "../cuda.h"
#include "../cpu/cpu.h"
#ifdef VOLUA_CUDA
#include "../../kernels/kernels.h"
#endif

static const char *const dim_name[3] = {"D", "H", "W"};

int64_t volua_conv_transpose_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad,
                                         int64_t output_padding, int64_t dilation) {
  /* callers rule out int64 overflow first; a result <= 0 means the padding ate the output */
  return (in - 1) * stride - 2 * pad + dilation * (kernel - 1) + output_padding + 1;
}

/* Checks the arguments as PyTorch does (x 5-D) and resolves the geometry. */
static int resolve(volua_conv_transpose3d_geom *g, const volua_tensor *x, const volua_tensor *weight,
                   const volua_tensor *bias, const volua_conv_transpose3d_args *a, char *err) {
  char s1[160], s2[160], s3[160], s4[160];
  const char *fn = "conv_transpose3d";
  if (volua_check_f32(fn, "input", x, x->device, err)) return 1;
  if (volua_check_f32(fn, "weight", weight, x->device, err)) return 1;
  if (bias && volua_check_f32(fn, "bias", bias, x->device, err)) return 1;
  if (weight->ndim != 5) {
    snprintf(err, VOLUA_ERR_MAX,
             "conv_transpose3d: weight must be 5-D (C_in, C_out/groups, kD, kH, kW), got %d-D %s",
             weight->ndim, volua_shape_str(weight->ndim, weight->shape, s1, sizeof s1));
    return 1;
  }
  const int64_t *ws = weight->shape;
  volua_shape_str(5, ws, s1, sizeof s1);

  if (a->groups < 1) {
    snprintf(err, VOLUA_ERR_MAX, "conv_transpose3d: groups must be positive, got %lld",
             (long long)a->groups);
    return 1;
  }
  const struct { const char *name; const int64_t *v; int64_t min; } limits[] = {
      {"stride", a->stride, 1}, {"dilation", a->dilation, 1}, {"padding", a->padding, 0},
      {"output_padding", a->output_padding, 0}};
  for (int p = 0; p < 4; p++) {
    for (int i = 0; i < 3; i++) {
      if (limits[p].v[i] < limits[p].min) {
        snprintf(err, VOLUA_ERR_MAX, "conv_transpose3d: %s must be %s, got %s", limits[p].name,
                 limits[p].min ? "positive" : "non-negative",
                 volua_shape_str(3, limits[p].v, s2, sizeof s2));
        return 1;
      }
    }
  }
  for (int i = 0; i < 3; i++) {
    /* PyTorch's rule: output_padding must be smaller than either the stride or the dilation */
    if (a->output_padding[i] >= a->stride[i] && a->output_padding[i] >= a->dilation[i]) {
      snprintf(err, VOLUA_ERR_MAX,
               "conv_transpose3d: output_padding %s must be smaller than either stride %s or "
               "dilation %s (dim %s: %lld)",
               volua_shape_str(3, a->output_padding, s2, sizeof s2),
               volua_shape_str(3, a->stride, s3, sizeof s3),
               volua_shape_str(3, a->dilation, s4, sizeof s4), dim_name[i],
               (long long)a->output_padding[i]);
      return 1;
    }
  }

  const int64_t C_in = x->shape[1];
  if (ws[0] < a->groups || ws[0] % a->groups != 0) {
    snprintf(err, VOLUA_ERR_MAX,
             "conv_transpose3d: groups (%lld) must divide the weight's in channels (%lld); weight "
             "(C_in, C_out/groups, kD, kH, kW) is %s",
             (long long)a->groups, (long long)ws[0], s1);
    return 1;
  }
  if (C_in != ws[0]) {
    snprintf(err, VOLUA_ERR_MAX,
             "conv_transpose3d: input channels (%lld) do not match the weight's in channels (%lld); "
             "weight (C_in, C_out/groups, kD, kH, kW) is %s",
             (long long)C_in, (long long)ws[0], s1);
    return 1;
  }
  if (ws[1] < 1 || ws[2] < 1 || ws[3] < 1 || ws[4] < 1) {
    snprintf(err, VOLUA_ERR_MAX,
             "conv_transpose3d: weight %s is empty (C_out/groups, kD, kH, kW must be positive)", s1);
    return 1;
  }
  int64_t C_out;
  if (__builtin_mul_overflow(ws[1], a->groups, &C_out)) {
    snprintf(err, VOLUA_ERR_MAX, "conv_transpose3d: out channels %lld x groups %lld overflow int64",
             (long long)ws[1], (long long)a->groups);
    return 1;
  }
  if (bias && (bias->ndim != 1 || bias->shape[0] != C_out)) {
    snprintf(err, VOLUA_ERR_MAX,
             "conv_transpose3d: bias must have shape (%lld), one value per out channel (weight %s, "
             "groups=%lld), got %s",
             (long long)C_out, s1, (long long)a->groups,
             volua_shape_str(bias->ndim, bias->shape, s2, sizeof s2));
    return 1;
  }

  /* PyTorch's _select_conv_backend: an empty input with a non-empty batch (C_in = 0 failed the
   * groups check above) is "Only zero batch or zero channel inputs are supported" */
  if (x->shape[0] > 0 && volua_tensor_numel(x) == 0) {
    snprintf(err, VOLUA_ERR_MAX,
             "conv_transpose3d: input %s is empty but its batch and channels are not: only zero "
             "batch or zero channel inputs are supported, as in PyTorch",
             volua_shape_str(5, x->shape, s2, sizeof s2));
    return 1;
  }

  g->N = x->shape[0];
  g->C_in = C_in;
  g->C_out = C_out;
  g->groups = a->groups;
  int ok = 1;
  for (int i = 0; i < 3; i++) {
    g->in[i] = x->shape[2 + i];
    g->kernel[i] = ws[2 + i];
    g->stride[i] = a->stride[i];
    g->padding[i] = a->padding[i];
    g->output_padding[i] = a->output_padding[i];
    g->dilation[i] = a->dilation[i];
    /* the size formula's terms, checked for int64 overflow before the formula is used */
    int64_t span, reach, twice_pad, size;
    if (__builtin_mul_overflow(g->in[i] - 1, g->stride[i], &span) ||
        __builtin_mul_overflow(g->dilation[i], g->kernel[i] - 1, &reach) ||
        __builtin_add_overflow(span, reach, &span) ||
        __builtin_add_overflow(span, g->output_padding[i] + 1, &span) ||
        __builtin_mul_overflow(g->padding[i], 2, &twice_pad) ||
        __builtin_sub_overflow(span, twice_pad, &size))
      ok = 0;
    if (!ok) {
      snprintf(err, VOLUA_ERR_MAX, "conv_transpose3d: the output size overflows int64 in dim %s",
               dim_name[i]);
      return 1;
    }
    g->out[i] = volua_conv_transpose_output_size(g->in[i], g->kernel[i], g->stride[i], g->padding[i],
                                                 g->output_padding[i], g->dilation[i]);
  }
  if (g->out[0] < 1 || g->out[1] < 1 || g->out[2] < 1) {
    snprintf(err, VOLUA_ERR_MAX,
             "conv_transpose3d: input size per channel %lld x %lld x %lld gives output size "
             "%lld x %lld x %lld, which is too small (padding %s)",
             (long long)g->in[0], (long long)g->in[1], (long long)g->in[2], (long long)g->out[0],
             (long long)g->out[1], (long long)g->out[2],
             volua_shape_str(3, a->padding, s2, sizeof s2));
    return 1;
  }
  return 0;
}

int volua_conv_transpose3d(volua_tensor *out, const volua_tensor *x, const volua_tensor *weight,
                           const volua_tensor *bias, const volua_conv_transpose3d_args *a, char *err) {
  volua_tensor xb;
  volua_conv_transpose3d_geom g;
  /* a freed input is reported by resolve's checks */
  if (volua_conv_batch_view(&xb, x, "conv_transpose3d", err)) return 1;
  if (resolve(&g, &xb, weight, bias, a, err)) return 1;

  const int64_t shape[5] = {g.N, g.C_out, g.out[0], g.out[1], g.out[2]};
  if (volua_tensor_alloc_result(out, "conv_transpose3d", "output", 5, shape, VOLUA_FLOAT32, x->device, err))
    return 1;
  /* the epilogue: checked against the output before anything runs; fused where the kernel can */
  volua_pw_chain epi;
  const int has_epi = a->epilogue && a->epilogue->n > 0;
  if (has_epi && volua_pointwise_resolve(&epi, "conv_transpose3d: epilogue", out, a->epilogue, err)) {
    volua_tensor_free(out);
    return 1;
  }
  int rc = 0;
  if (volua_tensor_numel(out) > 0) { /* N = 0: an empty result, as PyTorch */
    const float *xp = volua_tensor_f32(&xb), *wp = volua_tensor_f32(weight);
    const float *bp = bias ? volua_tensor_f32(bias) : NULL;
    float *yp = volua_tensor_f32(out);
    if (x->device == VOLUA_DEVICE_CPU) {
      rc = volua_cpu_conv_transpose3d(&g, xp, wp, bp, yp, err);
      if (rc == 0 && has_epi) rc = volua_pointwise_apply(out, &epi, 0, "conv_transpose3d: epilogue", err);
    } else {
#ifdef VOLUA_CUDA
      /* the weight of this call, for its prepared layout kept across calls (src/cuda.c) */
      volua_cuda_weight_id_set(wp, weight->storage->id, weight->storage->version);
      volua_cuda_epilogue_offer(has_epi ? &epi : NULL);
      rc = volua_cuda_conv_transpose3d(&g, xp, wp, bp, yp, volua_get_math(),
                                       (cudaStream_t)volua_cuda_stream(), err);
      const int fused = volua_cuda_epilogue_end(); /* the first steps, applied by the kernel */
      volua_cuda_weight_id_clear();
      if (rc == 0 && has_epi) rc = volua_pointwise_apply(out, &epi, fused, "conv_transpose3d: epilogue", err);
#else
      snprintf(err, VOLUA_ERR_MAX, "conv_transpose3d: volua was built without CUDA");
      rc = 1;
#endif
    }
  }
  if (rc) {
    volua_tensor_free(out);
    return rc;
  }
  if (x->ndim == 4) {
    out->ndim = 4;
    for (int i = 0; i < 4; i++) out->shape[i] = out->shape[i + 1];
  }
  return 0;
}
