// rmm_ab.cu: the allocator workloads of the anchors' WORKLOADS.md (random,
// hot_pair, threads8, threads) on RMM's resources and on this project's, in
// ONE process, alternating between the two every repetition (see src/lib.rs
// for why). Our resources come through the C ABI of librmm_ab.so (this
// folder's crate); RMM's are built as the anchor builds them, except that
// both pools start at the same size (40% of the free memory each, so that
// both fit at once).
//
// Build on the GPU machine, beside RMM's wheel as the anchor is built
// (RMM, LOG: the librmm and rapids_logger folders; AB: librmm_ab.so's):
//   nvcc -std=c++20 -O2 -arch=sm_90 --expt-relaxed-constexpr
//     -I$RMM/include -I$RMM/include/rapids -I$LOG/include rmm_ab.cu
//     -L$RMM/lib64 -lrmm -L$LOG/lib64 -lrapids_logger -L$AB -lrmm_ab -L$CUDA/lib64/stubs -lcuda
//     -Xlinker -rpath=$RMM/lib64 -Xlinker -rpath=$LOG/lib64 -Xlinker -rpath=$AB -o rmm_ab
// (scripts/rmm-ab.sh does all of it.)
// Run:  rmm_ab [RESOURCE...]   (cuda_async pool binning arena; default cuda_async pool)
//       RMM_AB_REPS (default 9) is the most repetitions of a row; a row
//       stops earlier, after at least 3, once it has run RMM_AB_ROW_SECONDS
//       (default 8; the cuda_async thread rows take seconds per run);
//       RMM_AB_MAX_THREADS (default 32) skips the thread rows above it.
//       RMM_AB_LAYERS=0 leaves out the cuda_async layers (below);
//       RMM_AB_LAYER_THREADS (default 8) is the most threads of a thread
//       row on which they run; RMM_AB_ROWS (e.g. `threads8,threads`)
//       runs only the workloads it names; RMM_AB_THREAD_N (default 20000)
//       is the allocations per thread of the thread rows.
// Output: CSV rows `impl,resource,workload,params,rep,ns_per_op,failed`
// (impl `rmm`, `rmm-rs` or a layer), then per row
// `summary,resource,workload,params,rmm_median,rmm-rs_median,ratio,paired_ratio,rmm_best,rmm-rs_best`
// where ratio is rmm-rs_median / rmm_median and paired_ratio the median of
// the repetitions' own ratios (each repetition runs every side, each one
// first in turn), and, where layers ran,
// `layer,resource,workload,params,impl,median,best,ratio,paired_ratio`
// with the ratios taken against `rmm` the same way.
//
// The cuda_async layers, on the random and hot_pair rows and the thread
// rows up to RMM_AB_LAYER_THREADS (issue #17 item 1: where the time of a
// driver-pool wrapper goes), each the same workload on the same streams:
//   cudart@rmm   cudaMallocFromPoolAsync / cudaFreeAsync on RMM's pool,
//                the runtime call RMM's resource makes, without RMM
//   driver@rmm   cuMemAllocFromPoolAsync / cuMemFreeAsync on RMM's pool,
//                called from here (libcuda linked)
//   driver@rs    the same on our resource's pool
//   binding@rs   the same through the driver binding our resources use
//                (cudarc's, in librmm_ab.so), without our resource
// so rmm - cudart@rmm is RMM's wrapper, cudart@rmm - driver@rmm the
// runtime's, driver@rmm - driver@rs the pools', binding@rs - driver@rs
// the binding's and rmm-rs - binding@rs our resource's.
#include <rmm/cuda_device.hpp>
#include <rmm/cuda_stream.hpp>
#include <rmm/error.hpp>
#include <rmm/mr/arena_memory_resource.hpp>
#include <rmm/mr/binning_memory_resource.hpp>
#include <rmm/mr/cuda_async_memory_resource.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>

#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

extern "C" {
struct RmmAbHandle;
RmmAbHandle* rmm_ab_new(char const* name, std::size_t pool_bytes);
std::uint64_t rmm_ab_allocate(RmmAbHandle const* h, std::size_t bytes, std::uintptr_t stream);
void rmm_ab_deallocate(RmmAbHandle const* h, std::uint64_t ptr, std::size_t bytes, std::uintptr_t stream);
void rmm_ab_drop(RmmAbHandle* h);
std::uintptr_t rmm_ab_pool_handle(RmmAbHandle const* h);
std::uint64_t rmm_ab_binding_allocate(std::uintptr_t pool, std::size_t bytes, std::uintptr_t stream);
void rmm_ab_binding_deallocate(std::uint64_t ptr, std::uintptr_t stream);
}

