// Driver-only hot pair (cuMemAllocFromPoolAsync + cuMemFreeAsync of 256 B
// on one stream), to see whether the CPU a process runs on explains the
// 2x spread between processes. Prints best and median ns per pair of 7 reps.
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define CK(x) do { CUresult r = (x); if (r != CUDA_SUCCESS) { printf("err %d at %s\n", r, #x); return 1; } } while (0)
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
static int cmp(const void* a, const void* b) { double x = *(const double*)a, y = *(const double*)b; return (x > y) - (x < y); }
int main(void) {
  CK(cuInit(0));
  CUdevice d; CK(cuDeviceGet(&d, 0));
  CUcontext c; CK(cuDevicePrimaryCtxRetain(&c, d)); CK(cuCtxSetCurrent(c));
  CUmemoryPool pool; CK(cuDeviceGetDefaultMemPool(&pool, d));
  CUstream s; CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  const int iters = 20000;
  double v[7];
  for (int rep = 0; rep < 8; rep++) {
    double t0 = now();
    for (int i = 0; i < iters; i++) {
      CUdeviceptr p;
      CK(cuMemAllocFromPoolAsync(&p, 256, pool, s));
      CK(cuMemFreeAsync(p, s));
    }
    CK(cuStreamSynchronize(s));
    if (rep > 0) v[rep - 1] = (now() - t0) / iters;
  }
  qsort(v, 7, sizeof v[0], cmp);
  printf("%.1f,%.1f\n", v[0], v[3]);
  return 0;
}
