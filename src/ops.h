/* ops.h: every op of the API: validates arguments as PyTorch does, computes the output
 * shape (one function per op), allocates the result and runs the CPU or CUDA backend.
 * Each returns 0, or non-zero with a message in err ("conv3d: ..."). No Lua here. */
#ifndef VOLUA_OPS_H
#define VOLUA_OPS_H

#include "tensor.h"
#include "op_params.h"

/* -- output sizes (the formula is written once, here) ---- */

/* PyTorch's pooling_output_shape: with ceil_mode the last window must start inside the
 * input or the left padding. */
int64_t volua_pool_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad,
                               int64_t dilation, int ceil_mode);
int64_t volua_conv_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad_lo,
                               int64_t pad_hi, int64_t dilation);
int64_t volua_conv_transpose_output_size(int64_t in, int64_t kernel, int64_t stride,
                                         int64_t pad, int64_t output_padding, int64_t dilation);

/* A live float32 tensor on `dev` (the input's device); pname names it in messages
 * ("conv3d: weight is on cpu but the input is on cuda"). Rank and shape are the caller's. */
int volua_check_f32(const char *fname, const char *pname, const volua_tensor *t, volua_device dev,
                    char *err);
/* The input x: live and float32 ("fname: input is a freed tensor", "fname: input dtype int64 is
 * not supported (float32 needed)"). */
int volua_check_input_f32(const char *fname, const volua_tensor *x, char *err);
/* The (N, C, *) input of batch_norm, instance_norm and group_norm: as volua_check_input_f32, and
 * at least 2 dims. */
int volua_check_input_nc(const char *fname, const volua_tensor *x, char *err);
/* *S: the product of x's dims after the first two (1 for a 2-D x), or an error where it passes
 * int64 (possible only beside an empty dim). */
int volua_spatial_numel(const char *fname, const volua_tensor *x, int64_t *S, char *err);
/* The norms' eps: finite and non-negative (NaN, infinite or negative eps would only make NaNs). */
int volua_check_eps(const char *fname, double eps, char *err);

/* -- arguments as the user gave them (per dim, already expanded from a number) ---- */

typedef struct volua_max_pool3d_args {
  int64_t kernel_size[3], stride[3], padding[3], dilation[3];
  int ceil_mode, return_indices;
} volua_max_pool3d_args;

typedef enum { VOLUA_PADDING_EXPLICIT = 0, VOLUA_PADDING_SAME, VOLUA_PADDING_VALID } volua_padding_kind;

/* A pointwise chain as the user gave it (vol.pointwise, a convolution's `epilogue`), before it is
 * checked against the tensor it applies to (volua_pointwise_resolve). Per step: kind and op as
 * volua_pw_step's; unary: args; scalar: s, scalar_first; channel: the operand tensor t. */
typedef struct volua_pw_spec {
  int n;
  struct {
    volua_pw_kind kind;
    int op, scalar_first;
    volua_unary_args args;
    double s;
    const volua_tensor *t;
  } step[VOLUA_PW_MAX];
} volua_pw_spec;

typedef struct volua_conv3d_args {
  int64_t stride[3], padding[3], dilation[3];
  volua_padding_kind padding_kind;
  int64_t groups;
  volua_padding_mode padding_mode;
  const volua_pw_spec *epilogue; /* NULL: none; else applied to the output (fused where a kernel can) */
} volua_conv3d_args;

typedef struct volua_conv_transpose3d_args {
  int64_t stride[3], padding[3], output_padding[3], dilation[3];
  int64_t groups;
  const volua_pw_spec *epilogue; /* as volua_conv3d_args' */
} volua_conv_transpose3d_args;

/* -- the ops; `out` (and `indices`) are empty tensors that the op allocates ---- */

int volua_max_pool3d(volua_tensor *out, volua_tensor *indices, const volua_tensor *x,
                     const volua_max_pool3d_args *a, char *err);
int volua_conv3d(volua_tensor *out, const volua_tensor *x, const volua_tensor *weight,
                 const volua_tensor *bias /* NULL: none */, const volua_conv3d_args *a, char *err);
int volua_conv_transpose3d(volua_tensor *out, const volua_tensor *x, const volua_tensor *weight,
                           const volua_tensor *bias, const volua_conv_transpose3d_args *a, char *err);
int volua_group_norm(volua_tensor *out, const volua_tensor *x, int64_t num_groups,
                     const volua_tensor *weight, const volua_tensor *bias, double eps, char *err);
/* dims: 0-based, already normalised (no negatives), ndims == 0 means all. */
int volua_mean(volua_tensor *out, const volua_tensor *x, int ndims, const int *dims, int keepdim,
               char *err);
/* torch.sum over dims: float32 sums (accumulated in double), the same dims rules as volua_mean. */
int volua_sum(volua_tensor *out, const volua_tensor *x, int ndims, const int *dims, int keepdim,
              char *err);
