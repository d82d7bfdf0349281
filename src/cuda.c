/* cuda.c: the GPU runtime behind src/cuda.h: lazy device discovery, one stream, a caching
 * allocator for device memory, copies. Without VOLUA_CUDA every call is a stub that says so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.h"
#include "tensor.h" /* VOLUA_ERR_MAX */

int volua_cuda_poison_enabled(void) {
  /* Read once: the switch is for test runs, set before volua starts. */
  static int value = -1;
  if (value < 0) {
    const char *s = getenv("VOLUA_POISON");
    value = s && s[0] && strcmp(s, "0") != 0;
  }
  return value;
}

/* -- prepared weights kept across calls ----
 *
 * A kernel that lays a weight tensor out anew on every call (conv3d_cl.cu: (tap, C_out, C_in),
 * rounded to TF32; tc_core.cuh's tc_prep_weights: the fragment order of conv3d_tc.cu, the fused
 * conv3d_group_norm_mean and the transposed phases; conv_transpose3d_tc.cu's tc_prep_phases: all
 * phases as one GEMM's columns) can keep the result here instead: a device
 * buffer keyed by the weight's storage (id and version, src/tensor.h), its address and the
 * kernel's recipe (the sizes and strides that decide the layout). A later call with the same
 * weights, unwritten since, finds it and skips the copy (bench/NOTES.md, twenty-fourth session:
 * 512 -> 512 of (1, 512, 4, 8, 8) took 0.052 ms in "tf32" with the copy, 0.033 without). A write
 * to the storage (fill, copy into, set) bumps its version, so the old entry never matches again;
 * freeing the storage drops its entries; at most DERIVED_MAX entries and DERIVED_BYTES in all, the
 * least recently used going first; the allocator drops them all before it reports out of memory.
 * An entry handed to the call in progress is pinned until the caller releases it
 * (volua_cuda_derived_release, or _failed), and neither eviction nor that drop touches it: the
 * launches that read it are not queued yet. The op names the weight of the call it makes
 * (volua_cuda_weight_id_set); a kernel asking for another pointer (a padded or space-to-depth
 * copy) gets no entry. Host thread only, like the ops. VOLUA_WCACHE=0: off. */
#define DERIVED_MAX 256
#define DERIVED_BYTES ((int64_t)2 << 30) /* VOLUA_WCACHE_BYTES=n: another cap (for testing) */
#define DERIVED_ENTRY_MAX ((int64_t)512 << 20)
#define RECIPE_MAX 32 /* int64_t values */

typedef struct derived {
  void *buf;
  int64_t bytes;
  const void *w;
  uint64_t storage, version, used;
  int pinned; /* handed out to the call in progress, not yet released: never evicted */
  int nrecipe;
  int64_t recipe[RECIPE_MAX];
} derived;

static derived dcache[DERIVED_MAX];
static int n_derived = 0;
static int64_t derived_total = 0;
static uint64_t derived_clock = 0;
static struct {
  const void *ptr;
  uint64_t storage, version;
} weight_id = {NULL, 0, 0};

static int derived_enabled(void) {
  static int value = -1;
  if (value < 0) {
    const char *s = getenv("VOLUA_WCACHE");
    value = !(s && strcmp(s, "0") == 0);
  }
  return value;
}

static int64_t derived_cap(void) {
  static int64_t cap = -1;
  if (cap < 0) {
    const char *s = getenv("VOLUA_WCACHE_BYTES");
    cap = s && atoll(s) > 0 ? atoll(s) : DERIVED_BYTES;
  }
  return cap;
}

void volua_cuda_weight_id_set(const void *ptr, uint64_t storage, uint64_t version) {
  weight_id.ptr = ptr;
  weight_id.storage = storage;
  weight_id.version = version;
}

void volua_cuda_weight_id_clear(void) { volua_cuda_weight_id_set(NULL, 0, 0); }

static void derived_drop(int i) {
  volua_cuda_free(dcache[i].buf); /* stream-ordered: reused only by work queued after */
  derived_total -= dcache[i].bytes;
  dcache[i] = dcache[--n_derived];
}

