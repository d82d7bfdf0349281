/* tensor.c: storage lifetime, shapes with overflow checks, and copies between devices and dtypes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor.h"
#include "cuda.h"
#include "cpu/cpu.h"
#ifdef VOLUA_CUDA
#include "../kernels/kernels.h"
#endif

volatile int volua_interrupted = 0;
int64_t volua_bytes_since_gc = 0;

const char *volua_dtype_name(volua_dtype dt) { return dt == VOLUA_INT64 ? "int64" : "float32"; }
const char *volua_device_name(volua_device dev) { return dev == VOLUA_DEVICE_CUDA ? "cuda" : "cpu"; }
size_t volua_dtype_size(volua_dtype dt) { return dt == VOLUA_INT64 ? 8 : 4; }

const char *volua_shape_str(int ndim, const int64_t *shape, char *buf, size_t n) {
  size_t len = 0;
  len += (size_t)snprintf(buf + len, n - len, "(");
  for (int i = 0; i < ndim && len < n; i++)
    len += (size_t)snprintf(buf + len, n - len, i ? ", %lld" : "%lld", (long long)shape[i]);
  if (len < n) snprintf(buf + len, n - len, ndim == 1 ? ",)" : ")");
  return buf;
}

int volua_shape_numel(int ndim, const int64_t *shape, size_t elsize, int64_t *numel, char *err) {
  char s[256];
  if (ndim < 0 || ndim > VOLUA_MAX_DIMS) {
    snprintf(err, VOLUA_ERR_MAX, "tensor: rank %d is outside 0..%d", ndim, VOLUA_MAX_DIMS);
    return 1;
  }
  /* The product of the non-zero sizes must fit too, even when a zero makes numel 0: numpy and
   * torch refuse such shapes, and code that multiplies sizes (strides, views) would overflow. */
  int64_t n = 1;
  int zero = 0;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0) {
      snprintf(err, VOLUA_ERR_MAX, "tensor: size %lld of dim %d in shape %s is negative",
               (long long)shape[i], i + 1, volua_shape_str(ndim, shape, s, sizeof s));
      return 1;
    }
    if (shape[i] == 0) zero = 1;
    else if (__builtin_mul_overflow(n, shape[i], &n)) goto overflow;
  }
  int64_t bytes;
  if (__builtin_mul_overflow(n, (int64_t)elsize, &bytes)) goto overflow;
  *numel = zero ? 0 : n;
  return 0;
overflow:
  snprintf(err, VOLUA_ERR_MAX, "tensor: shape %s has more elements than int64 can count",
           volua_shape_str(ndim, shape, s, sizeof s));
  return 1;
}

/* Shapes were checked by volua_shape_numel: the non-zero sizes' product fits in int64. */
int64_t volua_tensor_numel(const volua_tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++) {
    if (t->shape[i] == 0) return 0;
    n *= t->shape[i];
  }
  return n;
}

int volua_tensor_alloc(volua_tensor *t, int ndim, const int64_t *shape, volua_dtype dtype,
                       volua_device device, char *err) {
  int64_t numel;
  if (volua_shape_numel(ndim, shape, volua_dtype_size(dtype), &numel, err)) return 1;
  int64_t nbytes = numel * (int64_t)volua_dtype_size(dtype);
  volua_storage *st = calloc(1, sizeof *st);
  if (!st) { snprintf(err, VOLUA_ERR_MAX, "tensor: out of host memory"); return 1; }
  static uint64_t next_id = 0;
  st->nbytes = nbytes;
  st->refcount = 1;
  st->device = device;
  st->id = ++next_id;
  if (device == VOLUA_DEVICE_CUDA) {
    /* (VOLUA_POISON=1: the allocator fills it with NaN) */
    if (volua_cuda_malloc(&st->data, nbytes > 0 ? nbytes : 1, err)) { free(st); return 1; }
  } else {
    /* 64-byte alignment keeps vector loads aligned; at least 1 byte so data is never NULL. */
    size_t sz = ((size_t)(nbytes > 0 ? nbytes : 1) + 63) & ~(size_t)63;
    st->data = aligned_alloc(64, sz);
    if (!st->data) {
      snprintf(err, VOLUA_ERR_MAX, "tensor: out of host memory allocating %.3f GiB",
               (double)nbytes / (1024.0 * 1024.0 * 1024.0));
      free(st);
      return 1;
    }
  }
  volua_bytes_since_gc += nbytes;
  t->storage = st;
  t->offset = 0;
  t->ndim = ndim;
  for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
  t->dtype = dtype;
  t->device = device;
  return 0;
}

