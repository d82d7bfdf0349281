/* kernels.h: the one header for volua's CUDA kernels: an extern "C" entry per op family,
 * taking the resolved geometry (src/op_params.h), raw device pointers and a stream.
 * Each returns 0, or a CUDA error code with "<op>: <cuda error> at file:line" in err. */
#ifndef VOLUA_KERNELS_H
#define VOLUA_KERNELS_H

#include <stdint.h>
#include <cuda_runtime_api.h>
#include "../src/op_params.h"

/* Errors after which the CUDA context is unusable (every later call fails the same way):
 * shared by the kernels' CUDA_CHECK and the runtime in src/cuda.c. */
static inline int volua_cuda_error_is_sticky(cudaError_t e) {
  switch (e) {
  case cudaErrorIllegalAddress:
  case cudaErrorLaunchFailure:
  case cudaErrorAssert:
  case cudaErrorHardwareStackError:
  case cudaErrorIllegalInstruction:
  case cudaErrorMisalignedAddress:
  case cudaErrorInvalidAddressSpace:
  case cudaErrorInvalidPc:
  case cudaErrorLaunchTimeout:
  case cudaErrorECCUncorrectable:
    return 1;
  default:
    return 0;
  }
}

#ifdef __cplusplus
extern "C" {
#endif

/* max_pool3d.cu */
int volua_cuda_max_pool3d(const volua_pool3d_geom *g, const float *x, float *y, int64_t *indices,
                          cudaStream_t s, char *err);
/* conv3d.cu */
int volua_cuda_conv3d(const volua_conv3d_geom *g, const float *x, const float *w, const float *b,
                      float *y, volua_math_mode math, cudaStream_t s, char *err);
/* conv_transpose3d.cu */
int volua_cuda_conv_transpose3d(const volua_conv_transpose3d_geom *g, const float *x, const float *w,
                                const float *b, float *y, volua_math_mode math, cudaStream_t s,
                                char *err);
/* group_norm.cu */
int volua_cuda_group_norm(const volua_group_norm_geom *g, const float *x, const float *w,
                          const float *b, float *y, cudaStream_t s, char *err);
/* mean.cu */
int volua_cuda_mean(const volua_mean_geom *g, const float *x, float *y, cudaStream_t s, char *err);
/* conv3d_gn_mean.cu: one pass; the convolution's output never goes to device memory. */
int volua_cuda_conv3d_gn_mean(const volua_conv3d_gn_mean_geom *g, const float *x, const float *cw,
                              const float *cb, const float *gw, const float *gb, float *y,
                              volua_math_mode math, cudaStream_t s, char *err);

/* elementwise.cu: `dt` is a volua_dtype (0 float32, 1 int64). */
int volua_cuda_binary(const volua_bcast_geom *g, int dt, const void *a, const void *b, void *y,
                      volua_binop op, cudaStream_t s, char *err);
int volua_cuda_binary_scalar(int64_t n, int dt, const void *a, double v, void *y, volua_binop op,
                             int scalar_first, cudaStream_t s, char *err);
/* unary: neg, abs, relu and the activations (float32; CUDA's accurate float functions, within a
 * few ulp of the CPU); int64: neg, abs, relu, clamp. p: the op's parameters; hardtanh arrives as clamp. */
int volua_cuda_unary(int64_t n, int dt, const void *a, void *y, volua_unop op,
                     const volua_unary_args *p, cudaStream_t s, char *err);
int volua_cuda_fill(int64_t n, int dt, void *y, double v, cudaStream_t s, char *err);
int volua_cuda_convert(int64_t n, int dst_dt, void *dst, int src_dt, const void *src,
                       cudaStream_t s, char *err);
/* Whole-tensor reductions; the result is copied back and the stream synchronised. */
int volua_cuda_reduce(int64_t n, int dt, const void *a, volua_reduce_op op, double *result,
                      cudaStream_t s, char *err);
int volua_cuda_max_abs_diff(int64_t n, int dt, const void *a, const void *b, double *result,
                            cudaStream_t s, char *err);
int volua_cuda_allclose(int64_t n, int dt, const void *a, const void *b, double rtol, double atol,
                        int equal_nan, int *result, cudaStream_t s, char *err);

/* pointwise.cu: a convolution's epilogue: the op offers its resolved chain before calling the
 * convolution's entry (c NULL: none), and after it asks how many of the first steps the kernels
 * applied (the rest it applies with volua_cuda_pointwise, declared in fast.h). */
void volua_cuda_epilogue_offer(const volua_pw_chain *c);
int volua_cuda_epilogue_end(void);

/* softmax.cu: softmax / log_softmax over one dim, and the reductions over dims that share its
 * walk: logsumexp, amax / amin, max / min (indices NULL: values only; dt a volua_dtype, int64
 * for max and min only). */
int volua_cuda_softmax(const volua_softmax_geom *g, const float *x, float *y, cudaStream_t s,
                       char *err);
int volua_cuda_reduce_dims(const volua_mean_geom *g, volua_dim_reduce_op op, int dt, const void *x,
                           void *y, int64_t *indices, cudaStream_t s, char *err);

/* batch_norm.cu (batch_norm, and instance_norm's running-statistics update) and layer_norm.cu: as
 * their CPU twins in src/cpu/cpu.h. */
int volua_cuda_batch_norm(const volua_batch_norm_geom *g, const float *x, const float *w, const float *b,
                          float *running_mean, float *running_var, float *y, cudaStream_t s, char *err);
int volua_cuda_instance_norm_update(const volua_batch_norm_geom *g, const float *x, float *running_mean,
                                    float *running_var, cudaStream_t s, char *err);
int volua_cuda_layer_norm(const volua_layer_norm_geom *g, const float *x, const float *w, const float *b,
                          float *y, cudaStream_t s, char *err);

/* avg_pool3d.cu */
int volua_cuda_avg_pool3d(const volua_avg_pool3d_geom *g, const float *x, float *y, cudaStream_t s,
                          char *err);
/* adaptive_pool3d.cu: adaptive_avg_pool3d and adaptive_max_pool3d */
int volua_cuda_adaptive_avg_pool3d(const volua_adaptive_pool3d_geom *g, const float *x, float *y,
                                   cudaStream_t s, char *err);
int volua_cuda_adaptive_max_pool3d(const volua_adaptive_pool3d_geom *g, const float *x, float *y,
                                   int64_t *indices, cudaStream_t s, char *err);

#ifdef __cplusplus
}
#endif

/* Kernels allocate scratch through src/cuda.c's caching allocator. */
#ifdef __cplusplus
extern "C" {
#endif
int volua_cuda_malloc(void **p, int64_t bytes, char *err);
void volua_cuda_free(void *p);
#ifdef __cplusplus
}
#endif

#endif