void *volua_cuda_derived(const void *w, const int64_t *recipe, int nrecipe, int64_t bytes, int *fill, char *err) {
  *fill = 1;
  if (!w || w != weight_id.ptr || !derived_enabled() || nrecipe > RECIPE_MAX || bytes <= 0 ||
      bytes > DERIVED_ENTRY_MAX)
    return NULL;
  for (int i = 0; i < n_derived; i++) {
    derived *d = &dcache[i];
    if (d->storage != weight_id.storage) continue;
    if (d->version != weight_id.version && !d->pinned) { /* written since: it can never match again */
      derived_drop(i--);
      continue;
    }
    if (d->version == weight_id.version && d->w == w && d->nrecipe == nrecipe && d->bytes == bytes &&
        memcmp(d->recipe, recipe, (size_t)nrecipe * sizeof *recipe) == 0) {
      d->used = ++derived_clock;
      d->pinned++;
      *fill = 0;
      return d->buf;
    }
  }
  /* room: the least recently used go first, but none the call in progress holds (a transposed
   * convolution's two sub-GEMMs hold two entries at once); the cap may be passed meanwhile */
  while (n_derived == DERIVED_MAX || derived_total + bytes > derived_cap()) {
    int lru = -1;
    for (int i = 0; i < n_derived; i++)
      if (!dcache[i].pinned && (lru < 0 || dcache[i].used < dcache[lru].used)) lru = i;
    if (lru < 0) break;
    derived_drop(lru);
  }
  if (n_derived == DERIVED_MAX) return NULL;
  void *buf = NULL;
  if (volua_cuda_malloc(&buf, bytes, err)) return NULL; /* the caller's own scratch then */
  derived *d = &dcache[n_derived++];
  d->buf = buf;
  d->bytes = bytes;
  d->w = w;
  d->storage = weight_id.storage;
  d->version = weight_id.version;
  d->used = ++derived_clock;
  d->pinned = 1;
  d->nrecipe = nrecipe;
  memcpy(d->recipe, recipe, (size_t)nrecipe * sizeof *recipe);
  derived_total += bytes;
  volua_bytes_since_gc += bytes; /* (Lua's collector frees the weights, and with them these) */
  return buf;
}

/* The entry whose buffer is buf, or -1. */
static int derived_find(const void *buf) {
  if (!buf) return -1;
  for (int i = 0; i < n_derived; i++)
    if (dcache[i].buf == buf) return i;
  return -1;
}

int volua_cuda_derived_release(void *buf) {
  const int i = derived_find(buf);
  if (i < 0) return 0;
  if (dcache[i].pinned > 0) dcache[i].pinned--;
  return 1;
}

void volua_cuda_derived_failed(void *buf) {
  const int i = derived_find(buf);
  if (i >= 0) derived_drop(i);
}

void volua_cuda_derived_forget(uint64_t storage) {
  for (int i = 0; i < n_derived; i++)
    if (dcache[i].storage == storage) derived_drop(i--);
}

void volua_cuda_derived_clear(void) { /* all but those the call in progress holds */
  for (int i = n_derived - 1; i >= 0; i--)
    if (!dcache[i].pinned) derived_drop(i);
}

int volua_cuda_derived_count(int64_t *bytes) {
  if (bytes) *bytes = derived_total;
  return n_derived;
}

#ifndef VOLUA_CUDA

/* -- stubs: built without CUDA ---- */

static int no_cuda(const char *what, char *err) {
  if (err) snprintf(err, VOLUA_ERR_MAX, "cuda: %s: volua was built without CUDA", what);
  return 1;
}

int volua_cuda_available(void) { return 0; }
const char *volua_cuda_unavailable_reason(void) { return "built without CUDA"; }
const char *volua_cuda_device_name(void) { return ""; }
int volua_cuda_malloc(void **p, int64_t bytes, char *err) {
  (void)bytes;
  *p = NULL;
  return no_cuda("malloc", err);
}
void volua_cuda_free(void *p) { (void)p; }
void volua_cuda_memory_stats(volua_cuda_mem_stats *s) { memset(s, 0, sizeof *s); }
void volua_cuda_empty_cache(void) {}
int volua_cuda_memcpy(void *dst, const void *src, int64_t bytes, volua_copy_kind kind, char *err) {
  (void)dst, (void)src, (void)bytes, (void)kind;
  return no_cuda("memcpy", err);
}
int volua_cuda_sync(char *err) { return no_cuda("sync", err); }
void *volua_cuda_stream(void) { return NULL; }

#else