int volua_tensor_alloc_result(volua_tensor *t, const char *op, const char *what, int ndim,
                              const int64_t *shape, volua_dtype dtype, volua_device device, char *err) {
  if (!volua_tensor_alloc(t, ndim, shape, dtype, device, err)) return 0;
  char why[VOLUA_ERR_MAX];
  snprintf(why, sizeof why, "%s", err);
  snprintf(err, VOLUA_ERR_MAX, "%s: cannot allocate the %s (%.400s)", op, what, why);
  return 1;
}

void volua_tensor_free(volua_tensor *t) {
  volua_storage *st = t->storage;
  if (!st) return;
  t->storage = NULL;
  if (--st->refcount > 0) return;
  if (st->device == VOLUA_DEVICE_CUDA) {
    volua_cuda_derived_forget(st->id); /* its prepared weights go with it */
    volua_cuda_free(st->data);
  }
  else free(st->data);
  free(st);
}

void volua_tensor_share(volua_tensor *dst, const volua_tensor *src) {
  *dst = *src;
  dst->storage->refcount++;
}

int volua_tensor_copy(volua_tensor *dst, const volua_tensor *src, char *err) {
  int64_t n = volua_tensor_numel(src);
  if (n != volua_tensor_numel(dst)) {
    char a[128], b[128];
    snprintf(err, VOLUA_ERR_MAX, "copy: source has %lld elements %s but destination has %lld %s",
             (long long)n, volua_shape_str(src->ndim, src->shape, a, sizeof a),
             (long long)volua_tensor_numel(dst), volua_shape_str(dst->ndim, dst->shape, b, sizeof b));
    return 1;
  }
  if (n == 0) return 0;
  volua_storage_written(dst->storage);
  void *d = volua_tensor_data(dst);
  const void *s = volua_tensor_data(src);
  int64_t bytes = n * (int64_t)volua_dtype_size(src->dtype);
  if (src->device == VOLUA_DEVICE_CPU && dst->device == VOLUA_DEVICE_CPU) {
    if (src->dtype == dst->dtype) memmove(d, s, (size_t)bytes);
    else volua_cpu_convert(n, dst->dtype, d, src->dtype, s);
    return 0;
  }
  if (src->dtype == dst->dtype) {
    volua_copy_kind kind = src->device == VOLUA_DEVICE_CPU   ? VOLUA_COPY_H2D
                           : dst->device == VOLUA_DEVICE_CPU ? VOLUA_COPY_D2H
                                                             : VOLUA_COPY_D2D;
    return volua_cuda_memcpy(d, s, bytes, kind, err);
  }
  /* Different dtypes across devices: move first, then convert where the destination lives. */
  volua_tensor tmp = {0};
  if (volua_tensor_to(&tmp, src, dst->device, err)) return 1;
  int rc;
  if (dst->device == VOLUA_DEVICE_CPU) {
    volua_cpu_convert(n, dst->dtype, d, tmp.dtype, volua_tensor_data(&tmp));
    rc = 0;
  } else {
#ifdef VOLUA_CUDA
    rc = volua_cuda_convert(n, dst->dtype, d, tmp.dtype, volua_tensor_data(&tmp),
                            (cudaStream_t)volua_cuda_stream(), err);
#else
    snprintf(err, VOLUA_ERR_MAX, "copy: volua was built without CUDA");
    rc = 1;
#endif
  }
  volua_tensor_free(&tmp);
  return rc;
}

int volua_tensor_to(volua_tensor *dst, const volua_tensor *src, volua_device device, char *err) {
  if (volua_tensor_alloc(dst, src->ndim, src->shape, src->dtype, device, err)) return 1;
  if (volua_tensor_copy(dst, src, err)) { volua_tensor_free(dst); return 1; }
  return 0;
}
