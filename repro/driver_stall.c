/* A minimal reproducer, outside rmm, for the stall seen when rmm's GPU tests
 * run in parallel: N threads, each with its own blocking stream on the
 * primary context of device 0, loop over a mix of CUDA driver calls. A
 * watchdog prints the call every thread is in when no thread progressed for
 * WATCHDOG seconds and exits with status 3.
 *
 *   nvcc -O2 -o driver_stall driver_stall.c -lcuda -lpthread
 *   ./driver_stall THREADS SECONDS KINDS
 *
 * KINDS: letters of the operations in the mix:
 *   M managed: cuMemAllocManaged, cuMemsetD8Async, copy to pageable host, cuMemFree
 *   D device:  cuMemAlloc, cuMemsetD8Async, copy to pageable host, cuMemFree
 *   A async:   cuMemAllocAsync / cuMemFreeAsync on the thread's stream
 *   H host:    pageable host-to-device cuMemcpyAsync and cuLaunchHostFunc
 *   C ctx:     cuCtxSynchronize
 *   S streams: cuStreamCreate / cuStreamDestroy
 *   P pinned:  cuMemHostAlloc / cuMemFreeHost
 *   Z managed sync: as M, but cuStreamSynchronize + cuCtxSynchronize before cuMemFree
 *   L legacy:  cuMemAlloc, cuMemsetD8Async and cuStreamSynchronize on the legacy default stream
 *   B big:     cuMemAlloc of 256 MiB to 1 GiB, memset, synchronise, cuMemFree
 *   O oom:     cuMemAlloc and cuMemHostAlloc of 1 PiB (both must fail)
 *   Q pools:   cuMemPoolCreate, cuMemAllocFromPoolAsync, cuMemFreeAsync, cuMemPoolDestroy
 *   E events:  cuEventCreate, cuEventRecord, cuStreamWaitEvent, cuEventDestroy
 *   T threads: a new thread makes the context current, creates a stream,
 *              memsets, synchronises, destroys the stream and exits
 *   R per-thread default stream, in a new thread that then exits
 *   Y pool oom: a pool with release threshold UINT64_MAX, cuMemAllocFromPoolAsync
 *              of 1 PiB (must fail), a small allocation freed on a new stream
 *              that is destroyed, then cuMemPoolDestroy, without synchronising
 *   X pool cross-stream: a pool (threshold UINT64_MAX), 16 blocks allocated and
 *              written on stream A, A synchronised, freed on B, reallocated on B,
 *              written, freed, B synchronised; streams and pool destroyed
 *   K as Y without the 1 PiB request
 *   G pool growth: a pool (threshold UINT64_MAX) on a new stream, requests of
 *              1 B to 1 GiB (x4 each step, and +3), each written, copied to
 *              pageable memory, synchronised and freed; stream and pool destroyed
 *   W a pool on the legacy default stream: allocate, synchronise, free, destroy
 *   V as W on one blocking stream shared by all threads (created by main)
 *   U as W on the thread's own blocking stream
 *   J as W on the per-thread default stream
 *   N as W, with the legacy stream synchronised again before the pool is destroyed
 *   F what rmm does for the legacy stream since the fix: as W, but the pool
 *              calls go to the per-thread default stream, joined to the legacy
 *              stream with events both ways (legacy waits after the allocation,
 *              the free waits for legacy), and the block is written on legacy
 *   r as F, but pools are recycled instead of destroyed (rmm since the fix):
 *              taken from a process-wide list (or made when it is empty),
 *              trimmed to 0 bytes and put back after the operation
 *   w as W (pools straight on the legacy stream, no per-thread stand-in) but
 *              with pools recycled as in 'r': if it runs, rmm's stand-in and its
 *              event joins (pool_stream in rmm/src/mr/cuda_async.rs) could go
 *   v as V (one non-default stream shared by every thread) with pools recycled
 *              as in 'w': whether sharing a stream of one's own is safe too
 *   f as F with one pool per thread made once and kept (as rmm keeps a resource's pool)
 *   g as F with one pool shared by every thread, made once (rmm's default cuda_async)
 *   x two devices, as the container test with device 1 current does: device 1's
 *              primary context (the first thread to get here makes it), a
 *              pageable copy and sync on device 1, then device 0 made current
 *              for a pageable copy from device 0 memory on the thread's stream
 *              and a managed allocation freed, device 1 current in between
 *   y the two-GPU container test call for call: streams created and destroyed
 *              on both devices, device-0 buffers (plain, pool, managed) read,
 *              resized and freed with device 1 current in between (device 0
 *              made current for each call, as rmm's DeviceGuard does)
 * REPRO_LATE_CTX_MS=N (environment): after N ms, thread 0 creates device 1's
 *   primary context (first use of device 1 in the process), allocates,
 *   writes and frees plain and managed memory there, and returns to device
 *   0, while the other threads go on; the open suspect of the two-GPU
 *   `containers` stall (not yet run).
 *   Q2 (letter 'q'): managed memory as the containers use it: cuMemAllocManaged, a
 *              pageable-to-managed copy, an event recorded and waited on by a
 *              second stream, a host function, a managed-to-pageable copy,
 *              cuStreamSynchronize, cuEventDestroy, cuMemFree
 */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char *n_; cuGetErrorName(r_, &n_); \
  fprintf(stderr, "%s failed: %s (line %d)\n", #x, n_, __LINE__); _exit(2);} } while (0)

static CUcontext ctx;
static CUstream shared_stream;
static const char *kinds;
static int nthreads;
static volatile long progress[256];
static volatile const char *where[256];

static void CUDA_CB host_fn(void *p) { free(p); }
static pthread_mutex_t once_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext ctx1;        /* device 1, made by the first 'x' */
static CUmemoryPool shared_pool; /* mix 'g', made by main */
static pthread_mutex_t recycle_mu = PTHREAD_MUTEX_INITIALIZER; /* mix 'r' */
static CUmemoryPool recycled[256];
static int nrecycled;

static CUmemoryPool make_pool(void) {
  CUmemPoolProps props; memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED; props.location.type = CU_MEM_LOCATION_TYPE_DEVICE; props.location.id = 0;
  CUmemoryPool pool; CK(cuMemPoolCreate(&pool, &props));
  cuuint64_t thr = ~0ull; CK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &thr));
  return pool;
}

