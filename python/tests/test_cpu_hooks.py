"""What runs without a GPU: the PyTorch hook's C functions without PyTorch,
threads sharing a pool through a Python callback, and the CuPy, PyTorch
and Numba glue against stand-in modules."""

import subprocess
import sys

import pytest

import rmm_rs
from rmm_rs import mr

GPU = rmm_rs.gpu_available()


# --- the PyTorch hook's C functions, without PyTorch ------------------------------


def test_torch_hook_symbols_without_torch(sim):
    """The exported C functions over the registry, called through ctypes,
    over a simulated resource set for a device."""
    import ctypes

    lib = ctypes.CDLL(rmm_rs._lib.__file__)
    lib.allocate.restype = ctypes.c_void_p
    lib.allocate.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
    lib.deallocate.restype = None
    lib.deallocate.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
    assert lib.allocate(-1, 0, None) is None  # a negative size: null, logged
    assert lib.allocate(16, -3, None) is None  # a negative device: null, logged
    lib.deallocate(None, 0, 0, None)
    mr.set_per_device_resource(7, sim)
    p = lib.allocate(1024, 7, None)
    assert p and p % 256 == 0
    assert sim.live_allocations() == 1
    lib.deallocate(p, 1024, 7, None)
    assert sim.live_allocations() == 0
    lib.deallocate(p, 1024, 7, None)  # a double free: refused and logged
    assert sim.bad_frees() == 1
    assert lib.allocate(0, 7, None) is None  # zero bytes: null, as in RMM
    small = mr.SimulatedMemoryResource(4096)
    mr.set_per_device_resource(7, small)
    assert lib.allocate(1 << 20, 7, None) is None  # out of memory: null, logged


HARNESS = r"""
#include <cstring>
#include <exception>
#include <new>
#include <sys/types.h>
// Calls a PyTorch-style allocate function and catches what it throws, so
// that no C++ exception reaches ctypes.
extern "C" int call_and_catch(void* fn, ssize_t size, int device, char* out, size_t cap, void** ptr) {
  using F = void* (*)(ssize_t, int, void*);
  out[0] = 0;
  try {
    *ptr = reinterpret_cast<F>(fn)(size, device, nullptr);
    return 0;
  } catch (const std::bad_alloc& e) {
    std::strncpy(out, e.what(), cap - 1);
    out[cap - 1] = 0;
    return 1;
  } catch (const std::exception& e) {
    std::strncpy(out, e.what(), cap - 1);
    out[cap - 1] = 0;
    return 2;
  } catch (...) {
    return 3;
  }
}
"""


def test_torch_allocate_throws_bad_alloc(tmp_path):
    """rmm_rs_torch_allocate (what rmm_torch_allocator uses) throws a C++
    std::bad_alloc carrying the message on failure: called here from a
    small C++ harness that catches it, as PyTorch does."""
    import ctypes
    import shutil

    gxx = shutil.which("g++") or shutil.which("c++")
    if gxx is None:
        pytest.skip("no C++ compiler for the harness")
    src = tmp_path / "harness.cpp"
    src.write_text(HARNESS)
    so = tmp_path / "harness.so"
    subprocess.run([gxx, "-shared", "-fPIC", "-O1", "-o", str(so), str(src)], check=True, timeout=120)
    harness = ctypes.CDLL(str(so))
    harness.call_and_catch.restype = ctypes.c_int
    harness.call_and_catch.argtypes = [
        ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t,
        ctypes.POINTER(ctypes.c_void_p),
    ]
    lib = ctypes.CDLL(rmm_rs._lib.__file__)
    fn = ctypes.cast(lib.rmm_rs_torch_allocate, ctypes.c_void_p).value
    free = lib.deallocate
    free.restype = None
    free.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
    small = mr.SimulatedMemoryResource("64KiB")
    mr.set_per_device_resource(7, small)
    out = ctypes.create_string_buffer(1024)
    ptr = ctypes.c_void_p()
    assert harness.call_and_catch(fn, 1024, 7, out, 1024, ctypes.byref(ptr)) == 0
    assert ptr.value and small.live_allocations() == 1
    free(ptr.value, 1024, 7, None)
    assert small.live_allocations() == 0
    assert harness.call_and_catch(fn, 1 << 20, 7, out, 1024, ctypes.byref(ptr)) == 1
    assert b"out_of_memory" in out.value, out.value
    assert harness.call_and_catch(fn, -1, 7, out, 1024, ctypes.byref(ptr)) == 1
    assert b"negative" in out.value
    # The interpreter is fine afterwards.
    assert rmm_rs.parse_bytes("1KiB") == 1024


