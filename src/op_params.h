/* op_params.h: the resolved geometry of each op, shared by src/ops, src/cpu and kernels/ (plain C). */
#ifndef VOLUA_OP_PARAMS_H
#define VOLUA_OP_PARAMS_H

#include <stdint.h>

/* Spatial dims are always (D, H, W) at index 0, 1, 2. Every size is int64_t. */

/* max_pool3d over `planes` = N*C independent volumes. */
typedef struct volua_pool3d_geom {
  int64_t planes;
  int64_t in[3], out[3];
  int64_t kernel[3], stride[3], padding[3], dilation[3];
  int ceil_mode;
  int return_indices;
} volua_pool3d_geom;

typedef enum {
  VOLUA_PAD_ZEROS = 0,
  VOLUA_PAD_REFLECT = 1,
  VOLUA_PAD_REPLICATE = 2,
  VOLUA_PAD_CIRCULAR = 3
} volua_padding_mode;

/* conv3d: x (N, C_in, in), weight (C_out, C_in/groups, kernel), bias (C_out) or NULL,
 * y (N, C_out, out). pad_lo/pad_hi may differ ("same" with an even effective kernel). */
typedef struct volua_conv3d_geom {
  int64_t N, C_in, C_out, groups;
  int64_t in[3], out[3];
  int64_t kernel[3], stride[3], pad_lo[3], pad_hi[3], dilation[3];
  volua_padding_mode padding_mode;
} volua_conv3d_geom;

/* conv_transpose3d: x (N, C_in, in), weight (C_in, C_out/groups, kernel), bias (C_out) or NULL,
 * y (N, C_out, out) with out = (in-1)*stride - 2*padding + dilation*(kernel-1) + output_padding + 1. */
typedef struct volua_conv_transpose3d_geom {
  int64_t N, C_in, C_out, groups;
  int64_t in[3], out[3];
  int64_t kernel[3], stride[3], padding[3], output_padding[3], dilation[3];
} volua_conv_transpose3d_geom;

/* group_norm: x viewed as (N, C, S) with S the product of the dims after C. */
typedef struct volua_group_norm_geom {
  int64_t N, C, S, groups;
  double eps;
} volua_group_norm_geom;

/* mean and sum over dims: x viewed as (outer, reduced, inner) is not general enough for any set of dims,
 * so the geometry keeps the full shape and a mask of reduced dims. */
#define VOLUA_MEAN_MAX_DIMS 8
typedef struct volua_mean_geom {
  int ndim;
  int64_t shape[VOLUA_MEAN_MAX_DIMS];
  int reduce[VOLUA_MEAN_MAX_DIMS]; /* 1 where the dim is averaged (or summed) over */
  int64_t out_numel, reduce_numel;
  int sum; /* 1: torch.sum, the sums themselves; 0: torch.mean, each sum over reduce_numel */
} volua_mean_geom;

/* conv3d -> group_norm -> mean over (C, D, H, W): y (N). */
typedef struct volua_conv3d_gn_mean_geom {
  volua_conv3d_geom conv;
  int64_t groups;   /* group_norm's num_groups over conv.C_out channels */
  double eps;
} volua_conv3d_gn_mean_geom;

/* Math mode for convolutions: float32 accuracy, or operands rounded to TF32. */
typedef enum { VOLUA_MATH_FP32 = 0, VOLUA_MATH_TF32 = 1 } volua_math_mode;



/* -- elementwise and reductions (tensor methods) ---- */

/* maximum and minimum: torch.maximum / torch.minimum (NaN propagates) */
typedef enum {
  VOLUA_BIN_ADD = 0, VOLUA_BIN_SUB, VOLUA_BIN_MUL, VOLUA_BIN_DIV,
  VOLUA_BIN_MAXIMUM, VOLUA_BIN_MINIMUM
} volua_binop;
/* The activations after RELU compute in float32 (src/ops/elementwise.c says which promote int64
 * and which refuse it); GELU_TANH is gelu with approximate="tanh"; HARDTANH reaches the backends
 * as CLAMP. */