/* Mixes 'r', 'w' and 'v': a pool from the recycled list, or a new one. */
static CUmemoryPool take_recycled(void) {
  CUmemoryPool pool = NULL;
  pthread_mutex_lock(&recycle_mu);
  if (nrecycled) pool = recycled[--nrecycled];
  pthread_mutex_unlock(&recycle_mu);
  return pool ? pool : make_pool();
}

static void put_recycled(CUmemoryPool pool) {
  pthread_mutex_lock(&recycle_mu);
  recycled[nrecycled++] = pool;
  pthread_mutex_unlock(&recycle_mu);
}

/* Device 1's primary context into ctx1, made by the first caller. */
static void device1_context(int t, const char *label) {
  pthread_mutex_lock(&once_lock);
  if (!ctx1) {
    CUdevice d1; where[t] = label;
    CK(cuDeviceGet(&d1, 1)); CK(cuDevicePrimaryCtxRetain(&ctx1, d1));
  }
  pthread_mutex_unlock(&once_lock);
}

/* F's legacy-stream pattern over a pool that outlives the call. */
static void legacy_joined(int t, CUmemoryPool pool, CUdeviceptr *pp);

struct child_arg { int t; int per_thread; };
static void *child(void *arg) {
  struct child_arg *a = arg; int t = a->t;
  CK(cuCtxSetCurrent(ctx));
  CUdeviceptr p; where[t] = "T: cuMemAlloc"; CK(cuMemAlloc(&p, 4096));
  if (a->per_thread) {
    where[t] = "R: cuMemsetD8Async(per-thread)"; CK(cuMemsetD8Async(p, 1, 4096, CU_STREAM_PER_THREAD));
    where[t] = "R: cuStreamSynchronize(per-thread)"; CK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
  } else {
    CUstream s; where[t] = "T: cuStreamCreate"; CK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
    where[t] = "T: cuMemsetD8Async"; CK(cuMemsetD8Async(p, 1, 4096, s));
    where[t] = "T: cuStreamSynchronize"; CK(cuStreamSynchronize(s));
    where[t] = "T: cuStreamDestroy"; CK(cuStreamDestroy(s));
  }
  where[t] = "T: cuMemFree"; CK(cuMemFree(p));
  where[t] = "T: thread exit";
  return NULL;
}