def test_no_deadlock_between_gil_and_pool_lock():
    """Threads share a pool that grows through a Python callback (which
    needs the GIL) while others allocate and free: allocations, frees and
    buffer drops release the GIL, so nobody holds it while waiting for the
    pool's lock. Run in a subprocess so that a deadlock fails by timeout."""
    code = r"""
import threading, gc
import rmm_rs as rmm
sim = rmm.mr.SimulatedMemoryResource("64GiB")
def alloc(n, s):
    return sim.allocate(n, s)
def free(p, n, s):
    sim.deallocate(p, n, s)
cb = rmm.mr.CallbackMemoryResource(alloc, free, simulated=True)
pool = rmm.mr.PoolMemoryResource(cb, initial_pool_size=0)
errors = []
def work(seed):
    try:
        keep = []
        for i in range(400):
            n = ((i * 7919 + seed * 104729) % 4096 + 1) * 1024
            keep.append(rmm.DeviceBuffer(size=n, mr=pool))
            p = pool.allocate(n)
            pool.deallocate(p, n)
            if len(keep) > 8:
                keep.pop(0)
    except Exception as e:
        errors.append(e)
ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
for t in ts: t.start()
for t in ts: t.join()
assert not errors, errors
print("ok", pool.pool_size() > 0)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["ok", "True"]


def test_cupy_hook_glue_with_a_stand_in_cupy():
    """rmm_cupy_allocator's calls into CuPy, against a stand-in module
    (the real CuPy runs in test_cupy.py on the GPU)."""
    code = r"""
import sys, types
calls = {}
cupy = types.ModuleType("cupy")
cupy.cuda = types.SimpleNamespace()
class S:
    def __init__(self, ptr): self.ptr = ptr
current = [S(0)]
cupy.cuda.get_current_stream = lambda: current[0]
cupy.cuda.device = types.SimpleNamespace(get_device_id=lambda: 0)
class UnownedMemory:
    def __init__(self, ptr, size, owner, device_id):
        self.ptr, self.size, self.owner, self.device_id = ptr, size, owner, device_id
cupy.cuda.UnownedMemory = UnownedMemory
class MemoryPointer:
    def __init__(self, mem, offset):
        self.mem, self.ptr = mem, mem.ptr + offset
cupy.cuda.memory = types.SimpleNamespace(MemoryPointer=MemoryPointer)
sys.modules["cupy"] = cupy
import rmm_rs as rmm
from rmm_rs.allocators.cupy import rmm_cupy_allocator
sim = rmm.mr.SimulatedMemoryResource("1GiB")
st = rmm.mr.StatisticsResourceAdaptor(sim)
rmm.mr.set_current_device_resource(st)
mp = rmm_cupy_allocator(1000)
assert mp.ptr == mp.mem.owner.ptr != 0 and mp.mem.size == 1000 and mp.mem.device_id == mp.mem.owner.device == 0
assert mp.mem.owner.stream == rmm.DEFAULT_STREAM
current[0] = S(0x5000)
mp2 = rmm_cupy_allocator(10)
assert mp2.mem.owner.stream.ptr == 0x5000
assert st.allocation_counts["current_count"] == 2
zero = rmm_cupy_allocator(0)
assert zero.ptr == 0 and zero.mem.device_id == 0
del mp, mp2, zero
import gc; gc.collect()
assert st.allocation_counts["current_count"] == 0
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "ok"