int volua_conv3d_group_norm_mean(volua_tensor *out, const volua_tensor *x, const volua_tensor *conv_w,
                                 const volua_tensor *conv_b, int64_t num_groups,
                                 const volua_tensor *gn_w, const volua_tensor *gn_b, double eps,
                                 const volua_conv3d_args *a, char *err);

/* -- shared by conv3d and conv3d_group_norm_mean (src/ops/conv3d.c) ---- */

/* An unbatched (C, D, H, W) x viewed as (1, C, D, H, W) (borrowed: no reference taken); a 5-D x
 * as it is; any other rank is an error naming fname. */
int volua_conv_batch_view(volua_tensor *view, const volua_tensor *x, const char *fname, char *err);
/* Checks conv3d's arguments as PyTorch does (x 5-D) and resolves the geometry; messages start
 * with fname. */
int volua_conv3d_geom_resolve(volua_conv3d_geom *g, const char *fname, const volua_tensor *x,
                              const volua_tensor *weight, const volua_tensor *bias,
                              const volua_conv3d_args *a, char *err);

/* -- elementwise, reductions, random (src/ops/elementwise.c) ---- */

int volua_binary(volua_tensor *out, const volua_tensor *a, const volua_tensor *b, volua_binop op,
                 char *err);
/* Whether x / s is x * (1 / s) to the bit for every float x (s = +-2^k, |k| <= 127): the division
 * then runs as the cheaper multiply. */
int volua_exact_reciprocal(double s);
/* a op s, or s op a when scalar_first. */
int volua_binary_scalar(volua_tensor *out, const volua_tensor *a, double s, volua_binop op,
                        int scalar_first, char *err);
int volua_unary(volua_tensor *out, const volua_tensor *a, volua_unop op, char *err);
/* clamp's float32 bounds as torch settles them (the backends see no NaN bound): both absent gives
 * VOLUA_CLAMP_NO_BOUND (an error for the caller to word); both given with either NaN gives
 * VOLUA_CLAMP_FILL_NAN (every element NaN: torch's clamp_out fills NaN); else VOLUA_CLAMP_RANGE,
 * with an absent or lone NaN bound made -inf / +inf (torch's clamp_min / clamp_max: std::max(x,
 * NaN) is x). Hardtanh's callers set both has_ flags first (it is clamp(min_val, max_val)). */
enum { VOLUA_CLAMP_RANGE = 0, VOLUA_CLAMP_FILL_NAN, VOLUA_CLAMP_NO_BOUND };
int volua_clamp_bounds(volua_unary_args *p);
/* -- activations and clamp: the unary family with its parameters (args may be NULL for the ops
 * that take none); the dtype rules are torch's (src/ops/elementwise.c) ---- */
int volua_unary_with_args(volua_tensor *out, const volua_tensor *a, volua_unop op,
                          const volua_unary_args *args, char *err);
int volua_fill(volua_tensor *t, double v, char *err);
int volua_reduce_all(const volua_tensor *t, volua_reduce_op op, double *result, char *err);
int volua_max_abs_diff(const volua_tensor *a, const volua_tensor *b, double *result, char *err);
int volua_allclose(const volua_tensor *a, const volua_tensor *b, double rtol, double atol,
                   int equal_nan, int *result, char *err);
/* Fills t (any device) with uniform [0,1) or standard normal numbers: from a generator seeded
 * with *seed when seed is not NULL (reproducible), else from the global generator. */
int volua_random(volua_tensor *t, int normal, const uint64_t *seed, char *err);
void volua_manual_seed(uint64_t seed);
/* Math mode for convolutions. */
void volua_set_math(volua_math_mode m);
volua_math_mode volua_get_math(void);

/* -- pointwise chains (src/ops/pointwise.c) ---- */

/* The chain for a float32 tensor shaped like t (a per-channel operand must broadcast to t along
 * one dim: (C, 1, 1, 1) on a (N, C, D, H, W) t; float32 on t's device; t is not resized), or an
 * error naming fn and the step. */
int volua_pointwise_resolve(volua_pw_chain *c, const char *fn, const volua_tensor *t,
                            const volua_pw_spec *spec, char *err);
/* out = the chain applied to x (float32), in one pass. */
int volua_pointwise(volua_tensor *out, const volua_tensor *x, const volua_pw_spec *spec, char *err);
/* Steps [first, c->n) of the resolved chain applied to t in place (a convolution's epilogue after
 * the steps its kernel applied, if any). */
int volua_pointwise_apply(volua_tensor *t, const volua_pw_chain *c, int first, const char *fn, char *err);

/* -- softmax and the reductions over dims (src/ops/softmax.c, src/ops/reductions.c) ---- */

/* Resolves a reduction over dims as vol.mean's (0-based dims without repeats, ndims == 0 meaning
 * all; x live, at most VOLUA_MEAN_MAX_DIMS dims): the geometry (g->sum 0) and the output shape
 * (keepdim: reduced dims kept as 1) into shape[*out_ndim]. Messages start with fn. */
int volua_mean_geom_resolve(volua_mean_geom *g, int64_t shape[VOLUA_MAX_DIMS], int *out_ndim,
                            const char *fn, const volua_tensor *x, int ndims, const int *dims,
                            int keepdim, char *err);