static unsigned long long rng_next(unsigned long long *s) {
  unsigned long long z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull; z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static void *worker(void *arg) {
  int t = (int)(long)arg;
  unsigned long long seed = 1000 + t;
  CK(cuCtxSetCurrent(ctx));
  CUstream s; CK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
  char host[4096];
  size_t nk = strlen(kinds);
  const char *late = getenv("REPRO_LATE_CTX_MS");
  struct timespec t0; clock_gettime(CLOCK_MONOTONIC, &t0);
  int late_done = !(t == 0 && late);
  for (;;) {
    if (!late_done) {
      struct timespec now; clock_gettime(CLOCK_MONOTONIC, &now);
      long ms = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
      if (ms >= atol(late)) {
        CUdevice d1; CUcontext c1; CUdeviceptr q;
        late_done = 1;
        where[t] = "late: cuDeviceGet(1)"; CK(cuDeviceGet(&d1, 1));
        where[t] = "late: cuDevicePrimaryCtxRetain(1)"; CK(cuDevicePrimaryCtxRetain(&c1, d1));
        where[t] = "late: cuCtxSetCurrent(1)"; CK(cuCtxSetCurrent(c1));
        where[t] = "late: cuMemAlloc(dev 1)"; CK(cuMemAlloc(&q, 1 << 20));
        where[t] = "late: cuMemsetD8Async(dev 1)"; CK(cuMemsetD8Async(q, 1, 1 << 20, CU_STREAM_PER_THREAD));
        where[t] = "late: cuStreamSynchronize(dev 1)"; CK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
        where[t] = "late: cuMemFree(dev 1)"; CK(cuMemFree(q));
        where[t] = "late: cuMemAllocManaged(dev 1)"; CK(cuMemAllocManaged(&q, 1 << 20, CU_MEM_ATTACH_GLOBAL));
        where[t] = "late: cuMemFree(managed, dev 1)"; CK(cuMemFree(q));
        where[t] = "late: cuCtxSetCurrent(0)"; CK(cuCtxSetCurrent(ctx));
        printf("late device-1 context made at %ld ms\n", ms); fflush(stdout);
      }
    }
    char k = kinds[rng_next(&seed) % nk];
    size_t bytes = 256 + rng_next(&seed) % (256 << 10);
    CUdeviceptr p;
    switch (k) {
    case 'M': case 'Z':
      where[t] = "cuMemAllocManaged"; CK(cuMemAllocManaged(&p, bytes, CU_MEM_ATTACH_GLOBAL));
      where[t] = "cuMemsetD8Async(managed)"; CK(cuMemsetD8Async(p, 7, bytes, s));
      where[t] = "cuMemcpyAsync(managed->pageable)"; CK(cuMemcpyAsync((CUdeviceptr)host, p, 4096 < bytes ? 4096 : bytes, s));
      where[t] = "cuStreamSynchronize"; CK(cuStreamSynchronize(s));
      if (k == 'Z') { where[t] = "cuCtxSynchronize(before managed free)"; CK(cuCtxSynchronize()); }
      where[t] = "cuMemFree(managed)"; CK(cuMemFree(p));
      break;
    case 'D':
      where[t] = "cuMemAlloc"; CK(cuMemAlloc(&p, bytes));
      where[t] = "cuMemsetD8Async(device)"; CK(cuMemsetD8Async(p, 7, bytes, s));
      where[t] = "cuMemcpyAsync(device->pageable)"; CK(cuMemcpyAsync((CUdeviceptr)host, p, 4096 < bytes ? 4096 : bytes, s));
      where[t] = "cuStreamSynchronize"; CK(cuStreamSynchronize(s));
      where[t] = "cuMemFree(device)"; CK(cuMemFree(p));
      break;
    case 'A':
      where[t] = "cuMemAllocAsync"; CK(cuMemAllocAsync(&p, bytes, s));
      where[t] = "cuMemsetD8Async(async)"; CK(cuMemsetD8Async(p, 7, bytes, s));
      where[t] = "cuMemFreeAsync"; CK(cuMemFreeAsync(p, s));
      where[t] = "cuStreamSynchronize"; CK(cuStreamSynchronize(s));
      break;
    case 'H': {
      where[t] = "cuMemAllocAsync(H)"; CK(cuMemAllocAsync(&p, 64, s));
      unsigned long long *box = malloc(8); *box = 42;
      where[t] = "cuMemcpyAsync(pageable->device)"; CK(cuMemcpyAsync(p, (CUdeviceptr)box, 8, s));
      where[t] = "cuLaunchHostFunc"; CK(cuLaunchHostFunc(s, host_fn, box));
      where[t] = "cuMemFreeAsync(H)"; CK(cuMemFreeAsync(p, s));
      where[t] = "cuStreamSynchronize"; CK(cuStreamSynchronize(s));
      break; }
    case 'C':
      where[t] = "cuCtxSynchronize"; CK(cuCtxSynchronize());
      break;
    case 'S': {
      CUstream x; where[t] = "cuStreamCreate"; CK(cuStreamCreate(&x, CU_STREAM_DEFAULT));
      where[t] = "cuStreamDestroy"; CK(cuStreamDestroy(x));
      break; }
    case 'L':
      where[t] = "L: cuMemAlloc"; CK(cuMemAlloc(&p, bytes));
      where[t] = "L: cuMemsetD8Async(legacy)"; CK(cuMemsetD8Async(p, 7, bytes, CU_STREAM_LEGACY));
      where[t] = "L: cuStreamSynchronize(legacy)"; CK(cuStreamSynchronize(CU_STREAM_LEGACY));
      where[t] = "L: cuMemFree"; CK(cuMemFree(p));
      break;
    case 'B': {
      size_t big = (256ull << 20) << (rng_next(&seed) % 3);
      where[t] = "B: cuMemAlloc(big)"; CK(cuMemAlloc(&p, big));
      where[t] = "B: cuMemsetD8Async(big)"; CK(cuMemsetD8Async(p, 7, big, s));
      where[t] = "B: cuStreamSynchronize"; CK(cuStreamSynchronize(s));
      where[t] = "B: cuMemFree(big)"; CK(cuMemFree(p));
      break; }
    case 'O': {
      void *h;
      where[t] = "O: cuMemAlloc(1 PiB)";
      if (cuMemAlloc(&p, 1ull << 50) == CUDA_SUCCESS) { fprintf(stderr, "1 PiB cuMemAlloc succeeded\n"); _exit(2); }
      where[t] = "O: cuMemHostAlloc(1 PiB)";
      if (cuMemHostAlloc(&h, 1ull << 50, CU_MEMHOSTALLOC_PORTABLE) == CUDA_SUCCESS) { fprintf(stderr, "1 PiB host alloc succeeded\n"); _exit(2); }
      break; }
    case 'Q': {
      CUmemPoolProps props; memset(&props, 0, sizeof props);
      props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED; props.location.type = CU_MEM_LOCATION_TYPE_DEVICE; props.location.id = 0;
      CUmemoryPool pool; where[t] = "Q: cuMemPoolCreate"; CK(cuMemPoolCreate(&pool, &props));
      where[t] = "Q: cuMemAllocFromPoolAsync"; CK(cuMemAllocFromPoolAsync(&p, bytes, pool, s));
      where[t] = "Q: cuMemFreeAsync"; CK(cuMemFreeAsync(p, s));
      where[t] = "Q: cuStreamSynchronize"; CK(cuStreamSynchronize(s));
      where[t] = "Q: cuMemPoolDestroy"; CK(cuMemPoolDestroy(pool));
      break; }
    case 'E': {
      CUevent e; where[t] = "E: cuEventCreate"; CK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
      where[t] = "E: cuEventRecord"; CK(cuEventRecord(e, s));
      where[t] = "E: cuStreamWaitEvent"; CK(cuStreamWaitEvent(s, e, 0));
      where[t] = "E: cuEventDestroy"; CK(cuEventDestroy(e));
      break; }
    case 'T': case 'R': {
      struct child_arg a = { t, k == 'R' }; pthread_t c;
      pthread_create(&c, NULL, child, &a);
      pthread_join(c, NULL);
      break; }
    case 'Y': case 'X': case 'K': {
      CUmemPoolProps props; memset(&props, 0, sizeof props);
      props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED; props.location.type = CU_MEM_LOCATION_TYPE_DEVICE; props.location.id = 0;
      CUmemoryPool pool; where[t] = "YX: cuMemPoolCreate"; CK(cuMemPoolCreate(&pool, &props));
      cuuint64_t thr = ~0ull; where[t] = "YX: cuMemPoolSetAttribute"; CK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &thr));
      CUstream a, b; where[t] = "YX: cuStreamCreate"; CK(cuStreamCreate(&a, CU_STREAM_DEFAULT)); CK(cuStreamCreate(&b, CU_STREAM_DEFAULT));
      if (k == 'Y') {
        where[t] = "Y: cuMemAllocFromPoolAsync(1 PiB)";
        CUresult r = cuMemAllocFromPoolAsync(&p, 1ull << 50, pool, a);
        if (r != CUDA_ERROR_OUT_OF_MEMORY) { fprintf(stderr, "1 PiB pool allocation gave %d\n", (int)r); _exit(2); }
      }
      if (k == 'Y' || k == 'K') {
        where[t] = "Y: cuMemAllocFromPoolAsync"; CK(cuMemAllocFromPoolAsync(&p, 1024, pool, a));
        where[t] = "Y: cuMemFreeAsync"; CK(cuMemFreeAsync(p, a));
      } else {
        CUdeviceptr q[16];
        for (int i = 0; i < 16; i++) {
          where[t] = "X: cuMemAllocFromPoolAsync(A)"; CK(cuMemAllocFromPoolAsync(&q[i], 1000 + i * 4096, pool, a));
          where[t] = "X: cuMemsetD8Async(A)"; CK(cuMemsetD8Async(q[i], 3, 1000, a));
          where[t] = "X: cuMemcpyAsync(A->pageable)"; CK(cuMemcpyAsync((CUdeviceptr)host, q[i], 1000, a));
          where[t] = "X: cuStreamSynchronize(A)"; CK(cuStreamSynchronize(a));
        }
        for (int i = 0; i < 16; i++) { where[t] = "X: cuMemFreeAsync(B)"; CK(cuMemFreeAsync(q[i], b)); }
        for (int i = 0; i < 16; i++) {
          where[t] = "X: cuMemAllocFromPoolAsync(B)"; CK(cuMemAllocFromPoolAsync(&q[i], 1000 + i * 4096, pool, b));
          where[t] = "X: cuMemsetD8Async(B)"; CK(cuMemsetD8Async(q[i], 3, 1000, b));
          where[t] = "X: cuMemcpyAsync(B->pageable)"; CK(cuMemcpyAsync((CUdeviceptr)host, q[i], 1000, b));
          where[t] = "X: cuStreamSynchronize(B)"; CK(cuStreamSynchronize(b));
          where[t] = "X: cuMemFreeAsync(B)"; CK(cuMemFreeAsync(q[i], b));
        }
        where[t] = "X: cuStreamSynchronize(B)"; CK(cuStreamSynchronize(b));
      }
      where[t] = "YX: cuStreamDestroy"; CK(cuStreamDestroy(a)); CK(cuStreamDestroy(b));
      where[t] = "YX: cuMemPoolDestroy"; CK(cuMemPoolDestroy(pool));
      break; }
    case 'G': case 'W': case 'V': case 'U': case 'J': case 'N': {
      CUmemPoolProps props; memset(&props, 0, sizeof props);
      props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED; props.location.type = CU_MEM_LOCATION_TYPE_DEVICE; props.location.id = 0;
      CUmemoryPool pool; where[t] = "G: cuMemPoolCreate"; CK(cuMemPoolCreate(&pool, &props));
      cuuint64_t thr = ~0ull; CK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &thr));
      if (k != 'G') {
        CUstream w = k == 'V' ? shared_stream : k == 'U' ? s : k == 'J' ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
        where[t] = "W: cuMemAllocFromPoolAsync(w)"; CK(cuMemAllocFromPoolAsync(&p, 4096, pool, w));
        where[t] = "W: cuStreamSynchronize(w)"; CK(cuStreamSynchronize(w));
        where[t] = "W: cuMemFreeAsync(w)"; CK(cuMemFreeAsync(p, w));
        if (k == 'N') { where[t] = "N: cuStreamSynchronize(w) after free"; CK(cuStreamSynchronize(w)); }
      } else {
        CUstream a; CK(cuStreamCreate(&a, CU_STREAM_DEFAULT));
        for (size_t sz = 1; sz <= (1ull << 30); sz *= 4) {
          for (int plus = 0; plus <= 3; plus += 3) {
            size_t n = sz + plus;
            where[t] = "G: cuMemAllocFromPoolAsync(growing)"; CK(cuMemAllocFromPoolAsync(&p, n, pool, a));
            size_t m = n < 4096 ? n : 4096;
            where[t] = "G: cuMemsetD8Async"; CK(cuMemsetD8Async(p, 5, m, a));
            where[t] = "G: cuMemcpyAsync(->pageable)"; CK(cuMemcpyAsync((CUdeviceptr)host, p, m, a));
            where[t] = "G: cuStreamSynchronize"; CK(cuStreamSynchronize(a));
            where[t] = "G: cuMemFreeAsync"; CK(cuMemFreeAsync(p, a));
          }
        }
        where[t] = "G: cuStreamSynchronize(end)"; CK(cuStreamSynchronize(a));
        where[t] = "G: cuStreamDestroy"; CK(cuStreamDestroy(a));
      }
      where[t] = "G: cuMemPoolDestroy"; CK(cuMemPoolDestroy(pool));
      break; }
    case 'q': {
      CUstream b2; CK(cuStreamCreate(&b2, CU_STREAM_DEFAULT));
      where[t] = "q: cuMemAllocManaged"; CK(cuMemAllocManaged(&p, bytes, CU_MEM_ATTACH_GLOBAL));
      size_t m = bytes < 4096 ? bytes : 4096;
      where[t] = "q: cuMemcpyAsync(pageable->managed)"; CK(cuMemcpyAsync(p, (CUdeviceptr)host, m, s));
      CUevent e; where[t] = "q: cuEventCreate"; CK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
      where[t] = "q: cuEventRecord"; CK(cuEventRecord(e, s));
      where[t] = "q: cuStreamWaitEvent"; CK(cuStreamWaitEvent(b2, e, 0));
      unsigned long long *box = malloc(8); *box = 42;
      where[t] = "q: cuMemcpyAsync(pageable box->managed)"; CK(cuMemcpyAsync(p, (CUdeviceptr)box, 8, b2));
      where[t] = "q: cuLaunchHostFunc"; CK(cuLaunchHostFunc(b2, host_fn, box));
      where[t] = "q: cuEventRecord(b2)"; CK(cuEventRecord(e, b2));
      where[t] = "q: cuStreamWaitEvent(s)"; CK(cuStreamWaitEvent(s, e, 0));
      where[t] = "q: cuEventDestroy"; CK(cuEventDestroy(e));
      where[t] = "q: cuMemcpyAsync(managed->pageable)"; CK(cuMemcpyAsync((CUdeviceptr)host, p, m, s));
      where[t] = "q: cuStreamSynchronize"; CK(cuStreamSynchronize(s));
      where[t] = "q: cuMemFree(managed)"; CK(cuMemFree(p));
      where[t] = "q: cuStreamDestroy"; CK(cuStreamDestroy(b2));
      break; }
    case 'F': {
      where[t] = "F: cuMemPoolCreate"; CUmemoryPool pool = make_pool();
      legacy_joined(t, pool, &p);
      where[t] = "F: cuMemPoolDestroy"; CK(cuMemPoolDestroy(pool));
      break; }
    case 'w': case 'v': {
      /* w: the legacy stream; v: one non-default stream shared by every thread */
      CUstream on = k == 'v' ? shared_stream : CU_STREAM_LEGACY;
      where[t] = "w/v: take a recycled pool or cuMemPoolCreate"; CUmemoryPool pool = take_recycled();
      where[t] = "w/v: cuMemAllocFromPoolAsync"; CK(cuMemAllocFromPoolAsync(&p, 4096, pool, on));
      where[t] = "w/v: cuMemsetD8Async"; CK(cuMemsetD8Async(p, 7, 4096, on));
      where[t] = "w/v: cuStreamSynchronize"; CK(cuStreamSynchronize(on));
      where[t] = "w/v: cuMemFreeAsync"; CK(cuMemFreeAsync(p, on));
      where[t] = "w/v: cuMemPoolTrimTo"; CK(cuMemPoolTrimTo(pool, 0));
      put_recycled(pool);
      break; }
    case 'r': {
      where[t] = "r: take a recycled pool or cuMemPoolCreate"; CUmemoryPool pool = take_recycled();
      where[t] = "r: cuMemPoolTrimTo(take)"; CK(cuMemPoolTrimTo(pool, 0));
      legacy_joined(t, pool, &p);
      where[t] = "r: cuMemPoolTrimTo(give back)"; CK(cuMemPoolTrimTo(pool, 0));
      put_recycled(pool);
      break; }
    case 'f': {
      static __thread CUmemoryPool own; if (!own) own = make_pool();
      legacy_joined(t, own, &p);
      break; }
    case 'g':
      legacy_joined(t, shared_pool, &p);
      break;
    case 'x': {
      device1_context(t, "x: cuDevicePrimaryCtxRetain(1)");
      CUdeviceptr q, m;
      where[t] = "x: cuCtxSetCurrent(1)"; CK(cuCtxSetCurrent(ctx1));
      where[t] = "x: cuMemAlloc(dev 1)"; CK(cuMemAlloc(&q, 4096));
      where[t] = "x: cuMemcpyAsync(pageable->dev 1)"; CK(cuMemcpyAsync(q, (CUdeviceptr)host, 4096, CU_STREAM_PER_THREAD));
      where[t] = "x: cuStreamSynchronize(dev 1)"; CK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
      where[t] = "x: cuCtxSetCurrent(0)"; CK(cuCtxSetCurrent(ctx));
      where[t] = "x: cuMemAllocManaged"; CK(cuMemAllocManaged(&m, 4096, CU_MEM_ATTACH_GLOBAL));
      where[t] = "x: cuMemAlloc(dev 0)"; CK(cuMemAlloc(&p, 4096));
      where[t] = "x: cuMemcpyAsync(dev 0->pageable)"; CK(cuMemcpyAsync((CUdeviceptr)host, p, 4096, s));
      where[t] = "x: cuStreamSynchronize(dev 0)"; CK(cuStreamSynchronize(s));
      where[t] = "x: cuCtxSetCurrent(1) again"; CK(cuCtxSetCurrent(ctx1));
      where[t] = "x: cuCtxSetCurrent(0) again"; CK(cuCtxSetCurrent(ctx));
      where[t] = "x: cuMemFree(managed)"; CK(cuMemFree(m));
      where[t] = "x: cuMemFree(dev 0)"; CK(cuMemFree(p));
      where[t] = "x: cuCtxSetCurrent(1) for free"; CK(cuCtxSetCurrent(ctx1));
      where[t] = "x: cuMemFree(dev 1)"; CK(cuMemFree(q));
      where[t] = "x: cuCtxSetCurrent(0) at end"; CK(cuCtxSetCurrent(ctx));
      break; }
    case 'y': {
      device1_context(t, "y: cuDevicePrimaryCtxRetain(1)");
      CUstream s0, s1; CUdeviceptr plain, pooled, man, dev1, bigger;
      where[t] = "y: cuStreamCreate(dev 0)"; CK(cuStreamCreate(&s0, CU_STREAM_DEFAULT));
      where[t] = "y: cuMemAlloc(dev 0)"; CK(cuMemAlloc(&plain, 4096));
      where[t] = "y: cuMemAllocAsync(dev 0)"; CK(cuMemAllocAsync(&pooled, 4096, s0));
      where[t] = "y: cuMemAllocManaged"; CK(cuMemAllocManaged(&man, 4096, CU_MEM_ATTACH_GLOBAL));
      where[t] = "y: cuMemcpyAsync(pageable->dev 0)"; CK(cuMemcpyAsync(plain, (CUdeviceptr)host, 4096, s0));
      where[t] = "y: cuMemcpyAsync(pageable->pool)"; CK(cuMemcpyAsync(pooled, (CUdeviceptr)host, 4096, s0));
      where[t] = "y: cuMemcpyAsync(pageable->managed)"; CK(cuMemcpyAsync(man, (CUdeviceptr)host, 4096, s0));
      where[t] = "y: cuStreamSynchronize(s0)"; CK(cuStreamSynchronize(s0));
      where[t] = "y: cuCtxSetCurrent(1)"; CK(cuCtxSetCurrent(ctx1));
      where[t] = "y: cuStreamCreate(dev 1)"; CK(cuStreamCreate(&s1, CU_STREAM_DEFAULT));
      where[t] = "y: cuMemAlloc(dev 1)"; CK(cuMemAlloc(&dev1, 1000));
      where[t] = "y: cuMemcpyAsync(pageable->dev 1)"; CK(cuMemcpyAsync(dev1, (CUdeviceptr)host, 1000, s1));
      where[t] = "y: cuStreamSynchronize(s1)"; CK(cuStreamSynchronize(s1));
      where[t] = "y: cuCtxSetCurrent(0) read"; CK(cuCtxSetCurrent(ctx));
      where[t] = "y: cuMemcpyAsync(pool->pageable)"; CK(cuMemcpyAsync((CUdeviceptr)host, pooled, 4096, s0));
      where[t] = "y: cuStreamSynchronize(s0) read"; CK(cuStreamSynchronize(s0));
      where[t] = "y: cuCtxSetCurrent(1) after read"; CK(cuCtxSetCurrent(ctx1));
      where[t] = "y: cuCtxSetCurrent(0) resize"; CK(cuCtxSetCurrent(ctx));
      where[t] = "y: cuMemAlloc(resize)"; CK(cuMemAlloc(&bigger, 8192));
      where[t] = "y: cuMemcpyAsync(dev 0->dev 0)"; CK(cuMemcpyAsync(bigger, plain, 4096, s0));
      where[t] = "y: cuStreamSynchronize(s0) resize"; CK(cuStreamSynchronize(s0));
      where[t] = "y: cuMemFree(old)"; CK(cuMemFree(plain));
      where[t] = "y: cuCtxSetCurrent(1) after resize"; CK(cuCtxSetCurrent(ctx1));
      where[t] = "y: cuCtxSetCurrent(0) drops"; CK(cuCtxSetCurrent(ctx));
      where[t] = "y: cuMemFree(resized)"; CK(cuMemFree(bigger));
      where[t] = "y: cuMemFreeAsync(pool)"; CK(cuMemFreeAsync(pooled, s0));
      where[t] = "y: cuMemFree(managed)"; CK(cuMemFree(man));
      where[t] = "y: cuCtxSetCurrent(1) after drops"; CK(cuCtxSetCurrent(ctx1));
      where[t] = "y: cuMemcpyAsync(dev 1->pageable)"; CK(cuMemcpyAsync((CUdeviceptr)host, dev1, 1000, s1));
      where[t] = "y: cuStreamSynchronize(s1) read"; CK(cuStreamSynchronize(s1));
      where[t] = "y: cuMemFree(dev 1)"; CK(cuMemFree(dev1));
      where[t] = "y: cuStreamDestroy(s1)"; CK(cuStreamDestroy(s1));
      where[t] = "y: cuCtxSetCurrent(0) end"; CK(cuCtxSetCurrent(ctx));
      where[t] = "y: cuStreamSynchronize(s0) end"; CK(cuStreamSynchronize(s0));
      where[t] = "y: cuStreamDestroy(s0)"; CK(cuStreamDestroy(s0));
      break; }
    case 'P': {
      void *h; where[t] = "cuMemHostAlloc"; CK(cuMemHostAlloc(&h, bytes, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
      where[t] = "cuMemsetD8Async(pinned)"; CK(cuMemsetD8Async((CUdeviceptr)h, 7, bytes, s));
      where[t] = "cuStreamSynchronize"; CK(cuStreamSynchronize(s));
      where[t] = "cuMemFreeHost"; CK(cuMemFreeHost(h));
      break; }
    }
    where[t] = "(between calls)";
    progress[t]++;
  }
  return NULL;
}

