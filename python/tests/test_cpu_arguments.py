"""What runs without a GPU: sizes and argument errors, streams, and device
buffers over the simulated resource."""

import gc
import pickle

import pytest

import rmm_rs
import rmm_rs as rmm
from rmm_rs import mr

GPU = rmm_rs.gpu_available()


# --- sizes and arguments ------------------------------------------------------


@pytest.mark.parametrize(
    "text,value",
    [
        ("1GiB", 1 << 30),
        ("512MiB", 512 << 20),
        ("100MB", 100_000_000),
        ("4KiB", 4096),
        ("1.5kB", 1500),
        (" 2 gib ", 2 << 30),
        ("4096", 4096),
        ("1e6", 1_000_000),
        ("10B", 10),
        (12345, 12345),
    ],
)
def test_size_strings(text, value):
    assert rmm.parse_bytes(text) == value


@pytest.mark.parametrize("bad", ["", "MiB", "1 parsec", "-1MiB", "1..2GB"])
def test_bad_size_strings(bad):
    with pytest.raises(ValueError):
        rmm.parse_bytes(bad)


@pytest.mark.parametrize("bad", [1.5, None, [1], True])
def test_bad_size_types(bad):
    with pytest.raises(TypeError):
        rmm.parse_bytes(bad)


def test_sizes_everywhere(sim):
    pool = mr.PoolMemoryResource(sim, initial_pool_size="1MiB", maximum_pool_size="4MiB")
    assert pool.pool_size() == 1 << 20
    assert pool.maximum_pool_size() == 4 << 20
    b = rmm.DeviceBuffer(size="1KiB", mr=pool)
    assert b.size == 1024
    lim = mr.LimitingResourceAdaptor(sim, allocation_limit="1MB")
    assert lim.get_allocation_limit() == 1_000_000


def test_argument_errors(sim):
    with pytest.raises(ValueError):
        rmm.DeviceBuffer(size=-1, mr=sim)
    with pytest.raises(TypeError):
        rmm.DeviceBuffer(size=10, mr="pool")
    with pytest.raises(TypeError):
        rmm.DeviceBuffer(size=10, mr=sim, stream=object())
    with pytest.raises(TypeError):
        rmm.DeviceBuffer(size=10, mr=sim, stream=42)
    with pytest.raises(TypeError):
        rmm.DeviceBuffer(10)  # keyword-only, as in RMM
    with pytest.raises(ValueError):
        sim.allocate(-5)
    with pytest.raises(TypeError):
        mr.PoolMemoryResource("not a resource")
    with pytest.raises(ValueError, match="multiple of 256"):
        mr.PoolMemoryResource(sim, initial_pool_size=1000)
    with pytest.raises(ValueError, match="exceeds"):
        mr.PoolMemoryResource(sim, initial_pool_size="2MiB", maximum_pool_size="1MiB")
    with pytest.raises(ValueError):
        mr.FixedSizeMemoryResource(sim, block_size=0)
    with pytest.raises(ValueError):
        mr.FixedSizeMemoryResource(sim, blocks_to_preallocate=0)
    with pytest.raises(TypeError):
        mr.CallbackMemoryResource(1, 2)
    with pytest.raises(TypeError):
        mr.FailureCallbackResourceAdaptor(sim, "nope")
    with pytest.raises(TypeError):
        mr.set_current_device_resource(object())
    with pytest.raises(ValueError):
        mr.set_per_device_resource(-1, sim)
    with pytest.raises(TypeError):
        mr.get_per_device_resource("0")
    with pytest.raises(ValueError):
        mr.BinningMemoryResource(sim, 12, 10)
    with pytest.raises(ValueError):
        mr.AlignedResourceAdaptor(sim, alignment=48)


def test_closed_resource_is_a_value_error():
    bare = mr.DeviceMemoryResource()
    with pytest.raises(ValueError, match="holds no resource"):
        bare.allocate(10)
    with pytest.raises(ValueError, match="holds no resource"):
        mr.PoolMemoryResource(bare)
    with pytest.raises(ValueError):
        rmm.DeviceBuffer(size=10, mr=bare)
    with pytest.raises(ValueError):
        mr.set_current_device_resource(bare)


# --- streams ----------------------------------------------------------------