def test_torch_hook_glue_with_a_stand_in_torch():
    """rmm_torch_allocator is a CUDAPluggableAllocator over the extension
    library and two symbols it exports (stand-in torch module)."""
    code = r"""
import sys, types, ctypes
made = []
class CUDAPluggableAllocator:
    def __init__(self, path, alloc_fn_name, free_fn_name):
        made.append((path, alloc_fn_name, free_fn_name))
torch = types.ModuleType("torch")
torch.cuda = types.ModuleType("torch.cuda")
torch.cuda.memory = types.ModuleType("torch.cuda.memory")
torch.cuda.memory.CUDAPluggableAllocator = CUDAPluggableAllocator
torch.cuda.is_available = lambda: False
sys.modules.update({"torch": torch, "torch.cuda": torch.cuda, "torch.cuda.memory": torch.cuda.memory})
import rmm_rs
import rmm_rs.allocators.torch as hook
# As in RMM: None while PyTorch has no CUDA.
assert hook.rmm_torch_allocator is None and made == []
torch.cuda.is_available = lambda: True
import importlib
importlib.reload(hook)
rmm_torch_allocator = hook.rmm_torch_allocator
assert isinstance(rmm_torch_allocator, CUDAPluggableAllocator)
(path, a, f), = made
assert path == rmm_rs._lib.__file__
lib = ctypes.CDLL(path)
getattr(lib, a); getattr(lib, f)
print(a, f)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["rmm_rs_torch_allocate", "deallocate"]


def test_numba_plugin_glue_with_a_stand_in_numba():
    """RMMNumbaManager against a stand-in of Numba-CUDA's EMM interface
    (the real Numba runs in test_gpu.py when it can be imported)."""
    code = r"""
import sys, types, ctypes, gc
numba = types.ModuleType("numba")
cuda = types.ModuleType("numba.cuda")
cudadrv = types.ModuleType("numba.cuda.cudadrv")
driver = types.ModuleType("numba.cuda.cudadrv.driver")
class HostOnlyCUDAMemoryManager:
    def __init__(self, *args, context=None, **kwargs):
        self.context = context
    def initialize(self): pass
    def reset(self): pass
class MemoryPointer:
    def __init__(self, context, pointer, size, owner=None, finalizer=None):
        self.context, self.device_pointer, self.size, self.finalizer = context, pointer, size, finalizer
from collections import namedtuple
cuda.HostOnlyCUDAMemoryManager = HostOnlyCUDAMemoryManager
cuda.MemoryPointer = MemoryPointer
cuda.MemoryInfo = namedtuple("MemoryInfo", "free total")
cuda.IpcHandle = object
driver.USE_NV_BINDING = False
numba.cuda = cuda; cuda.cudadrv = cudadrv; cudadrv.driver = driver
sys.modules.update({"numba": numba, "numba.cuda": cuda, "numba.cuda.cudadrv": cudadrv,
                    "numba.cuda.cudadrv.driver": driver})
import rmm_rs as rmm
from rmm_rs.allocators import numba as plugin
assert plugin._numba_memory_manager is plugin.RMMNumbaManager
sim = rmm.mr.SimulatedMemoryResource("1GiB")
rmm.mr.set_current_device_resource(sim)
mgr = plugin.RMMNumbaManager(context="ctx")
mgr.initialize()
assert mgr.interface_version == 1
mp = mgr.memalloc(1000)
assert mp.context == "ctx" and mp.size == 1000
assert isinstance(mp.device_pointer, ctypes.c_uint64) and mp.device_pointer.value != 0
assert sim.live_allocations() == 1
mp.finalizer()
gc.collect()
assert sim.live_allocations() == 0
mp2 = mgr.memalloc(10)
mgr.reset()
gc.collect()
assert sim.live_allocations() == 0
try:
    mgr.get_memory_info()
    print("info")
except rmm.DriverUnavailableError:
    print("no GPU")
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split()[-1] == "ok"