static void legacy_joined(int t, CUmemoryPool pool, CUdeviceptr *pp) {
  CUevent e;
  where[t] = "f: cuMemAllocFromPoolAsync(per-thread)"; CK(cuMemAllocFromPoolAsync(pp, 4096, pool, CU_STREAM_PER_THREAD));
  where[t] = "f: cuEventCreate"; CK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  where[t] = "f: cuEventRecord(per-thread)"; CK(cuEventRecord(e, CU_STREAM_PER_THREAD));
  where[t] = "f: cuStreamWaitEvent(legacy)"; CK(cuStreamWaitEvent(CU_STREAM_LEGACY, e, 0));
  where[t] = "f: cuEventDestroy"; CK(cuEventDestroy(e));
  where[t] = "f: cuMemsetD8Async(legacy)"; CK(cuMemsetD8Async(*pp, 7, 4096, CU_STREAM_LEGACY));
  where[t] = "f: cuStreamSynchronize(legacy)"; CK(cuStreamSynchronize(CU_STREAM_LEGACY));
  where[t] = "f: cuEventCreate"; CK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  where[t] = "f: cuEventRecord(legacy)"; CK(cuEventRecord(e, CU_STREAM_LEGACY));
  where[t] = "f: cuStreamWaitEvent(per-thread)"; CK(cuStreamWaitEvent(CU_STREAM_PER_THREAD, e, 0));
  where[t] = "f: cuEventDestroy"; CK(cuEventDestroy(e));
  where[t] = "f: cuMemFreeAsync(per-thread)"; CK(cuMemFreeAsync(*pp, CU_STREAM_PER_THREAD));
}

