/* cuda.h: the GPU runtime as volua's core sees it: device discovery, the caching allocator,
 * copies. Built to stubs that report "built without CUDA" when nvcc was not there. No Lua. */
#ifndef VOLUA_CUDA_H
#define VOLUA_CUDA_H

#include <stdint.h>

/* 1 if a usable GPU exists (probed once, lazily); 0 otherwise. */
int volua_cuda_available(void);
/* Why there is no GPU ("built without CUDA", "cudaGetDeviceCount: ... (35)"), or "". */
const char *volua_cuda_unavailable_reason(void);
/* A line describing the device ("NVIDIA H200, 132 SMs, 139 GiB"), or "". */
const char *volua_cuda_device_name(void);

/* Caching allocator: freed blocks are kept and reused by rounded size. On cudaMalloc
 * failure the cache is emptied and the call retried once; the error says how much was
 * asked and how much is in use. */
int volua_cuda_malloc(void **p, int64_t bytes, char *err);
void volua_cuda_free(void *p);
typedef struct volua_cuda_mem_stats {
  int64_t allocated;      /* bytes in live blocks */
  int64_t reserved;       /* bytes held from cudaMalloc (live + cached) */
  int64_t peak_allocated;
  int64_t num_mallocs;    /* cudaMalloc calls so far */
  int64_t num_frees;      /* cudaFree calls so far */
} volua_cuda_mem_stats;
void volua_cuda_memory_stats(volua_cuda_mem_stats *s);
void volua_cuda_empty_cache(void);

/* Prepared weights kept across calls (src/cuda.c, "prepared weights"): the op names the weight
 * of the call it is about to make (its data pointer, storage id and version) and clears it after;
 * freeing a storage forgets its entries; clear drops them all (empty_cache does too); count says
 * how many entries there are and (bytes) their size. */
void volua_cuda_weight_id_set(const void *ptr, uint64_t storage, uint64_t version);
void volua_cuda_weight_id_clear(void);
void volua_cuda_derived_forget(uint64_t storage);
void volua_cuda_derived_clear(void);
int volua_cuda_derived_count(int64_t *bytes);

typedef enum { VOLUA_COPY_H2D = 0, VOLUA_COPY_D2H, VOLUA_COPY_D2D } volua_copy_kind;
int volua_cuda_memcpy(void *dst, const void *src, int64_t bytes, volua_copy_kind kind, char *err);
int volua_cuda_sync(char *err);
/* The stream every op runs on (a cudaStream_t, as void* for C files that do not include CUDA). */
void *volua_cuda_stream(void);
/* 1 when VOLUA_POISON=1: new GPU tensors are filled with NaN (all-ones bits) so that an
 * element a kernel forgot to write fails the comparison. Read once. */
int volua_cuda_poison_enabled(void);

#endif