#include <pthread.h>
#include <cuda_runtime_api.h>
#include "../kernels/kernels.h" /* volua_cuda_error_is_sticky */

static const double GIB = 1024.0 * 1024.0 * 1024.0;

/* -- errors ---- */


/* "cuda: <what> failed: <text> (<code>)", with a warning when the context is lost. */
static int cuda_fail(char *err, const char *what, cudaError_t e) {
  if (err)
    snprintf(err, VOLUA_ERR_MAX, "cuda: %s failed: %s (%d)%s", what, cudaGetErrorString(e), (int)e,
             volua_cuda_error_is_sticky(e) ? "; the GPU context is lost, restart volua to use the GPU again" : "");
  return 1;
}

/* -- discovery, once ---- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int available = 0;
static char reason[256] = "";
static char device_line[256] = "";
static cudaStream_t stream = NULL;

static void init(void) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    snprintf(reason, sizeof reason, "cudaGetDeviceCount failed: %s (%d)", cudaGetErrorString(e), (int)e);
    cudaGetLastError();
    return;
  }
  if (count == 0) {
    snprintf(reason, sizeof reason, "no CUDA device found");
    return;
  }
  struct cudaDeviceProp prop;
  if ((e = cudaSetDevice(0)) != cudaSuccess ||
      (e = cudaGetDeviceProperties(&prop, 0)) != cudaSuccess ||
      /* Non-blocking: our stream does not wait on the legacy default stream; every copy and
       * memset goes through this stream, so ordering is the stream's. */
      (e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)) != cudaSuccess) {
    snprintf(reason, sizeof reason, "CUDA initialisation failed: %s (%d)", cudaGetErrorString(e), (int)e);
    cudaGetLastError();
    return;
  }
  snprintf(device_line, sizeof device_line, "%.200s, %d SMs, %.0f GiB", prop.name,
           prop.multiProcessorCount, (double)prop.totalGlobalMem / GIB);
  available = 1;
}

int volua_cuda_available(void) {
  pthread_once(&init_once, init);
  return available;
}

const char *volua_cuda_unavailable_reason(void) {
  pthread_once(&init_once, init);
  return reason;
}

const char *volua_cuda_device_name(void) {
  pthread_once(&init_once, init);
  return device_line;
}

void *volua_cuda_stream(void) {
  pthread_once(&init_once, init);
  return (void *)stream;
}

static int need_gpu(const char *what, char *err) {
  if (volua_cuda_available()) return 0;
  if (err) snprintf(err, VOLUA_ERR_MAX, "cuda: %s: no usable GPU (%s)", what, reason);
  return 1;
}

/* -- caching allocator ----
 * As PyTorch's and cutorch's: sizes are rounded (to a power of two from 512 B up to 1 MiB, so
 * that the few small classes reach a steady state quickly under shapes that vary; 2 MiB steps above),
 * freed blocks go to a free list and are handed out again to a request of about the same
 * rounded size (best fit, at most 2x for small and 1.25x for large blocks, since blocks are
 * not split). All work runs on one stream, so a block freed by the host can be reused at
 * once: the next kernel that writes it is ordered after every kernel that read it.
 * cudaFree happens only in volua_cuda_empty_cache (or on a failed cudaMalloc). */

#define SMALL_LIMIT (1 << 20)
#define SMALL_STEP 512
#define LARGE_STEP (2 << 20)

typedef struct block {
  void *ptr;
  int64_t size;
} block;

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static volua_cuda_mem_stats stats;

/* Free list: unordered array, scanned for the best fit (it holds a few hundred blocks at most). */
static block *free_blocks = NULL;
static int64_t n_free = 0, cap_free = 0;

/* Live blocks: open-addressing hash map from pointer to size, linear probing,
 * backward-shift deletion (no tombstones). ptr == NULL marks an empty slot. */
static block *live = NULL;
static int64_t n_live = 0, cap_live = 0; /* cap_live is 0 or a power of two */

