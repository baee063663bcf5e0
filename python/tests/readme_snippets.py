"""The Python snippets of RMM's README (reference/rmm-readme.txt, "Using
RMM in Python"), each as written there, run with ``import rmm_rs as rmm``
(``from rmm.X`` becomes ``from rmm_rs.X``: a ``from`` import names the real
module). Each runs in a fresh interpreter (the hooks are process-wide).
Asserts follow the README's shown results."""

SNIPPETS = {
    "device_buffer": """
import rmm
buf = rmm.DeviceBuffer(size=100)
assert buf.size == 100
assert isinstance(buf.ptr, int) and buf.ptr != 0
""",
    "to_device_numpy": """
import rmm
import numpy as np
a = np.array([1, 2, 3], dtype='float64')
buf = rmm.DeviceBuffer.to_device(a.tobytes())
assert buf.size == 24
out = np.frombuffer(buf.tobytes())
assert (out == np.array([1., 2., 3.])).all()
""",
    "managed": """
import rmm
rmm.mr.set_current_device_resource(rmm.mr.ManagedMemoryResource())
buf = rmm.DeviceBuffer(size=1000)
assert isinstance(rmm.mr.get_current_device_resource(), rmm.mr.ManagedMemoryResource)
""",
    "pool": """
import rmm
pool = rmm.mr.PoolMemoryResource(
    rmm.mr.CudaMemoryResource(),
    initial_pool_size="1GiB", # equivalent to initial_pool_size=2**30
    maximum_pool_size="4GiB"
)
rmm.mr.set_current_device_resource(pool)
buf = rmm.DeviceBuffer(size=1000)
assert pool.pool_size() == 2**30
""",
    "cupy": """
from rmm.allocators.cupy import rmm_cupy_allocator
import cupy
cupy.cuda.set_allocator(rmm_cupy_allocator)
x = cupy.arange(1000, dtype=cupy.float32)
assert float((x * 2).sum()) == 999000.0
""",
    "numba_set_memory_manager": """
from numba import cuda
from rmm.allocators.numba import RMMNumbaManager
cuda.set_memory_manager(RMMNumbaManager)
import numpy as np
d = cuda.to_device(np.arange(10))
assert (d.copy_to_host() == np.arange(10)).all()
assert type(cuda.current_context().memory_manager).__name__ == "RMMNumbaManager"
""",
    "torch_pool": """
import rmm
from rmm.allocators.torch import rmm_torch_allocator
import torch

rmm.reinitialize(pool_allocator=True)
torch.cuda.memory.change_current_allocator(rmm_torch_allocator)
x = torch.ones(1000, device="cuda")
assert float(x.sum()) == 1000.0
""",
    "torch_statistics": """
import rmm
from rmm.allocators.torch import rmm_torch_allocator
import torch

# Note that you can configure PyTorch to use RMM either before or
# after changing RMM's memory resource. PyTorch will use whatever
# memory resource is configured to be the "current" memory resource at
# the time of allocation.
torch.cuda.change_current_allocator(rmm_torch_allocator)

# Configure RMM to use a managed memory resource, wrapped with a
# statistics resource adaptor that can report information about the
# amount of memory allocated:
mr = rmm.mr.StatisticsResourceAdaptor(rmm.mr.ManagedMemoryResource())
rmm.mr.set_current_device_resource(mr)

x = torch.tensor([1, 2]).cuda()

# The memory resource reports information about PyTorch allocations:
print(mr.allocation_counts)
assert mr.allocation_counts == {
    'current_bytes': 16,
    'current_count': 1,
    'peak_bytes': 16,
    'peak_count': 1,
    'total_bytes': 16,
    'total_count': 1,
}, mr.allocation_counts
""",
}

# Which optional library each snippet needs.
NEEDS = {
    "to_device_numpy": "numpy",
    "cupy": "cupy",
    "numba_set_memory_manager": "numba",
    "torch_pool": "torch",
    "torch_statistics": "torch",
}


def as_rmm_rs(code):
    """``import rmm`` -> ``import rmm_rs as rmm``; ``from rmm.`` -> ``from rmm_rs.``."""
    lines = []
    for line in code.splitlines():
        if line.strip() == "import rmm":
            line = line.replace("import rmm", "import rmm_rs as rmm")
        elif line.lstrip().startswith("from rmm."):
            line = line.replace("from rmm.", "from rmm_rs.", 1)
        lines.append(line)
    return "\n".join(lines) + "\n"
