/* cpu.h: the CPU backend: one reference per op, float64 accumulation, OpenMP over both cores.
 * Arguments are already validated and the geometry resolved (src/ops). Returns 0, or
 * non-zero with a message in err (only for "interrupted" or failed scratch allocations). */
#ifndef VOLUA_CPU_H
#define VOLUA_CPU_H

#include <stdint.h>
#include "../op_params.h"

int volua_cpu_max_pool3d(const volua_pool3d_geom *g, const float *x, float *y, int64_t *indices,
                         char *err);
int volua_cpu_conv3d(const volua_conv3d_geom *g, const float *x, const float *w, const float *b,
                     float *y, char *err);
/* One output row (n, co, od, oh) of conv3d, bias included, into row[0 .. out[2]) in double
 * (src/cpu/conv3d.c; conv3d_gn_mean builds on it). */
void volua_cpu_conv3d_row(const volua_conv3d_geom *g, const float *x, const float *w, const float *b,
                          int64_t n, int64_t co, int64_t od, int64_t oh, double *row);
int volua_cpu_conv_transpose3d(const volua_conv_transpose3d_geom *g, const float *x, const float *w,
                               const float *b, float *y, char *err);
int volua_cpu_group_norm(const volua_group_norm_geom *g, const float *x, const float *w,
                         const float *b, float *y, char *err);
int volua_cpu_mean(const volua_mean_geom *g, const float *x, float *y, char *err);
int volua_cpu_conv3d_gn_mean(const volua_conv3d_gn_mean_geom *g, const float *x, const float *cw,
                             const float *cb, const float *gw, const float *gb, float *y, char *err);

/* elementwise (src/cpu/elementwise.c); `dt` is a volua_dtype, both operands of that dtype */
int volua_cpu_binary(const volua_bcast_geom *g, int dt, const void *a, const void *b, void *y,
                     volua_binop op);
int volua_cpu_binary_scalar(int64_t n, int dt, const void *a, double s, void *y, volua_binop op,
                            int scalar_first);
/* unary: neg, abs, relu and the activations (float32, in double, rounded once); int64: neg, abs,
 * relu, clamp. p: the op's parameters (op_params.h); hardtanh arrives as clamp. */
int volua_cpu_unary(int64_t n, int dt, const void *a, void *y, volua_unop op,
                    const volua_unary_args *p);
int volua_cpu_fill(int64_t n, int dt, void *y, double v);
double volua_cpu_reduce(int64_t n, int dt, const void *a, volua_reduce_op op);
double volua_cpu_max_abs_diff(int64_t n, int dt, const void *a, const void *b);
int volua_cpu_allclose(int64_t n, int dt, const void *a, const void *b, double rtol, double atol,
                       int equal_nan);
void volua_cpu_convert(int64_t n, int dst_dt, void *dst, int src_dt, const void *src);

/* Fills y, laid out as (slabs, rows, cols), one row at a time: row(ctx, slab, r, buf) computes a
 * row of cols doubles into buf. Slabs run in parallel over the cores, each thread with its own
 * buffer. Stops early (and says "<op>: interrupted") on Ctrl-C. */
typedef void (*volua_cpu_row_fn)(const void *ctx, int64_t slab, int64_t r, double *buf);
int volua_cpu_rows(int64_t slabs, int64_t rows, int64_t cols, volua_cpu_row_fn row, const void *ctx,
                   float *y, const char *op, char *err);

/* Poll in long loops: returns 1 (and writes "<op>: interrupted") once Ctrl-C was pressed. */
int volua_cpu_check_interrupt(const char *op, char *err);

/* softmax family and reductions over dims (src/cpu/softmax.c, src/cpu/reductions.c): indices NULL
 * for values only; max and min give the first index of the extreme (of the first NaN) in the
 * reduced elements, walked in row-major order. */
int volua_cpu_softmax(const volua_softmax_geom *g, const float *x, float *y, char *err);
/* dt: a volua_dtype, of x and y alike (int64: max and min only). */
int volua_cpu_reduce_dims(const volua_mean_geom *g, volua_dim_reduce_op op, int dt, const void *x,
                          void *y, int64_t *indices, char *err);

/* -- batch_norm, instance_norm, layer_norm ---- */

/* batch_norm.c: training: per channel two-pass statistics, running ones (non-NULL) updated after
 * the output is written; eval: running_mean and running_var read. */
int volua_cpu_batch_norm(const volua_batch_norm_geom *g, const float *x, const float *w, const float *b,
                         float *running_mean, float *running_var, float *y, char *err);
/* instance_norm.c: instance_norm's update of running_mean / running_var (either may be NULL) with the
 * batch's mean of each instance's mean and unbiased variance (the output is group_norm's). */
int volua_cpu_instance_norm_update(const volua_batch_norm_geom *g, const float *x, float *running_mean,
                                   float *running_var, char *err);
/* layer_norm.c */
int volua_cpu_layer_norm(const volua_layer_norm_geom *g, const float *x, const float *w, const float *b,
                         float *y, char *err);

/* pooling family (src/cpu/avg_pool3d.c, src/cpu/adaptive_pool3d.c) */
int volua_cpu_avg_pool3d(const volua_avg_pool3d_geom *g, const float *x, float *y, char *err);
int volua_cpu_adaptive_avg_pool3d(const volua_adaptive_pool3d_geom *g, const float *x, float *y,
                                  char *err);
int volua_cpu_adaptive_max_pool3d(const volua_adaptive_pool3d_geom *g, const float *x, float *y,
                                  int64_t *indices, char *err);

/* pointwise.c: steps [first, c->n) of a pointwise chain on the n values x into y (y may be x),
 * each step as its op alone (the elementwise functions above), one after another. */
int volua_cpu_pointwise(const volua_pw_chain *c, int first, int64_t n, const float *x, float *y, char *err);

#endif
