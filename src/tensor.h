/* tensor.h: volua's tensor core: refcounted storage, contiguous row-major tensors, no Lua. */
#ifndef VOLUA_TENSOR_H
#define VOLUA_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#define VOLUA_MAX_DIMS 8
#define VOLUA_ERR_MAX 512

typedef enum { VOLUA_FLOAT32 = 0, VOLUA_INT64 = 1 } volua_dtype;
typedef enum { VOLUA_DEVICE_CPU = 0, VOLUA_DEVICE_CUDA = 1 } volua_device;

/* One allocation, shared by every tensor that views it. `id` is unique for the process's life
 * (never reused, unlike an address); `version` counts the writes to the data after allocation
 * (volua_storage_written), so that (id, version) names the contents: src/cuda.c's cache of
 * prepared weights keys on it. */
typedef struct volua_storage {
  void *data;
  int64_t nbytes;
  int64_t refcount;
  volua_device device;
  uint64_t id, version;
} volua_storage;

/* Every write into an existing tensor's data (fill, copy into, set) calls this before it is
 * queued: it retires what was derived from the old contents. */
static inline void volua_storage_written(volua_storage *st) {
  if (st) st->version++;
}

/* A contiguous row-major view of a storage, `offset` elements in.
 * A tensor whose storage is NULL is empty (freshly pushed or freed). */
typedef struct volua_tensor {
  volua_storage *storage;
  int64_t offset;
  int ndim;
  int64_t shape[VOLUA_MAX_DIMS];
  volua_dtype dtype;
  volua_device device;
} volua_tensor;

const char *volua_dtype_name(volua_dtype dt);
const char *volua_device_name(volua_device dev);
size_t volua_dtype_size(volua_dtype dt);

/* Element count of a shape; fails (message in err) on negative sizes or int64 overflow,
 * including overflow of the byte count for elements of `elsize` bytes. */
int volua_shape_numel(int ndim, const int64_t *shape, size_t elsize, int64_t *numel, char *err);
/* Formats a shape as "(2, 3, 4)" into buf. */
const char *volua_shape_str(int ndim, const int64_t *shape, char *buf, size_t n);

/* Allocates uninitialised storage for t (t must be empty). 0 on success. */
int volua_tensor_alloc(volua_tensor *t, int ndim, const int64_t *shape, volua_dtype dtype,
                       volua_device device, char *err);
/* volua_tensor_alloc for an op's result: a failure reads "<op>: cannot allocate the <what>
 * (<why>)", naming the op rather than the tensor core. */
int volua_tensor_alloc_result(volua_tensor *t, const char *op, const char *what, int ndim,
                              const int64_t *shape, volua_dtype dtype, volua_device device, char *err);
/* Drops t's reference to its storage; idempotent. */
void volua_tensor_free(volua_tensor *t);
/* Makes dst (empty) another view of src's storage with src's shape. */
void volua_tensor_share(volua_tensor *dst, const volua_tensor *src);

int64_t volua_tensor_numel(const volua_tensor *t);
static inline void *volua_tensor_data(const volua_tensor *t) {
  return (char *)t->storage->data + t->offset * (int64_t)volua_dtype_size(t->dtype);
}
static inline float *volua_tensor_f32(const volua_tensor *t) { return (float *)volua_tensor_data(t); }
static inline int64_t *volua_tensor_i64(const volua_tensor *t) { return (int64_t *)volua_tensor_data(t); }

/* Copies src into dst (same numel, any devices/dtypes: converting float32 <-> int64 like torch). */
int volua_tensor_copy(volua_tensor *dst, const volua_tensor *src, char *err);
/* Allocates dst on `device` and copies src there (dtype kept). */
int volua_tensor_to(volua_tensor *dst, const volua_tensor *src, volua_device device, char *err);

/* Bytes of tensor storage allocated since the binding last ran Lua's garbage collector: Lua
 * sees a tensor as a small userdata, so without this it would let gigabytes of dead tensors
 * pile up between its own collections (Torch7 tracked its heap the same way). */
extern int64_t volua_bytes_since_gc;

/* Set asynchronously by SIGINT; long CPU loops poll it and stop with "interrupted". */
extern volatile int volua_interrupted;

#endif