/* torch.softmax / torch.log_softmax (log) over dim (0-based, already normalised; 0 on a 0-D x). */
int volua_softmax(volua_tensor *out, const volua_tensor *x, int dim, int log, char *err);
/* torch.logsumexp over dims (ndims == 0: all), as volua_mean's dims; an int64 x is promoted to
 * float32 as torch does. */
int volua_logsumexp(volua_tensor *out, const volua_tensor *x, int ndims, const int *dims,
                    int keepdim, char *err);
/* torch.amax (is_max) / torch.amin over dims (ndims == 0: all). */
int volua_amax(volua_tensor *out, const volua_tensor *x, int ndims, const int *dims, int keepdim,
               int is_max, char *err);
/* torch.max(x, dim) (is_max) / torch.min(x, dim): values and int64 indices (0-based). */
int volua_max_dim(volua_tensor *values, volua_tensor *indices, const volua_tensor *x, int dim,
                  int keepdim, int is_max, char *err);

/* -- batch_norm, instance_norm, layer_norm (src/ops/batch_norm.c, instance_norm.c, layer_norm.c) ---- */

/* F.batch_norm: running_mean / running_var (C values each, or NULL; required when !training) are
 * updated in place when training (momentum as torch's; the variance unbiased). */
int volua_batch_norm(volua_tensor *out, const volua_tensor *x, volua_tensor *running_mean,
                     volua_tensor *running_var, const volua_tensor *weight, const volua_tensor *bias,
                     int training, double momentum, double eps, char *err);
/* F.instance_norm: with use_input_stats, group_norm with C groups (and the running statistics, where
 * given, updated with the batch's mean of the instances' statistics); without, batch_norm's eval. */
int volua_instance_norm(volua_tensor *out, const volua_tensor *x, volua_tensor *running_mean,
                        volua_tensor *running_var, const volua_tensor *weight, const volua_tensor *bias,
                        int use_input_stats, double momentum, double eps, char *err);
/* F.layer_norm over the trailing nnorm dims, which must equal normalized_shape[0 .. nnorm). */
int volua_layer_norm(volua_tensor *out, const volua_tensor *x, int nnorm, const int64_t *normalized_shape,
                     const volua_tensor *weight, const volua_tensor *bias, double eps, char *err);

/* -- pooling family: avg_pool3d, adaptive_avg_pool3d, adaptive_max_pool3d, and the checks they
 * share with max_pool3d (src/ops/pool3d.c) ---- */

typedef struct volua_avg_pool3d_args {
  int64_t kernel_size[3], stride[3], padding[3];
  int ceil_mode, count_include_pad;
  int has_divisor_override; /* 0: PyTorch's None */
  int64_t divisor_override;  /* when given: any value but 0, as PyTorch */
} volua_avg_pool3d_args;

typedef struct volua_adaptive_pool3d_args {
  int64_t output_size[3];
  int keep[3]; /* 1: PyTorch's None, the input's size along that dim */
  int return_indices; /* adaptive_max_pool3d */
} volua_adaptive_pool3d_args;

int volua_avg_pool3d(volua_tensor *out, const volua_tensor *x, const volua_avg_pool3d_args *a,
                     char *err);
int volua_adaptive_avg_pool3d(volua_tensor *out, const volua_tensor *x,
                              const volua_adaptive_pool3d_args *a, char *err);
int volua_adaptive_max_pool3d(volua_tensor *out, volua_tensor *indices, const volua_tensor *x,
                              const volua_adaptive_pool3d_args *a, char *err);

/* The checks of 3-D pooling, in PyTorch's order and words where they fit; messages start with
 * fname. x: live, float32, 5-D (N, C, D, H, W) or 4-D (C, D, H, W), every dim but a 5-D input's
 * batch non-empty; with empty_first_dim, every dim but the first, whatever the rank (PyTorch's
 * adaptive pools check dims 1.. only). */
int volua_pool3d_check_input(const char *fname, const volua_tensor *x, int empty_first_dim,
                             char *err);
/* Checks kernel, stride, dilation (>= 1), padding (>= 0), the input (as volua_pool3d_check_input)
 * and padding against half the kernel (PyTorch's two rules); with check_input_size (avg_pool3d)
 * that the input holds a whole kernel, padding aside; then fills g (planes, sizes, the output
 * size of each dim) and checks that every output size is at least 1. dilation NULL: an op
 * without one (1, and not named in messages). */
int volua_pool3d_geom_resolve(volua_pool3d_geom *g, const char *fname, const volua_tensor *x,
                              const int64_t kernel[3], const int64_t stride[3],
                              const int64_t padding[3], const int64_t *dilation, int ceil_mode,
                              int check_input_size, char *err);
/* Allocates a pool's float32 output (and int64 indices, unless NULL) on x's device: x's leading
 * dims, then size[3]. On failure nothing stays allocated. */
int volua_pool3d_alloc(volua_tensor *out, volua_tensor *indices, const volua_tensor *x,
                       const int64_t size[3], char *err);

#endif