typedef enum {
  VOLUA_UN_NEG = 0, VOLUA_UN_ABS, VOLUA_UN_RELU,
  VOLUA_UN_TANH, VOLUA_UN_SIGMOID, VOLUA_UN_EXP, VOLUA_UN_LOG, VOLUA_UN_SQRT, VOLUA_UN_GELU,
  VOLUA_UN_GELU_TANH, VOLUA_UN_SILU, VOLUA_UN_MISH, VOLUA_UN_SOFTPLUS, VOLUA_UN_ELU,
  VOLUA_UN_LEAKY_RELU, VOLUA_UN_HARDTANH, VOLUA_UN_HARDSWISH, VOLUA_UN_HARDSIGMOID, VOLUA_UN_CLAMP,
  VOLUA_UN_COUNT
} volua_unop;
/* The parameters of the unary ops that take some, as doubles (PyTorch's Scalars):
 *   softplus: p0 beta, p1 threshold;  elu: p0 alpha;  leaky_relu: p0 negative_slope;
 *   clamp (and hardtanh): p0 min, p1 max; an absent bound (clamp's nil) is -inf / +inf with
 *   has_p0 / has_p1 0 (the backends see no NaN bound: the op layer settles those). */
typedef struct volua_unary_args {
  double p0, p1;
  int has_p0, has_p1;
} volua_unary_args;
typedef enum { VOLUA_RED_SUM = 0, VOLUA_RED_MAX, VOLUA_RED_MIN } volua_reduce_op;

/* Broadcast of two operands to `shape`: element i of the output reads a and b through
 * their strides (0 on broadcast dims), in elements. */
typedef struct volua_bcast_geom {
  int ndim;
  int64_t shape[8];
  int64_t stride_a[8], stride_b[8];
  int64_t numel;
} volua_bcast_geom;

/* -- pointwise chains: vol.pointwise and the convolutions' epilogue (src/ops/pointwise.c) ----
 * A chain of elementwise steps applied to each float32 value in one pass, each step exactly the
 * op it names (the same float as running the ops one by one on the same device). */
#define VOLUA_PW_MAX 8
typedef enum {
  VOLUA_PW_UNARY = 0, /* op: a volua_unop (hardtanh arrives as clamp); p0, p1 its parameters,
                       * clamp's absent bounds -inf / +inf */
  VOLUA_PW_SCALAR,    /* op: a volua_binop with the number p0 (in float32, as torch); scalar_first: p0 op v */
  VOLUA_PW_CHANNEL,   /* op: a volua_binop with vec[((i / S) % C) * vstep] (in double, rounded once) */
  VOLUA_PW_FILL       /* every value p0 (clamp with a NaN bound: torch fills NaN) */
} volua_pw_kind;
typedef struct volua_pw_step {
  int kind, op, scalar_first;
  double p0, p1;
  float f0, f1;     /* (float)p0, (float)p1: what the float32 kernels use, as the ops' own launchers */
  const float *vec; /* VOLUA_PW_CHANNEL: the operand's values, on the tensor's device */
  int64_t C, S;     /* element i's channel is (i / S) % C */
  int64_t vstep;    /* 1, or 0 for a one-value operand */
} volua_pw_step;
typedef struct volua_pw_chain {
  int n;
  volua_pw_step step[VOLUA_PW_MAX];
} volua_pw_chain;

/* -- softmax, log_softmax and the reductions over dims (logsumexp, amax, amin, max, min) ---- */

/* softmax and log_softmax: x viewed as (outer, size, inner), each slice of `size` values `inner`
 * apart normalised over itself. */
typedef struct volua_softmax_geom {
  int64_t outer, size, inner;
  int log; /* 1: log_softmax */
} volua_softmax_geom;