static uint64_t hash_ptr(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

static void live_put_nogrow(block b) {
  uint64_t mask = (uint64_t)cap_live - 1, i = hash_ptr(b.ptr) & mask;
  while (live[i].ptr) i = (i + 1) & mask;
  live[i] = b;
  n_live++;
}

static int live_put(block b) {
  if ((n_live + 1) * 2 > cap_live) {
    int64_t old_cap = cap_live, new_cap = cap_live ? cap_live * 2 : 64;
    block *old = live, *fresh = calloc((size_t)new_cap, sizeof *fresh);
    if (!fresh) return 1;
    live = fresh;
    cap_live = new_cap;
    n_live = 0;
    for (int64_t i = 0; i < old_cap; i++)
      if (old[i].ptr) live_put_nogrow(old[i]);
    free(old);
  }
  live_put_nogrow(b);
  return 0;
}

/* Removes p from the live map; returns its size, or -1 if p is not a live block. */
static int64_t live_take(const void *p) {
  if (!cap_live) return -1;
  uint64_t mask = (uint64_t)cap_live - 1, i = hash_ptr(p) & mask;
  while (live[i].ptr && live[i].ptr != p) i = (i + 1) & mask;
  if (!live[i].ptr) return -1;
  int64_t size = live[i].size;
  /* Backward shift: move later entries of the probe run into the hole when that keeps them
   * reachable from their home slot. */
  uint64_t hole = i, j = i;
  for (;;) {
    j = (j + 1) & mask;
    if (!live[j].ptr) break;
    uint64_t home = hash_ptr(live[j].ptr) & mask;
    int reachable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
    if (reachable) {
      live[hole] = live[j];
      hole = j;
    }
  }
  live[hole].ptr = NULL;
  live[hole].size = 0;
  n_live--;
  return size;
}

static int free_push(block b) {
  if (n_free == cap_free) {
    int64_t nc = cap_free ? cap_free * 2 : 64;
    block *nb = realloc(free_blocks, (size_t)nc * sizeof *nb);
    if (!nb) return 1;
    free_blocks = nb;
    cap_free = nc;
  }
  free_blocks[n_free++] = b;
  return 0;
}

static int64_t round_size(int64_t bytes) {
  if (bytes <= SMALL_LIMIT) {
    int64_t s = SMALL_STEP;
    while (s < bytes) s *= 2;
    return s;
  }
  return (bytes + LARGE_STEP - 1) / LARGE_STEP * LARGE_STEP;
}

/* cudaFree of every cached block; caller holds mem_lock. */
static void empty_cache_locked(void) {
  if (n_free) cudaStreamSynchronize(stream); /* cudaFree syncs too; be explicit */
  for (int64_t i = 0; i < n_free; i++) {
    cudaFree(free_blocks[i].ptr); /* fails only on a lost context: the memory is gone anyway */
    stats.reserved -= free_blocks[i].size;
    stats.num_frees++;
  }
  n_free = 0;
  cudaGetLastError();
}

int volua_cuda_malloc(void **p, int64_t bytes, char *err) {
  *p = NULL;
  if (need_gpu("malloc", err)) return 1;
  if (bytes < 0 || bytes > ((int64_t)1 << 62)) {
    snprintf(err, VOLUA_ERR_MAX, "cuda: malloc: invalid size %lld bytes", (long long)bytes);
    return 1;
  }
  if (bytes == 0) return 0;
  int64_t size = round_size(bytes);
  int64_t limit = size <= SMALL_LIMIT ? 2 * size : size + size / 4;
  pthread_mutex_lock(&mem_lock);
  int64_t best = -1;
  for (int64_t i = 0; i < n_free; i++) {
    int64_t s = free_blocks[i].size;
    if (s >= size && s <= limit && (best < 0 || s < free_blocks[best].size)) {
      best = i;
      if (s == size) break;
    }
  }
  block b;
  if (best >= 0) {
    b = free_blocks[best];
    free_blocks[best] = free_blocks[--n_free];
  } else {
    void *d = NULL;
    cudaError_t e = cudaMalloc(&d, (size_t)size);
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError(); /* not sticky: clear it so that the next launch check does not see it */
      empty_cache_locked();
      e = cudaMalloc(&d, (size_t)size);
    }
    if (e == cudaErrorMemoryAllocation && n_derived > 0) { /* then the prepared weights too */
      cudaGetLastError();
      pthread_mutex_unlock(&mem_lock);
      volua_cuda_derived_clear(); /* (volua_cuda_free takes the lock) */
      pthread_mutex_lock(&mem_lock);
      empty_cache_locked();
      e = cudaMalloc(&d, (size_t)size);
    }
    if (e != cudaSuccess) {
      cudaGetLastError();
      if (e == cudaErrorMemoryAllocation) {
        size_t free_b = 0, total_b = 0;
        cudaMemGetInfo(&free_b, &total_b);
        cudaGetLastError();
        snprintf(err, VOLUA_ERR_MAX,
                 "cuda: out of memory: tried to allocate %.2f GiB (%.2f GiB allocated, %.2f GiB "
                 "reserved, %.2f GiB free on the device)",
                 (double)bytes / GIB, (double)stats.allocated / GIB, (double)stats.reserved / GIB,
                 (double)free_b / GIB);
      } else {
        char what[96];
        snprintf(what, sizeof what, "cudaMalloc of %.2f GiB", (double)bytes / GIB);
        cuda_fail(err, what, e);
      }
      pthread_mutex_unlock(&mem_lock);
      return 1;
    }
    b.ptr = d;
    b.size = size;
    stats.reserved += size;
    stats.num_mallocs++;
  }
  if (live_put(b)) {
    free_push(b); /* keep it cached; the host is out of memory for the map */
    pthread_mutex_unlock(&mem_lock);
    snprintf(err, VOLUA_ERR_MAX, "cuda: malloc: out of host memory for the allocator's map");
    return 1;
  }
  stats.allocated += b.size;
  if (stats.allocated > stats.peak_allocated) stats.peak_allocated = stats.allocated;
  pthread_mutex_unlock(&mem_lock);
  *p = b.ptr;
  /* VOLUA_POISON=1: every new block NaN (all bits set), tensors and the kernels' scratch alike, so
   * that a read of what nobody wrote shows */
  if (volua_cuda_poison_enabled()) cudaMemsetAsync(b.ptr, 0xFF, (size_t)bytes, (cudaStream_t)volua_cuda_stream());
  return 0;
}

