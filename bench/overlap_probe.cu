// overlap_probe.cu: what writes the H200 can overlap with a kernel that holds every SM, measured
// outside volua (bench/NOTES.md, ninth session). Questions behind it: can a 571 MB cudaMemsetAsync
// (KernelBench L1-77's output) run beside a persistent GEMM on another stream, and how fast do plain
// fill kernels write (4-byte stores one element a thread, as volua's elementwise kernels; 16-byte
// stores in a grid-stride loop; on a few SMs only)?
// Build: nvcc -O3 -std=c++17 -arch=sm_90 bench/overlap_probe.cu -o overlap_probe
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "probe_check.h"

// Holds its SM (2 blocks of 1024 threads: every thread slot) for `cycles` clocks, then ends.
__global__ void __launch_bounds__(1024, 2) busy_kernel(long long cycles, int *sink) {
  const long long t0 = clock64();
  float a = threadIdx.x;
  while (clock64() - t0 < cycles) a = a * 1.000001f + 0.5f;
  if (a == -1.0f) *sink = 1;
}

__global__ void fill1_kernel(int64_t n, float *y, float v) { // one element a thread, as elementwise.cu
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)blockDim.x * gridDim.x) y[i] = v;
}

__global__ void fill4_kernel(int64_t n4, float4 *y, float v) { // 16-byte stores, grid-stride
  const float4 v4 = make_float4(v, v, v, v);
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += (int64_t)blockDim.x * gridDim.x) y[i] = v4;
}

static float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main() {
  int dev = 0, sms = 0, khz = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev));
  const int64_t n = (int64_t)16 * 64 * 33 * 65 * 65; // L1-77's output, floats
  const size_t bytes = (size_t)n * 4;
  float *y = nullptr, *flush = nullptr;
  int *sink = nullptr;
  CK(cudaMalloc(&y, bytes + 16));
  CK(cudaMalloc(&flush, 256 << 20));
  CK(cudaMalloc(&sink, 4));
  cudaStream_t sa, sb;
  CK(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking));
  cudaEvent_t e0, e1, ea, eb;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaEventCreate(&ea));
  CK(cudaEventCreate(&eb));
  const long long cycles = (long long)khz * 150 / 1000; // 150 us at the reported clock
  printf("%d SMs, %.0f MHz, output %.1f MB, busy kernel %lld cycles\n", sms, khz / 1e3, bytes / 1e6, cycles);

  // runs f (issuing on sa and/or sb after e0), returns ms from e0 to both streams' ends; median of 20
  auto timed = [&](auto f) {
    std::vector<float> ms;
    for (int r = 0; r < 22; r++) {
      CK(cudaMemsetAsync(flush, r, 256 << 20, sa));
      CK(cudaEventRecord(e0, sa));
      CK(cudaStreamWaitEvent(sb, e0, 0));
      f();
      CK(cudaEventRecord(ea, sa));
      CK(cudaEventRecord(eb, sb));
      CK(cudaStreamWaitEvent(sa, eb, 0));
      CK(cudaEventRecord(e1, sa));
      CK(cudaEventSynchronize(e1));
      float t = 0;
      CK(cudaEventElapsedTime(&t, e0, e1));
      if (r >= 2) ms.push_back(t);
    }
    return median(ms);
  };
  auto busy = [&](cudaStream_t s) { busy_kernel<<<2 * sms, 1024, 0, s>>>(cycles, sink); };
  auto mset = [&](cudaStream_t s) { CK(cudaMemsetAsync(y, 0, bytes, s)); };
  auto f1 = [&](cudaStream_t s) { fill1_kernel<<<(unsigned)std::min<int64_t>((n + 255) / 256, 1 << 20), 256, 0, s>>>(n, y, 0.0f); };
  auto f4 = [&](cudaStream_t s, int blocks, int threads) { fill4_kernel<<<blocks, threads, 0, s>>>(n / 4, (float4 *)y, 0.0f); };

  const float tb = timed([&] { busy(sa); }), tm = timed([&] { mset(sb); });
  printf("busy alone %.4f ms; memset alone %.4f ms (%.2f TB/s)\n", tb, tm, bytes / tm / 1e9);
  printf("busy (sa) then memset (sb): %.4f ms\n", timed([&] { busy(sa); mset(sb); }));
  printf("memset (sb) then busy (sa): %.4f ms\n", timed([&] { mset(sb); busy(sa); }));
  printf("memset then busy, one stream: %.4f ms\n", timed([&] { mset(sa); busy(sa); }));
  const float t1 = timed([&] { f1(sa); });
  printf("fill, a thread an element (4-byte stores): %.4f ms (%.2f TB/s)\n", t1, bytes / t1 / 1e9);
  for (int per : {4, 8, 16}) {
    const float t = timed([&] { f4(sa, per * sms, 256); });
    printf("fill, 16-byte stores, %d blocks of 256 an SM: %.4f ms (%.2f TB/s)\n", per, t, bytes / t / 1e9);
  }
  for (int nb : {8, 16, 32, 64}) {
    const float t = timed([&] { f4(sa, nb, 1024); });
    printf("fill, 16-byte stores, %d blocks of 1024 (on %d SMs at most): %.4f ms (%.2f TB/s)\n", nb, nb, t, bytes / t / 1e9);
  }
  CK(cudaDeviceSynchronize());
  return 0;
}