/* logsumexp, amax / amin (and max / min with indices, one dim): over volua_mean_geom's reduced dims. */
typedef enum { VOLUA_DIMRED_LOGSUMEXP = 0, VOLUA_DIMRED_MAX, VOLUA_DIMRED_MIN } volua_dim_reduce_op;

/* -- batch_norm, instance_norm, layer_norm (the norm family beside group_norm) ---- */

/* batch_norm, and instance_norm's running statistics: x viewed as (N, C, S), S the product of the
 * dims after C; a channel's statistics cover its N runs of S values (an instance's: one run). */
typedef struct volua_batch_norm_geom {
  int64_t N, C, S;
  double eps;
  double momentum; /* running = momentum * batch statistic + (1 - momentum) * running, as torch */
  int training;    /* 1: the batch's statistics (the running ones updated where given); 0: the running ones */
} volua_batch_norm_geom;

/* layer_norm: x viewed as (rows, cols), each row normalised over its cols values (the trailing
 * normalized_shape); weight and bias have cols values, applied elementwise. */
typedef struct volua_layer_norm_geom {
  int64_t rows, cols;
  double eps;
} volua_layer_norm_geom;

/* -- avg_pool3d, adaptive_avg_pool3d, adaptive_max_pool3d (the pooling family) ---- */

/* The window rules below are written once, for the CPU references and the kernels alike. */
#ifndef VOLUA_HOST_DEVICE
#ifdef __CUDACC__
#define VOLUA_HOST_DEVICE __host__ __device__
#else
#define VOLUA_HOST_DEVICE
#endif
#endif

/* avg_pool3d: max_pool3d's windows (dilation 1) and PyTorch's divisor (volua_avg_pool_divisor). */
typedef struct volua_avg_pool3d_geom {
  volua_pool3d_geom pool;
  int count_include_pad;
  int64_t divisor_override; /* 0: none (PyTorch rejects 0) */
} volua_avg_pool3d_geom;

/* avg_pool3d's window of output o along one dim: [*start, *end) clipped to the input, and
 * *padded_len, its length clipped to the padded input only: what count_include_pad counts (the
 * padding inside the padded bounds, not a ceil_mode window's overhang past them). */
static inline VOLUA_HOST_DEVICE void volua_avg_pool_window(int64_t o, int64_t in, int64_t kernel,
                                                           int64_t stride, int64_t pad,
                                                           int64_t *start, int64_t *end,
                                                           int64_t *padded_len) {
  const int64_t s = o * stride - pad;
  const int64_t e = s + kernel < in + pad ? s + kernel : in + pad;
  *padded_len = e - s;
  *start = s > 0 ? s : 0;
  *end = e < in ? e : in;
}

/* The divisor of an output whose window holds `padded` positions of the padded input, `inside`
 * of them in the input: PyTorch's rule. */
static inline VOLUA_HOST_DEVICE int64_t volua_avg_pool_divisor(const volua_avg_pool3d_geom *g,
                                                               int64_t padded, int64_t inside) {
  return g->divisor_override ? g->divisor_override : g->count_include_pad ? padded : inside;
}

/* Adaptive pooling over `planes` = N*C volumes: output i along a dim of size in -> out covers
 * the input [volua_adaptive_start, volua_adaptive_end). */
typedef struct volua_adaptive_pool3d_geom {
  int64_t planes;
  int64_t in[3], out[3];
  int return_indices; /* adaptive_max_pool3d only */
} volua_adaptive_pool3d_geom;

/* PyTorch's start_index and end_index, free of floating point: floor(i * in / out) and
 * ceil((i + 1) * in / out). The op checks that out * in stays below 2^62, so nothing overflows. */
static inline VOLUA_HOST_DEVICE int64_t volua_adaptive_start(int64_t i, int64_t out, int64_t in) {
  return (i / out) * in + ((i % out) * in) / out;
}
static inline VOLUA_HOST_DEVICE int64_t volua_adaptive_end(int64_t i, int64_t out, int64_t in) {
  return 1 + ((i + 1) * in - 1) / out;
}
#endif