void volua_cuda_free(void *p) {
  if (!p) return;
  pthread_mutex_lock(&mem_lock);
  int64_t size = live_take(p);
  if (size >= 0) {
    stats.allocated -= size;
    block b = {p, size};
    if (free_push(b)) { /* no host memory to cache it: give it back */
      cudaFree(p);
      cudaGetLastError();
      stats.reserved -= size;
      stats.num_frees++;
    }
  }
  /* A pointer we never handed out is ignored: freeing it would corrupt the device heap. */
  pthread_mutex_unlock(&mem_lock);
}

void volua_cuda_memory_stats(volua_cuda_mem_stats *s) {
  pthread_mutex_lock(&mem_lock);
  *s = stats;
  pthread_mutex_unlock(&mem_lock);
}

void volua_cuda_empty_cache(void) {
  if (!volua_cuda_available()) return;
  volua_cuda_derived_clear();
  pthread_mutex_lock(&mem_lock);
  empty_cache_locked();
  pthread_mutex_unlock(&mem_lock);
}

/* -- copies and synchronisation ---- */

int volua_cuda_memcpy(void *dst, const void *src, int64_t bytes, volua_copy_kind kind, char *err) {
  static const char *names[] = {"copy to the GPU", "copy from the GPU", "copy on the GPU"};
  static const enum cudaMemcpyKind kinds[] = {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
                                              cudaMemcpyDeviceToDevice};
  if (need_gpu("memcpy", err)) return 1;
  if (kind < VOLUA_COPY_H2D || kind > VOLUA_COPY_D2D || bytes < 0) {
    snprintf(err, VOLUA_ERR_MAX, "cuda: memcpy: invalid kind %d or size %lld", (int)kind,
             (long long)bytes);
    return 1;
  }
  if (bytes == 0) return 0;
  cudaError_t e = cudaMemcpyAsync(dst, src, (size_t)bytes, kinds[kind], stream);
  if (e != cudaSuccess) return cuda_fail(err, names[kind], e);
  /* Host memory is pageable: wait until the copy is done before the caller reuses or reads
   * the host buffer. Device-to-device copies stay queued on the stream. */
  if (kind != VOLUA_COPY_D2D && (e = cudaStreamSynchronize(stream)) != cudaSuccess)
    return cuda_fail(err, names[kind], e);
  return 0;
}

int volua_cuda_sync(char *err) {
  if (need_gpu("sync", err)) return 1;
  cudaError_t e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) return cuda_fail(err, "sync", e);
  return 0;
}

#endif
