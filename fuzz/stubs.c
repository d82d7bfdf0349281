/* stubs.c: what src/tensor.c calls outside the io code, for fuzz builds that link only the
 * readers. The readers allocate CPU tensors only, so none of these is ever reached. */
#include <stdio.h>
#include <stdlib.h>
#include "../src/cuda.h"
#include "../src/tensor.h"

int volua_cuda_malloc(void **p, int64_t bytes, char *err) {
  (void)p; (void)bytes;
  snprintf(err, VOLUA_ERR_MAX, "fuzz build has no CUDA");
  return 1;
}
void volua_cuda_free(void *p) { (void)p; abort(); }
void volua_cuda_derived_forget(uint64_t storage) { (void)storage; abort(); }
int volua_cuda_memcpy(void *dst, const void *src, int64_t bytes, volua_copy_kind kind, char *err) {
  (void)dst; (void)src; (void)bytes; (void)kind;
  snprintf(err, VOLUA_ERR_MAX, "fuzz build has no CUDA");
  return 1;
}
void volua_cpu_convert(int64_t n, int dst_dt, void *dst, int src_dt, const void *src) {
  (void)n; (void)dst_dt; (void)dst; (void)src_dt; (void)src;
  abort();
}