namespace {

constexpr std::size_t kAlign = rmm::CUDA_ALLOCATION_ALIGNMENT;

// One of RMM's resources.
template <class MR>
struct RmmSide {
  MR& mr;
  void* allocate(cudaStream_t s, std::size_t n)
  {
    try {
      return mr.allocate(cuda::stream_ref{s}, n, kAlign);
    } catch (rmm::bad_alloc const&) {
      return nullptr;
    }
  }
  void deallocate(cudaStream_t s, void* p, std::size_t n)
  {
    mr.deallocate(cuda::stream_ref{s}, p, n, kAlign);
  }
};

// One of ours, through the C ABI.
struct OurSide {
  RmmAbHandle* h;
  void* allocate(cudaStream_t s, std::size_t n)
  {
    return reinterpret_cast<void*>(rmm_ab_allocate(h, n, reinterpret_cast<std::uintptr_t>(s)));
  }
  void deallocate(cudaStream_t s, void* p, std::size_t n)
  {
    rmm_ab_deallocate(h, reinterpret_cast<std::uint64_t>(p), n, reinterpret_cast<std::uintptr_t>(s));
  }
};

// The runtime's pool calls on a pool (the call RMM's resource makes).
struct CudartSide {
  cudaMemPool_t pool;
  void* allocate(cudaStream_t s, std::size_t n)
  {
    void* p = nullptr;
    return cudaMallocFromPoolAsync(&p, n, pool, s) == cudaSuccess ? p : nullptr;
  }
  void deallocate(cudaStream_t s, void* p, std::size_t) { cudaFreeAsync(p, s); }
};

// The driver's pool calls on a pool, called from here.
struct DriverSide {
  CUmemoryPool pool;
  void* allocate(cudaStream_t s, std::size_t n)
  {
    CUdeviceptr p = 0;
    return cuMemAllocFromPoolAsync(&p, n, pool, reinterpret_cast<CUstream>(s)) == CUDA_SUCCESS
             ? reinterpret_cast<void*>(p)
             : nullptr;
  }
  void deallocate(cudaStream_t s, void* p, std::size_t)
  {
    cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(p), reinterpret_cast<CUstream>(s));
  }
};

// The same through our driver binding, in librmm_ab.so.
struct BindingSide {
  std::uintptr_t pool;
  void* allocate(cudaStream_t s, std::size_t n)
  {
    return reinterpret_cast<void*>(rmm_ab_binding_allocate(pool, n, reinterpret_cast<std::uintptr_t>(s)));
  }
  void deallocate(cudaStream_t s, void* p, std::size_t)
  {
    rmm_ab_binding_deallocate(reinterpret_cast<std::uint64_t>(p), reinterpret_cast<std::uintptr_t>(s));
  }
};

