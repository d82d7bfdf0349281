// bench_timer.cu: what vol.bench (src/lua_bench.c) needs from CUDA: a pair of events on volua's
// stream around the timed call, and an L2 flush (a write of a whole buffer) before it.
#include <stdint.h>
#include <new>

#include "common.cuh"
#include "fast.h"
extern "C" {
#include "../src/cuda.h"
}

struct volua_cuda_timer {
  cudaEvent_t start, stop;
};

extern "C" int volua_cuda_timer_create(volua_cuda_timer **t, char *err) {
  const char *op = "bench";
  *t = NULL;
  volua_cuda_timer *n = new (std::nothrow) volua_cuda_timer;
  if (!n) {
    snprintf(err, VOLUA_ERR_MAX, "bench: out of host memory for a timer");
    return 1;
  }
  cudaError_t e = cudaEventCreate(&n->start);
  if (e != cudaSuccess) {
    delete n;
    return volua_kernel_error(err, op, e, "cudaEventCreate(&start)", __FILE__, __LINE__);
  }
  e = cudaEventCreate(&n->stop);
  if (e != cudaSuccess) {
    cudaEventDestroy(n->start);
    delete n;
    return volua_kernel_error(err, op, e, "cudaEventCreate(&stop)", __FILE__, __LINE__);
  }
  *t = n;
  return 0;
}

extern "C" void volua_cuda_timer_destroy(volua_cuda_timer *t) {
  if (!t) return;
  cudaEventDestroy(t->start);
  cudaEventDestroy(t->stop);
  delete t;
}

extern "C" int volua_cuda_timer_start(volua_cuda_timer *t, char *err) {
  const char *op = "bench";
  CUDA_CHECK(cudaEventRecord(t->start, (cudaStream_t)volua_cuda_stream()));
  return 0;
}

extern "C" int volua_cuda_timer_stop(volua_cuda_timer *t, float *ms, char *err) {
  const char *op = "bench";
  CUDA_CHECK(cudaEventRecord(t->stop, (cudaStream_t)volua_cuda_stream()));
  CUDA_CHECK(cudaEventSynchronize(t->stop));
  CUDA_CHECK(cudaEventElapsedTime(ms, t->start, t->stop));
  return 0;
}

// Writes every byte of buf on volua's stream, so that the next timed call finds none of its data
// in L2 (the value changes per call so that no layer can skip the write).
extern "C" int volua_cuda_flush(void *buf, int64_t bytes, int value, char *err) {
  const char *op = "bench";
  CUDA_CHECK(cudaMemsetAsync(buf, value & 0xff, (size_t)bytes, (cudaStream_t)volua_cuda_stream()));
  return 0;
}
