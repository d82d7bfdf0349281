// probe_check.h: the CUDA error check of the standalone probes (bench/*_probe.cu): the call, its
// place and the error's name, then exit.
#ifndef VOLUA_BENCH_PROBE_CHECK_H
#define VOLUA_BENCH_PROBE_CHECK_H
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#define CK(x)                                                                                                          \
  do {                                                                                                                 \
    cudaError_t e_ = (x);                                                                                              \
    if (e_ != cudaSuccess) {                                                                                           \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));                              \
      exit(1);                                                                                                         \
    }                                                                                                                  \
  } while (0)
#endif