int main(int argc, char **argv) {
  nthreads = argc > 1 ? atoi(argv[1]) : 16;
  int seconds = argc > 2 ? atoi(argv[2]) : 20;
  kinds = argc > 3 ? argv[3] : "MDAHCS";
  int watchdog = argc > 4 ? atoi(argv[4]) : 10;
  CK(cuInit(0));
  CUdevice dev; CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  CK(cuStreamCreate(&shared_stream, CU_STREAM_DEFAULT));
  if (strchr(kinds, 'g')) shared_pool = make_pool();
  pthread_t th[256];
  for (int t = 0; t < nthreads; t++) pthread_create(&th[t], NULL, worker, (void *)(long)t);
  long last[256] = {0}; time_t last_change[256];
  time_t start = time(NULL);
  for (int t = 0; t < nthreads; t++) last_change[t] = start;
  for (;;) {
    sleep(1);
    time_t now = time(NULL);
    int stuck = 0;
    for (int t = 0; t < nthreads; t++) {
      if (progress[t] != last[t]) { last[t] = progress[t]; last_change[t] = now; }
      else if (now - last_change[t] >= watchdog) stuck++;
    }
    if (stuck) {
      long total = 0; for (int t = 0; t < nthreads; t++) total += progress[t];
      printf("STALL kinds=%s threads=%d after %lds: %d threads made no progress for %ds (ops so far %ld)\n",
             kinds, nthreads, (long)(now - start), stuck, watchdog, total);
      for (int t = 0; t < nthreads; t++)
        printf("  thread %2d: %s ops=%ld idle=%lds\n", t, (const char *)where[t], progress[t], (long)(now - last_change[t]));
      fflush(stdout);
      _exit(3);
    }
    if (now - start >= seconds) {
      long total = 0; for (int t = 0; t < nthreads; t++) total += progress[t];
      printf("OK kinds=%s threads=%d seconds=%d ops=%ld\n", kinds, nthreads, seconds, total);
      fflush(stdout);
      _exit(0);
    }
  }
}