struct SplitMix64 {
  std::uint64_t s;
  std::uint64_t next()
  {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

struct Count {
  std::size_t ops{0}, failed{0};
};

// WORKLOADS.md's `random`.
template <class Side>
Count random_allocations(Side& side, cudaStream_t s, std::size_t n, std::size_t max_size,
                         std::size_t max_usage, std::uint64_t seed)
{
  SplitMix64 rng{seed};
  std::vector<std::pair<void*, std::size_t>> live;
  live.reserve(n);
  std::size_t count = 0, usage = 0;
  Count r;
  for (std::size_t i = 0; i < 2 * n; ++i) {
    std::size_t size = 1 + rng.next() % max_size;
    bool do_alloc;
    if (!live.empty()) {
      do_alloc = rng.next() % 100 < 73 && count < n && usage + size < max_usage;
    } else {
      do_alloc = count < n;
    }
    if (do_alloc) {
      r.ops++;
      void* p = side.allocate(s, size);
      if (p != nullptr) {
        live.emplace_back(p, size);
        count++;
        usage += size;
        continue;
      }
      r.failed++;
    }
    if (!live.empty()) {
      std::size_t i2 = rng.next() % live.size();
      auto a         = live[i2];
      live[i2]       = live.back();
      live.pop_back();
      side.deallocate(s, a.first, a.second);
      usage -= a.second;
      r.ops++;
    }
  }
  for (auto& a : live) {
    side.deallocate(s, a.first, a.second);
    r.ops++;
  }
  return r;
}

// A row of the benchmark.
struct Row {
  enum Kind { Random, HotPair, Threads } kind;
  std::size_t n, max_mib, size;
  int threads;
  std::string workload, params;
};

std::vector<Row> rows(int max_threads)
{
  std::vector<Row> r;
  for (auto [n, m] : std::vector<std::pair<std::size_t, std::size_t>>{{100000, 1}, {10000, 64}, {1000, 4096}}) {
    r.push_back({Row::Random, n, m, 0, 0, "random", "n=" + std::to_string(n) + " max=" + std::to_string(m) + "MiB"});
  }
  for (std::size_t size : {256ul, 1ul << 20}) {
    r.push_back({Row::HotPair, 0, 0, size, 0, "hot_pair", "size=" + std::to_string(size)});
  }
  // RMM_AB_THREAD_N: allocations per thread of the thread rows (default 20000).
  std::size_t const tn = std::getenv("RMM_AB_THREAD_N") ? std::atoll(std::getenv("RMM_AB_THREAD_N")) : 20000;
  std::string const tp = " n=" + std::to_string(tn) + " max=1MiB";
  if (8 <= max_threads) r.push_back({Row::Threads, tn, 1, 0, 8, "threads8", tp.substr(1)});
  for (int t : {1, 2, 4, 16, 32}) {
    if (t > max_threads) continue;
    r.push_back({Row::Threads, tn, 1, 0, t, "threads", "t=" + std::to_string(t) + tp});
  }
  // RMM_AB_ROWS: the workloads to run, comma-separated (default all).
  if (char const* only = std::getenv("RMM_AB_ROWS")) {
    std::string const wanted = std::string(",") + only + ",";
    std::erase_if(r, [&](Row const& row) { return wanted.find("," + row.workload + ",") == std::string::npos; });
  }
  return r;
}

// Runs `row` once on `side`; ns per operation (and the failed count).
template <class Side>
std::pair<double, std::size_t> run_row(Side& side, Row const& row, std::vector<rmm::cuda_stream>& streams)
{
  auto t0 = std::chrono::steady_clock::now();
  Count c;
  if (row.kind == Row::Random) {
    c = random_allocations(side, streams[0].value(), row.n, row.max_mib << 20, 16000ull << 20, 42);
    streams[0].synchronize();
  } else if (row.kind == Row::HotPair) {
    cudaStream_t s = streams[0].value();
    for (int i = 0; i < 200000; ++i) {
      void* p = side.allocate(s, row.size);
      if (p == nullptr) {
        c.failed++;
      } else {
        side.deallocate(s, p, row.size);
      }
    }
    c.ops = 400000;
    streams[0].synchronize();
  } else {
    std::vector<std::thread> ts;
    std::vector<Count> cs(row.threads);
    for (int t = 0; t < row.threads; ++t) {
      ts.emplace_back([&, t] {
        // Device 0's context current on the new thread before the clock
        // matters, for every side alike: the layers' bare driver calls need
        // one, and the resources would otherwise each make it current on
        // their first call (microseconds in a row of a second).
        cudaSetDevice(0);
        cs[t] = random_allocations(side, streams[1 + t].value(), row.n, row.max_mib << 20, 1000ull << 20,
                                   1000 + t);
      });
    }
    for (auto& t : ts) t.join();
    for (int t = 0; t < row.threads; ++t) streams[1 + t].synchronize();
    for (auto& x : cs) {
      c.ops += x.ops;
      c.failed += x.failed;
    }
  }
  double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {sec * 1e9 / static_cast<double>(std::max<std::size_t>(c.ops, 1)), c.failed};
}

double median(std::vector<double> v)
{
  std::sort(v.begin(), v.end());
  std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// One side of a comparison: a name and its workloads, run with direct
// (inlined) calls into the side's allocate and deallocate.
struct Runner {
  std::string impl;
  bool layer;  // a layer: skips the thread rows above layer_threads
  std::function<std::pair<double, std::size_t>(Row const&, std::vector<rmm::cuda_stream>&)> run;
  std::vector<double> times;
};

template <class Side>
Runner runner(std::string impl, Side side, bool layer)
{
  return Runner{std::move(impl), layer,
                [side](Row const& row, std::vector<rmm::cuda_stream>& streams) mutable {
                  return run_row(side, row, streams);
                },
                {}};
}

// Runs every row on every side (sides[0] is RMM's, sides[1] ours), each
// repetition running every side once, each side first in turn.
void compare(char const* name, std::vector<Runner>& sides, int reps, double row_seconds, int max_threads,
             int layer_threads)
{
  std::vector<rmm::cuda_stream> streams(33);
  // Warm-up of every side, outside the timed rows (WORKLOADS.md).
  Row warm{Row::Random, 1000, 64, 0, 0, "warm-up", ""};
  for (auto& side : sides) side.run(warm, streams);
  for (auto const& row : rows(max_threads)) {
    std::vector<Runner*> active;
    for (auto& side : sides) {
      side.times.clear();
      if (!side.layer || row.kind != Row::Threads || row.threads <= layer_threads) active.push_back(&side);
    }
    std::size_t const n = active.size();
    std::vector<std::vector<double>> paired(n);  // against active[0], RMM's
    auto row_start = std::chrono::steady_clock::now();
    for (int rep = 0; rep < reps; ++rep) {
      double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - row_start).count();
      if (rep >= 3 && spent > row_seconds) break;
      std::vector<std::pair<double, std::size_t>> got(n);
      for (std::size_t k = 0; k < n; ++k) {
        std::size_t i = (static_cast<std::size_t>(rep) + k) % n;
        got[i]        = active[i]->run(row, streams);
      }
      for (std::size_t i = 0; i < n; ++i) {
        std::printf("%s,%s,%s,%s,%d,%.1f,%zu\n", active[i]->impl.c_str(), name, row.workload.c_str(),
                    row.params.c_str(), rep, got[i].first, got[i].second);
        active[i]->times.push_back(got[i].first);
        paired[i].push_back(got[i].first / got[0].first);
      }
    }
    auto const& a = active[0]->times;
    auto const& b = active[1]->times;
    std::printf("summary,%s,%s,%s,%.1f,%.1f,%.3f,%.3f,%.1f,%.1f\n", name, row.workload.c_str(),
                row.params.c_str(), median(a), median(b), median(b) / median(a), median(paired[1]),
                *std::min_element(a.begin(), a.end()), *std::min_element(b.begin(), b.end()));
    for (std::size_t i = 2; i < n; ++i) {
      auto const& t = active[i]->times;
      std::printf("layer,%s,%s,%s,%s,%.1f,%.1f,%.3f,%.3f\n", name, row.workload.c_str(), row.params.c_str(),
                  active[i]->impl.c_str(), median(t), *std::min_element(t.begin(), t.end()),
                  median(t) / median(a), median(paired[i]));
    }
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv)
{
  std::vector<std::string> wanted(argv + 1, argv + argc);
  if (wanted.empty()) wanted = {"cuda_async", "pool"};
  int reps = std::getenv("RMM_AB_REPS") ? std::atoi(std::getenv("RMM_AB_REPS")) : 9;
  double row_seconds = std::getenv("RMM_AB_ROW_SECONDS") ? std::atof(std::getenv("RMM_AB_ROW_SECONDS")) : 8.0;
  int max_threads = std::getenv("RMM_AB_MAX_THREADS") ? std::atoi(std::getenv("RMM_AB_MAX_THREADS")) : 32;
  bool layers     = !std::getenv("RMM_AB_LAYERS") || std::atoi(std::getenv("RMM_AB_LAYERS")) != 0;
  int layer_threads =
    std::getenv("RMM_AB_LAYER_THREADS") ? std::atoi(std::getenv("RMM_AB_LAYER_THREADS")) : 8;
  std::printf("impl,resource,workload,params,rep,ns_per_op,failed\n");
  for (auto const& name : wanted) {
    // 40% of the free memory, rounded down to 2 MiB: both pools refuse an
    // initial size that is not a multiple of 256 bytes.
    std::size_t const step = std::size_t{2} << 20;
    std::size_t pool_bytes = rmm::available_device_memory().first / 5 * 2 / step * step;
    RmmAbHandle* h = rmm_ab_new(name.c_str(), pool_bytes);
    if (h == nullptr) {
      std::fprintf(stderr, "rmm_ab: no resource %s of ours\n", name.c_str());
      return 1;
    }
    std::vector<Runner> sides;
    auto run = [&](auto& mr) {
      sides.insert(sides.begin(), runner("rmm", RmmSide<std::remove_reference_t<decltype(mr)>>{mr}, false));
      compare(name.c_str(), sides, reps, row_seconds, max_threads, layer_threads);
    };
    sides.push_back(runner("rmm-rs", OurSide{h}, false));
    if (name == "cuda_async") {
      rmm::mr::cuda_async_memory_resource mr;
      if (layers) {
        auto ours = rmm_ab_pool_handle(h);
        sides.push_back(runner("cudart@rmm", CudartSide{mr.pool_handle()}, true));
        sides.push_back(runner("driver@rmm", DriverSide{reinterpret_cast<CUmemoryPool>(mr.pool_handle())}, true));
        sides.push_back(runner("driver@rs", DriverSide{reinterpret_cast<CUmemoryPool>(ours)}, true));
        sides.push_back(runner("binding@rs", BindingSide{ours}, true));
      }
      run(mr);
    } else if (name == "pool") {
      rmm::mr::cuda_memory_resource cuda;
      rmm::mr::pool_memory_resource mr{cuda, pool_bytes};
      run(mr);
    } else if (name == "binning") {
      rmm::mr::cuda_memory_resource cuda;
      rmm::mr::pool_memory_resource pool{cuda, pool_bytes};
      rmm::mr::binning_memory_resource mr{pool, 18, 22};
      run(mr);
    } else if (name == "arena") {
      rmm::mr::cuda_memory_resource cuda;
      rmm::mr::arena_memory_resource mr{cuda, pool_bytes};
      run(mr);
    } else {
      std::fprintf(stderr, "rmm_ab: %s is not one of cuda_async pool binning arena\n", name.c_str());
      rmm_ab_drop(h);
      return 2;
    }
    rmm_ab_drop(h);
  }
  return 0;
}