class FakeStream:
    """A stream-like object (the simulated resource never touches streams)."""

    def __init__(self, handle):
        self.handle_value = handle

    def __cuda_stream__(self):
        return (0, self.handle_value)


def test_streams_over_simulated(sim):
    from rmm_rs.pylibrmm.stream import DEFAULT_STREAM, Stream

    assert DEFAULT_STREAM.is_default()
    assert rmm.DEFAULT_STREAM.__cuda_stream__() == (0, 0)
    assert rmm.PER_THREAD_DEFAULT_STREAM.ptr == 2
    fake = FakeStream(0x1234)
    s = Stream(fake)
    assert s.__cuda_stream__() == (0, 0x1234)
    assert Stream(s) == s
    assert s != DEFAULT_STREAM
    b = rmm.DeviceBuffer(size=100, stream=fake, mr=sim)
    assert b.stream.ptr == 0x1234
    p = sim.allocate(100, stream=fake)
    sim.deallocate(p, 100, stream=s)

    class TorchLike:
        cuda_stream = 0x99

    class CupyLike:
        ptr = 0x77

    assert Stream(TorchLike()).ptr == 0x99
    assert Stream(CupyLike()).ptr == 0x77
    with pytest.raises(TypeError):
        Stream("stream")


# --- DeviceBuffer over the simulated resource ---------------------------------


def test_device_buffer_bookkeeping(sim):
    b = rmm.DeviceBuffer(size=100, mr=sim)
    assert (b.size, b.nbytes, len(b), b.capacity()) == (100, 100, 100, 100)
    assert b.ptr != 0 and b.ptr % 256 == 0
    assert b.mr is sim
    b.resize(50)
    assert (b.size, b.capacity()) == (50, 100)
    b.resize(300)
    assert (b.size, b.capacity()) == (300, 300)
    b.reserve(1000)
    assert (b.size, b.capacity()) == (300, 1000)
    b.reserve(10)
    assert b.capacity() == 1000
    assert sim.live_allocations() == 1
    del b
    gc.collect()
    assert sim.live_allocations() == 0
    empty = rmm.DeviceBuffer(mr=sim)
    assert empty.size == 0 and empty.ptr == 0
    assert empty.tobytes() == b""
    assert "DeviceBuffer" in repr(empty)


def test_simulated_buffers_have_no_contents(sim):
    b = rmm.DeviceBuffer(size=16, mr=sim)
    with pytest.raises(rmm_rs.RMMError, match="simulated"):
        b.tobytes()
    with pytest.raises(rmm_rs.RMMError, match="simulated"):
        b.copy_from_host(b"x" * 16)
    with pytest.raises(rmm_rs.RMMError, match="simulated"):
        rmm.DeviceBuffer.to_device(b"abc", mr=sim)
    with pytest.raises(TypeError, match="pickle"):
        pickle.dumps(b)
    assert not hasattr(b, "__cuda_array_interface__")
    with pytest.raises(ValueError, match="do not fit"):
        b.copy_from_host(b"x" * 17)
    b.prefetch()  # nothing to do for simulated memory


def test_copy_to_host_default_target_is_bytes(sim):
    # RMM returns a uint8 NumPy array (numpy.empty's default dtype is float64;
    # the GPU run caught that). A zero-size buffer needs no contents.
    np = pytest.importorskip("numpy")
    arr = rmm.DeviceBuffer(size=0, mr=sim).copy_to_host()
    assert isinstance(arr, np.ndarray)
    assert arr.dtype == np.uint8 and arr.shape == (0,)


def test_buffer_uses_the_current_resource(sim):
    mr.set_current_device_resource(sim)
    assert mr.get_current_device_resource() is sim
    assert mr.get_current_device_resource_type() is mr.SimulatedMemoryResource
    b = rmm.DeviceBuffer(size=1000)
    assert sim.live_allocations() == 1
    assert b.mr is sim
    assert rmm.is_initialized()


def test_buffers_keep_their_resource_alive():
    sim = mr.SimulatedMemoryResource("1MiB")
    pool = mr.PoolMemoryResource(sim, initial_pool_size="256KiB")
    b = rmm.DeviceBuffer(size=1000, mr=pool)
    del pool
    gc.collect()
    assert b.mr.pool_size() == 256 << 10  # still there
    b.resize(5000)
    del b
    gc.collect()
    # The pool went away with the buffer and gave its chunk back.
    assert sim.live_allocations() == 0
