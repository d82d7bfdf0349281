/* fast.h: the tensor-core fast paths (kernels/..._tc.cu). Each takes the same arguments as the simple
 * entry of kernels.h and returns 0, a CUDA error code with a message in err, or
 * VOLUA_FAST_NOT_APPLICABLE (nothing launched, err untouched) when the geometry is outside what
 * it covers: the simple entry tries it first and falls back on that value.
 * VOLUA_FAST=0 in the environment makes every fast path not applicable (for comparisons). */
#ifndef VOLUA_KERNELS_FAST_H
#define VOLUA_KERNELS_FAST_H

#include <stdint.h>
#ifndef VOLUA_TC_EMULATE
#include <cuda_runtime_api.h>
#else
typedef void *cudaStream_t;
#endif
#include "../src/op_params.h"

#define VOLUA_FAST_NOT_APPLICABLE (-1)

#ifdef __cplusplus
extern "C" {
#endif

/* conv3d_tc.cu: padding_mode "zeros", any groups, stride, dilation, padding. */
int volua_cuda_conv3d_tc(const volua_conv3d_geom *g, const float *x, const float *w, const float *b,
                         float *y, volua_math_mode math, cudaStream_t s, char *err);
/* conv3d_cl.cu: groups 1, padding_mode "zeros", both maths ("fp32" as split TF32, from 16 K steps
 * unless forced), at least 32 input and 64 output channels,
 * strides up to 8, on compute capability 9.0 (wgmma and TMA); a channels-last copy of the input.
 * Tried first by conv3d_tc.cu where its rule (or VOLUA_TC_CL=1) says so. */
int volua_cuda_conv3d_cl(const volua_conv3d_geom *g, const float *x, const float *w, const float *b, float *y,
                         volua_math_mode math, cudaStream_t s, char *err);
/* A transposed convolution's phase c of one dim (conv_transpose3d_tc.cu's phase_of): the outputs
 * o = stride*q + c, q < Q, take taps j < taps, kernel tap kfirst + j*kstep, reading input
 * i = q - ipad + j*idil. */
typedef struct volua_tconv_phase {
  int64_t Q, taps, ipad, idil, kfirst, kstep;
  int live; /* has taps and outputs */
} volua_tconv_phase;
/* conv3d_cl.cu too: a transposed convolution with groups 1 and every phase live, in both maths,
 * strides up to 8 and at most 8 phases, all in one launch; ph[d][c]: phase c of dim d,
 * c < stride[d]. Tried first by conv_transpose3d_tc.cu. */
int volua_cuda_conv_transpose3d_cl(const volua_conv_transpose3d_geom *g, const volua_tconv_phase (*ph)[64],
                                   const float *x, const float *w, const float *b, float *y,
                                   volua_math_mode math, cudaStream_t s, char *err);
/* conv_transpose3d_tc.cu: any groups, strides up to 64; phase-decomposed (only taps that land). */
int volua_cuda_conv_transpose3d_tc(const volua_conv_transpose3d_geom *g, const float *x, const float *w,
                                   const float *b, float *y, volua_math_mode math, cudaStream_t s,
                                   char *err);
/* conv_transpose3d.cu: the whole output again by the direct gather, where the device flag *flag holds
 * `stamp` when the launch runs (the fast path's every-phase GEMM met a non-finite input). */
int volua_cuda_conv_transpose3d_redo(const volua_conv_transpose3d_geom *g, const float *x, const float *w,
                                     const float *b, float *y, volua_math_mode math, const int *flag, int stamp,
                                     cudaStream_t s, char *err);
/* conv3d_pointwise.cu: 1x1x1, stride 1, no padding, groups 1 (any padding_mode); both maths, any
 * compute capability the build has code for (mma.sync TF32). Tried first by conv3d.cu. */
int volua_cuda_conv3d_pointwise(const volua_conv3d_geom *g, const float *x, const float *w, const float *b,
                                float *y, volua_math_mode math, cudaStream_t s, char *err);
/* conv3d_s2d.cu: strides above 1 (at most 8), dilation 1, padding_mode "zeros": space-to-depth
 * copies of the input and weights, then conv3d_tc.cu's path at stride 1. Tried by conv3d.cu where
 * conv3d_tc.cu declines. */
int volua_cuda_conv3d_s2d(const volua_conv3d_geom *g, const float *x, const float *w, const float *b,
                          float *y, volua_math_mode math, cudaStream_t s, char *err);
/* conv3d.cu: the whole output again by the direct kernel, where the device flag *flag holds `stamp`
 * when the launch runs (conv3d_s2d.cu's copy met a non-finite input). */
int volua_cuda_conv3d_redo(const volua_conv3d_geom *g, const float *x, const float *w, const float *b, float *y,
                           volua_math_mode math, const int *flag, int stamp, cudaStream_t s, char *err);
/* conv3d_depthwise.cu: groups > 1 with at most 2 input and 8 output channels per group (depthwise),
 * padding_mode "zeros"; tried before conv3d_tc.cu. */
int volua_cuda_conv3d_depthwise(const volua_conv3d_geom *g, const float *x, const float *w, const float *b,
                                float *y, volua_math_mode math, cudaStream_t s, char *err);
/* conv3d_gn_mean_tc.cu: conv groups 1, padding_mode "zeros", at most 32 conv out channels,
 * N <= 65535; the conv output never goes to device memory. */
int volua_cuda_conv3d_gn_mean_tc(const volua_conv3d_gn_mean_geom *g, const float *x, const float *cw,
                                 const float *cb, const float *gw, const float *gb, float *y,
                                 volua_math_mode math, cudaStream_t s, char *err);

/* conv3d.cu: for padding modes other than "zeros", which the fast paths do not read: x padded as
 * F.pad would (reflect, replicate, circular) into *xp (allocated here; the caller frees it with
 * volua_cuda_free) and in *pg the same convolution over it with no padding (its rows rounded up to
 * a multiple of 4 floats: pad_hi[2] is minus the extra columns, which no output reads). 0, or
 * VOLUA_FAST_NOT_APPLICABLE where there is no memory for the copy (err untouched, the CUDA error
 * cleared), or a launch error (err). */
int volua_cuda_conv3d_pad(const volua_conv3d_geom *g, const float *x, float **xp, volua_conv3d_geom *pg,
                          cudaStream_t s, char *err);

/* conv3d_tc.cu: the non-finite flag of the split-TF32 (math "fp32") GEMMs. Their k-loops add a
 * k-step's three products in one accumulator (tc_promote, tc_prims.cuh), so an infinite input or
 * weight makes NaN, or an infinity of the wrong sign, where a float sum has an infinity. A GEMM
 * whose sums end with a value that is not finite writes the call's stamp to the flag, and the op's
 * entry then redoes the whole output by the direct kernel, gated on the device by the flag
 * (volua_cuda_conv3d_redo, volua_cuda_conv_transpose3d_redo): an input with an infinity or NaN costs
 * the direct kernel's time, any other input one launch that returns at once.
 * volua_cuda_nf_begin: a new stamp for this call (the flag, one int for the process, is allocated
 * and cleared on first use); 0, or a CUDA error in err. volua_cuda_nf_get: the flag (NULL outside
 * a call) and the stamp, for the GEMMs' parameters. */
int volua_cuda_nf_begin(cudaStream_t s, char *err);
void volua_cuda_nf_get(int **flag, int *stamp);
/* volua_cuda_nf_end: the call is over; whether a GEMM took the flag since volua_cuda_nf_begin (else
 * no redo is due), and the flag and stamp. */
int volua_cuda_nf_end(int **flag, int *stamp);

/* pointwise.cu: a convolution's epilogue (a pointwise chain, src/op_params.h) offered by its op
 * (volua_cuda_epilogue_offer, kernels.h). volua_cuda_epilogue_take: a tensor-core launch whose every
 * output goes through its store epilogue takes the chain's first steps that it can apply in its
 * registers (pointwise.cuh's pw_cheap; a channel step only for an output of C channels of S values
 * each) into dst, and returns how many (0: none offered, or the first cannot be taken). Every
 * launch of one call takes the same steps (a redo of the output applies them after it:
 * volua_cuda_epilogue_redo). */
int volua_cuda_epilogue_take(volua_pw_chain *dst, int64_t C, int64_t S);
/* After a gated redo of a convolution's n outputs y (the plain output): the steps taken, gated on
 * the same flag and stamp (nothing where none were taken). */
int volua_cuda_epilogue_redo(int64_t n, float *y, const int *flag, int stamp, cudaStream_t s, char *err);
/* The steps [first, last) of chain c on the n values x into y (y may be x); gate: NULL, or a device
 * flag: unless it holds `stamp` the launch writes nothing (after a gated redo). */
int volua_cuda_pointwise(const volua_pw_chain *c, int first, int last, int64_t n, const float *x, float *y,
                         const int *gate, int stamp, cudaStream_t s, char *err);

/* Calls served by a fast path since start (specs check that a shape took it). */
int64_t volua_cuda_fast_calls(void);
/* conv3d_tc.cu: counts one served call (used by the three fast paths). */
void volua_cuda_fast_note_call(void);
/* conv3d_tc.cu: VOLUA_FAST=0 is set (every fast path declines). */
int volua_cuda_fast_disabled(void);

/* bench_timer.cu: CUDA events on volua's stream and an L2 flush, for vol.bench (src/lua_bench.c). */
typedef struct volua_cuda_timer volua_cuda_timer;
int volua_cuda_timer_create(volua_cuda_timer **t, char *err);
void volua_cuda_timer_destroy(volua_cuda_timer *t);
int volua_cuda_timer_start(volua_cuda_timer *t, char *err);
/* Records the stop event, waits for it and gives the time since the start event. */
int volua_cuda_timer_stop(volua_cuda_timer *t, float *ms, char *err);
int volua_cuda_flush(void *buf, int64_t bytes, int value, char *err);

/* The caching allocator of src/cuda.c (also declared by kernels.h). */
int volua_cuda_malloc(void **p, int64_t bytes, char *err);
void volua_cuda_free(void *p);
/* src/cuda.c's prepared weights: a buffer of `bytes` kept for the weight at w (the one the op named)
 * and the layout `recipe` (nrecipe values that decide the contents), or NULL where none can be kept
 * (another pointer, the cache off, no memory: use a scratch buffer). *fill is 0 where the buffer
 * already holds the layout of the weight's current contents, 1 where the caller must write it; a
 * caller whose write then fails to launch hands it back with volua_cuda_derived_failed. */
void *volua_cuda_derived(const void *w, const int64_t *recipe, int nrecipe, int64_t bytes, int *fill, char *err);
void volua_cuda_derived_failed(void *buf);
/* A kept buffer is the caller's until it hands it back, after queueing the launches that read it:
 * volua_cuda_derived_release (it stays kept). Returns 1 where buf is a kept buffer, 0 where it is
 * not one (then the caller frees it). */
int volua_cuda_derived_release(void *buf);

#ifdef __cplusplus
}
#endif

#endif
