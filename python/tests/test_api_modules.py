"""RMM 26.08's Python modules over rmm_rs: module layout, reinitialize and
its hooks, is_initialized, parse_bytes's grammar, the logger's levels,
statistics objects, the profiler's report, the logging switches and
``rmm._cuda.gpu``. CPU tests run over the simulated resource; the ``gpu``
ones need a GPU."""

import ast
import inspect
import os
import pathlib
import pickle
import re
import warnings

import pytest
from conftest import run_py

import rmm_rs
import rmm_rs as rmm
from rmm_rs import mr
from rmm_rs._cuda import gpu
from rmm_rs.pylibrmm import helper, logger
from rmm_rs.pylibrmm.memory_resource import _memory_resource, _registry, _setup

GPU = rmm_rs.gpu_available()
PACKAGE = pathlib.Path(rmm_rs.__file__).parent


# --- module layout ------------------------------------------------------------


def test_one_object_under_every_path():
    import rmm_rs.librmm._logger
    from rmm_rs.pylibrmm import memory_resource

    assert hasattr(memory_resource, "__path__"), "memory_resource is a package, as in RMM"
    for name in memory_resource.__all__:
        if name != "experimental":  # two modules, as in RMM, naming one class
            assert getattr(mr, name) is getattr(memory_resource, name) is getattr(_memory_resource, name), name
    assert mr.experimental.CudaAsyncManagedMemoryResource is (
        memory_resource.experimental.CudaAsyncManagedMemoryResource
    )
    assert mr.experimental.__name__ == "rmm_rs.mr.experimental"
    assert memory_resource.experimental.__name__ == "rmm_rs.pylibrmm.memory_resource.experimental"
    assert rmm.enable_logging is mr.enable_logging is _setup.enable_logging
    assert rmm.get_log_filenames is _setup.get_log_filenames
    assert _memory_resource._initialize is _setup._initialize
    assert _memory_resource._flush_logs is _setup._flush_logs
    assert mr.is_initialized is _registry.is_initialized
    assert rmm._cuda.stream.Stream is rmm.pylibrmm.stream.Stream is rmm.Stream
    assert rmm.librmm._logger.level_enum is logger.level_enum is rmm.level_enum
    assert rmm.pylibrmm.DeviceBuffer is rmm.DeviceBuffer is rmm.pylibrmm.device_buffer.DeviceBuffer
    assert rmm.pylibrmm.CudaStreamFlags is rmm.pylibrmm.stream.CudaStreamFlags
    assert rmm.pylibrmm.CudaStreamPool is rmm.pylibrmm.cuda_stream_pool.CudaStreamPool
    assert not hasattr(rmm_rs._lib, "Statistics")  # one home: rmm_rs.statistics
    assert rmm.RMMError is rmm.rmm.RMMError is rmm_rs._lib.RMMError


def _imports(path, modules):
    """The rmm_rs modules of ``modules`` that ``path`` imports (anywhere in
    it, functions too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in modules else node.module)
    return found & set(modules)


def test_no_import_circle():
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    graph = {name: _imports(path, set(modules) | {"rmm_rs._lib"}) for name, path in modules.items()}
    graph["rmm_rs._lib"] = set()  # the extension imports no Python module
    # A package's __init__ importing its own children is how packages are
    # built; every other edge must leave no cycle.
    state = {}

    def visit(name, trail):
        if state.get(name) == "done":
            return
        assert state.get(name) != "open", "import circle: " + " -> ".join(trail + [name])
        state[name] = "open"
        for dep in sorted(graph[name]):
            if dep != name and not dep.startswith(name + "."):
                visit(dep, trail + [name])
        state[name] = "done"

    for name in sorted(graph):
        visit(name, [])
    # The registry and the set-up import neither the top-level functions nor
    # the modules re-exporting them; the registry not even the set-up.
    above = {"rmm_rs", "rmm_rs.rmm", "rmm_rs.mr", "rmm_rs.statistics"}
    home = "rmm_rs.pylibrmm.memory_resource."
    assert not graph[home + "_memory_resource"] & above
    assert not graph[home + "_setup"] & (above | {home + "_memory_resource"})
    assert not graph[home + "_registry"] & (above | {home + "_memory_resource", home + "_setup"})


@pytest.mark.parametrize(
    "first",
    [
        "rmm_rs.rmm",
        "rmm_rs.mr",
        "rmm_rs.statistics",
        "rmm_rs.pylibrmm.memory_resource._memory_resource",
        "rmm_rs._cuda.gpu",
        "rmm_rs.librmm._logger",
    ],
)
def test_any_module_imports_first(first):
    out = run_py(f"import {first}, rmm_rs; print(rmm_rs.reinitialize.__module__)")
    assert out.split() == ["rmm_rs.rmm"]


def test_plain_import_binds_every_rmm_submodule():
    # RMM's test_helpers.py reaches rmm._cuda.gpu after a bare ``import rmm``.
    code = (
        "import rmm_rs\n"
        "names = ['_cuda.gpu.getDevice', '_cuda.stream.Stream', 'mr.experimental', 'rmm.reinitialize',\n"
        "         'pylibrmm.memory_resource._memory_resource._flush_logs', 'pylibrmm.cuda_stream_pool',\n"
        "         'pylibrmm.helper.parse_bytes', 'pylibrmm.logger', 'pylibrmm.stream', 'pylibrmm.device_buffer',\n"
        "         'pylibrmm.memory_resource.experimental', 'statistics', '_version']\n"
        "for name in names:\n"
        "    obj = rmm_rs\n"
        "    for part in name.split('.'):\n"
        "        obj = getattr(obj, part)\n"
        "print('ok')\n"
    )
    assert run_py(code).strip() == "ok"


def test_version_constants():
    assert isinstance(rmm.__git_commit__, str)
    # The wheel the tests run is built from this checkout (a git clone), so
    # python/build.rs recorded the commit.
    assert re.fullmatch(r"[0-9a-f]{40}", rmm.__git_commit__), rmm.__git_commit__
    assert rmm.__version__ == rmm_rs._lib.__version__ != ""
    assert rmm._version.__all__ == ["__git_commit__", "__version__"]


def test_signatures_as_in_rmm():
    def params(fn):
        return [(p.name, p.kind.name, p.default) for p in inspect.signature(fn).parameters.values()]

    pos = "POSITIONAL_OR_KEYWORD"
    assert params(rmm.reinitialize) == [
        ("pool_allocator", pos, False),
        ("managed_memory", pos, False),
        ("initial_pool_size", pos, None),
        ("maximum_pool_size", pos, None),
        ("devices", pos, 0),
        ("logging", pos, False),
        ("log_file_name", pos, None),
        ("simulated_memory", "KEYWORD_ONLY", None),
    ]
    assert params(_setup._initialize)[:7] == params(rmm.reinitialize)[:7]
    assert params(rmm.register_reinitialize_hook) == [
        ("func", pos, inspect.Parameter.empty),
        ("args", "VAR_POSITIONAL", inspect.Parameter.empty),
        ("kwargs", "VAR_KEYWORD", inspect.Parameter.empty),
    ]
    assert params(rmm.enable_logging) == [("log_file_name", pos, None)]
    assert params(rmm.statistics.profiler) == [
        ("records", "KEYWORD_ONLY", rmm.statistics.default_profiler_records),
        ("name", "KEYWORD_ONLY", ""),
    ]
    assert params(mr.BinningMemoryResource.__init__)[1:] == [
        ("upstream_mr", pos, inspect.Parameter.empty),
        ("min_size_exponent", pos, -1),
        ("max_size_exponent", pos, -1),
    ]
    assert params(gpu.getDeviceAttribute) == [
        ("attr", pos, inspect.Parameter.empty),
        ("device", pos, inspect.Parameter.empty),
    ]


# --- reinitialize, hooks, is_initialized -----------------------------------------


def test_reinitialize_hooks_run_last_registered_first(sim):
    calls = []
    mr.set_current_device_resource(sim)

    def seen_resource(tag, *, key=None):
        # Hooks run before the new set-up: the old resource is still current.
        calls.append((tag, key, mr.get_current_device_resource() is sim))

    one = rmm.register_reinitialize_hook(seen_resource, "one", key=1)
    assert one is seen_resource
    two = rmm.register_reinitialize_hook(calls.append, "two")
    try:
        rmm.reinitialize(simulated_memory="1MiB")
        assert calls == ["two", ("one", 1, True)]
        calls.clear()
        rmm.unregister_reinitialize_hook(two)
        rmm.reinitialize(simulated_memory="1MiB")
        assert calls == [("one", 1, False)]
    finally:
        rmm.unregister_reinitialize_hook(one)
        rmm.unregister_reinitialize_hook(two)
    calls.clear()
    rmm.reinitialize(simulated_memory="1MiB")
    assert calls == []


def test_unregister_removes_every_registration():
    calls = []
    rmm.register_reinitialize_hook(calls.append, 1)
    rmm.register_reinitialize_hook(calls.append, 2)
    rmm.register_reinitialize_hook(len, "x")
    rmm.unregister_reinitialize_hook(calls.append)
    rmm.unregister_reinitialize_hook(len)
    rmm.unregister_reinitialize_hook(print)  # never registered: nothing happens
    rmm.reinitialize(simulated_memory="1MiB")
    assert calls == []


def test_hooks_run_even_when_the_set_up_then_fails(sim):
    calls = []
    mr.set_current_device_resource(sim)
    rmm.register_reinitialize_hook(calls.append, "hook")
    try:
        with pytest.raises(ValueError, match="Could not parse"):
            rmm.reinitialize(pool_allocator=True, initial_pool_size="2k", simulated_memory="1MiB")
    finally:
        rmm.unregister_reinitialize_hook(calls.append)
    assert calls == ["hook"]
    assert mr.get_current_device_resource() is sim  # the old set-up stays


def test_reinitialize_devices_none_is_device_0():
    rmm.reinitialize(devices=None, simulated_memory="1MiB")
    assert isinstance(mr.get_per_device_resource(0), mr.SimulatedMemoryResource)


def test_reinitialize_replaces_the_whole_set_up():
    rmm.reinitialize(devices=[0, 1], simulated_memory="1MiB")
    first = mr.get_per_device_resource(1)
    assert isinstance(first, mr.SimulatedMemoryResource)
    rmm.reinitialize(devices=[0], simulated_memory="1MiB")
    # RMM forgets every device's earlier resource: device 1 is back to its
    # initial resource.
    assert list(rmm.get_log_filenames()) == [0]
    assert isinstance(mr.get_per_device_resource(1), mr.CudaMemoryResource)


def test_reinitialize_pool_sizes_parsed_as_rmm_parses_them():
    rmm.reinitialize(
        pool_allocator=True, initial_pool_size="2kib", maximum_pool_size="8kib", simulated_memory="1MiB"
    )
    pool = mr.get_current_device_resource()
    assert pool.pool_size() == 2048
    assert pool.maximum_pool_size() == 8192
    with pytest.raises(ValueError, match="Could not parse 2k as a byte specification"):
        rmm.reinitialize(pool_allocator=True, initial_pool_size="2k", maximum_pool_size="8k")
    # Without a pool RMM ignores them.
    rmm.reinitialize(initial_pool_size="2k", maximum_pool_size=[], simulated_memory="1MiB")
    assert isinstance(mr.get_current_device_resource(), mr.SimulatedMemoryResource)


def test_is_initialized_follows_rmms_rule():
    # RMM: every resource set holds a resource; true from the start.
    assert run_py("import rmm_rs; print(rmm_rs.is_initialized(), rmm_rs.mr.is_initialized())").split() == [
        "True",
        "True",
    ]
    assert rmm.is_initialized()
    _registry._per_device_mrs[9] = mr.DeviceMemoryResource()  # a bare object, as RMM counts it
    try:
        assert not rmm.is_initialized()
        assert not mr.is_initialized()
    finally:
        del _registry._per_device_mrs[9]
    assert rmm.is_initialized()


# --- parse_bytes ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2kib", 2048),
        ("8KiB", 8192),
        ("1.5 kb", 1500),
        ("3\tMB", 3_000_000),
        ("1.", 1),
        ("4096", 4096),
        ("7b", 7),
        ("1GiB", 1 << 30),
        ("2PB", 2 * 1000**5),
    ],
)
def test_parse_bytes_accepts_rmms_grammar(text, expected):
    assert helper.parse_bytes(text) == expected


@pytest.mark.parametrize("text", ["2k", "1Gi", "1e3", "", " 1kb", "1_000", "-1", "kb", "1.5.2mb", "1 parsec"])
def test_parse_bytes_refuses_what_rmm_refuses(text):
    with pytest.raises(ValueError, match=f"^Could not parse {text} as a byte specification$"):
        helper.parse_bytes(text)


def test_parse_bytes_ints_and_types():
    assert helper.parse_bytes(12345) == 12345
    with pytest.raises(TypeError):
        helper.parse_bytes(1.5)
    with pytest.raises(TypeError):
        helper.parse_bytes(None)


# --- logger levels ---------------------------------------------------------------------


def test_level_enum_as_rapids_logger_numbers_it():
    assert [(m.name, int(m)) for m in logger.level_enum] == [
        ("trace", 0),
        ("debug", 1),
        ("info", 2),
        ("warn", 3),
        ("error", 4),
        ("critical", 5),
        ("off", 6),
        ("n_levels", 7),
    ]


@pytest.mark.parametrize("level", list(logger.level_enum))
def test_every_level_round_trips_without_warning(level):
    old_level, old_flush = rmm.get_logging_level(), rmm.get_flush_level()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            rmm.set_logging_level(level)
            assert rmm.get_logging_level() is level
            rmm.set_flush_level(level)
            assert rmm.get_flush_level() is level
            assert isinstance(rmm.should_log(level), bool)
    finally:
        rmm.set_logging_level(old_level)
        rmm.set_flush_level(old_flush)


def test_should_log_compares_levels():
    old = rmm.get_logging_level()
    try:
        rmm.set_logging_level(logger.level_enum.warn)
        assert [rmm.should_log(m) for m in logger.level_enum][:6] == [False, False, False, True, True, True]
        rmm.set_logging_level(logger.level_enum.n_levels)
        assert not rmm.should_log(logger.level_enum.critical)
    finally:
        rmm.set_logging_level(old)


@pytest.mark.parametrize("bad", ["INFO", 3, "invalid", 100, None, 1.2345, [1, 2, 3]])
def test_levels_must_be_level_enum(bad):
    for fn in (rmm.set_logging_level, rmm.set_flush_level, rmm.should_log):
        with pytest.raises(TypeError, match="level_enum"):
            fn(bad)


def test_flush_level_starts_at_trace():
    # Every debug-log line is written through (rmm_rs's log flushes each).
    out = run_py("import rmm_rs; print(rmm_rs.get_flush_level().name)")
    assert out.strip() == "trace"


# --- statistics objects and the profiler ---------------------------------------


def test_statistics_answer_attributes_and_keys(sim):
    mr.set_current_device_resource(sim)
    with rmm.statistics.statistics():
        b = rmm.DeviceBuffer(size=300)
        s = rmm.statistics.get_statistics()
        assert isinstance(s, rmm.statistics.Statistics)
        assert s.current_bytes == s["current_bytes"] == 300
        assert s.total_count == s["total_count"] == 1
        with pytest.raises(KeyError):
            s["bogus"]
        assert s.keys() == [
            "current_bytes",
            "current_count",
            "peak_bytes",
            "peak_count",
            "total_bytes",
            "total_count",
        ]
        assert dict(s) == {"current_bytes": 300, "current_count": 1, "peak_bytes": 300, "peak_count": 1,
                           "total_bytes": 300, "total_count": 1}
        assert s == dict(s) and s == rmm.statistics.Statistics(**dict(s))
        assert s != {**dict(s), "total_count": 2} and s != {"current_bytes": 300}
        assert s != rmm.statistics.Statistics(**{**dict(s), "peak_count": 5})
        pushed = rmm.statistics.push_statistics()
        assert isinstance(pushed, rmm.statistics.Statistics) and pushed["peak_bytes"] == 300
        popped = rmm.statistics.pop_statistics()
        assert isinstance(popped, rmm.statistics.Statistics) and popped.total_bytes == 0
        adaptor = mr.get_current_device_resource()
        assert isinstance(adaptor.allocation_counts, rmm.statistics.Statistics)
        del b


def test_statistics_context_refuses_a_changed_resource(sim):
    mr.set_current_device_resource(sim)
    with pytest.raises(ValueError, match="RMM memory source stack was changed while in the statistics context"):
        with rmm.statistics.statistics():
            mr.set_current_device_resource(mr.SimulatedMemoryResource("1MiB"))


def test_profiler_report_format(sim):
    records = rmm.statistics.ProfilerRecords()
    assert records.report() == "Memory Profiling\n================\n\nNo data, maybe profiling wasn't enabled?"
    mr.set_current_device_resource(sim)
    rmm.statistics.enable_statistics()
    with rmm.statistics.profiler(records=records, name="small"):
        rmm.DeviceBuffer(size=100)
    for _ in range(2):
        with rmm.statistics.profiler(records=records, name="big"):
            keep = [rmm.DeviceBuffer(size=1_500_000) for _ in range(2)]
            del keep
    expected = (
        "Memory Profiling\n"
        "================\n"
        "\n"
        "Legends:\n"
        "  ncalls       - number of times the function or code block was called\n"
        "  memory_peak  - peak memory allocated in function or code block (in bytes)\n"
        "  memory_total - total memory allocated in function or code block (in bytes)\n"
        "\n"
        "Ordered by: num_calls\n"
        "\n"
        "ncalls     memory_peak    memory_total  filename:lineno(function)\n"
        "     2       3,000,000       6,000,000  big\n"
        "     1             100             100  small"
    )
    assert records.report(ordered_by="num_calls") == expected
    assert str(records) == records.report()
    assert repr(records).startswith("ProfilerRecords({")
    records.clear()
    assert records.records == {}


def test_descriptive_name_of_decorated_function():
    import functools

    def inner():
        pass

    @functools.wraps(inner)
    def wrapper():
        return inner()

    line = inspect.getsourcelines(inner)[1]
    expected = f"{__file__}:{line}(test_descriptive_name_of_decorated_function.<locals>.inner)"
    assert rmm.statistics._get_descriptive_name_of_object(inner) == expected
    assert rmm.statistics._get_descriptive_name_of_object(wrapper) == expected


def test_profiler_without_statistics_records_nothing(sim):
    mr.set_current_device_resource(sim)
    records = rmm.statistics.ProfilerRecords()
    with rmm.statistics.profiler(records=records, name="off"):
        rmm.DeviceBuffer(size=10)
    assert records.records == {}


# --- logging switches ---------------------------------------------------------------


def test_flush_logs_writes_the_registry_loggers(tmp_path):
    rmm.reinitialize(logging=True, log_file_name=tmp_path / "flush.csv", simulated_memory="1MiB")
    (name,) = rmm.get_log_filenames().values()
    assert name == str(tmp_path / "flush.dev0.csv")
    rmm.DeviceBuffer(size=64)
    _memory_resource._flush_logs()
    lines = pathlib.Path(name).read_text().splitlines()
    assert lines[0] == "Thread,Time,Action,Pointer,Size,Stream"
    assert [line.split(",")[2] for line in lines[1:]] == ["allocate", "free"]


def test_logging_adaptor_name_gets_the_device_and_an_absolute_path(tmp_path, sim, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = mr.LoggingResourceAdaptor(sim, "rel.csv", device=3)
    assert res.get_file_name() == os.path.join(str(tmp_path), "rel.dev3.csv")
    monkeypatch.setenv("RMM_LOG_FILE", "env.log")
    assert mr.LoggingResourceAdaptor(sim, device=0).get_file_name() == str(tmp_path / "env.dev0.log")
    monkeypatch.delenv("RMM_LOG_FILE")
    with pytest.raises(ValueError, match="RMM_LOG_FILE"):
        mr.LoggingResourceAdaptor(sim)


def test_top_level_logging_switches(tmp_path):
    rmm.reinitialize(devices=[0, 1], simulated_memory="1MiB")
    rmm.enable_logging(log_file_name=str(tmp_path / "all.csv"))
    assert rmm.get_log_filenames() == {d: str(tmp_path / f"all.dev{d}.csv") for d in (0, 1)}
    rmm.disable_logging()
    assert rmm.get_log_filenames() == {0: None, 1: None}
    assert all(isinstance(mr.get_per_device_resource(d), mr.SimulatedMemoryResource) for d in (0, 1))


def test_adaptors_derive_from_upstream_resource_adaptor(sim):
    made = [
        mr.PoolMemoryResource(sim, "1MiB"),
        mr.ArenaMemoryResource(sim, "1MiB"),
        mr.FixedSizeMemoryResource(sim),
        mr.BinningMemoryResource(sim, 10, 12),
        mr.LimitingResourceAdaptor(sim, "1MiB"),
        mr.StatisticsResourceAdaptor(sim),
        mr.TrackingResourceAdaptor(sim),
        mr.FailureCallbackResourceAdaptor(sim, lambda n: False),
        mr.PrefetchResourceAdaptor(sim),
        mr.AlignedResourceAdaptor(sim),
    ]
    for res in made:
        assert isinstance(res, mr.UpstreamResourceAdaptor), type(res).__name__
        assert res.get_upstream() is sim
    assert not isinstance(sim, mr.UpstreamResourceAdaptor)


# --- rmm._cuda.gpu -----------------------------------------------------------------


def test_gpu_module_type_checks():
    with pytest.raises(TypeError):
        gpu.setDevice("0")
    with pytest.raises(TypeError):
        gpu.getDeviceAttribute(16, None)
    for bad_attr in ("16", True, 1.0, None):
        with pytest.raises(TypeError, match="cudaDeviceAttr"):
            gpu.getDeviceAttribute(bad_attr, 0)
    assert isinstance(gpu.driverGetVersion(), int)
    assert gpu.runtimeGetVersion() == gpu.driverGetVersion()


def test_gpu_errors_pickle_with_their_status():
    for cls in (gpu.CUDARuntimeError, gpu.CUDADriverError):
        err = pickle.loads(pickle.dumps(cls(101)))
        assert type(err) is cls and err.status == 101
        assert isinstance(err, RuntimeError) and str(err)


@pytest.mark.skipif(GPU, reason="checks the no-GPU behaviour")
def test_gpu_queries_without_a_gpu():
    for call in (
        gpu.getDevice,
        gpu.getDeviceCount,
        lambda: gpu.setDevice(0),
        lambda: gpu.getDeviceAttribute(16, 0),
    ):
        with pytest.raises(gpu.CUDARuntimeError) as e:
            call()
        assert e.value.status in (35, 100)
        assert rmm_rs.gpu_unavailable_reason() in str(e.value)
    with pytest.raises(gpu.CUDADriverError):
        gpu.deviceGetName(0)


@pytest.mark.gpu
def test_gpu_queries_on_the_gpu():
    count = gpu.getDeviceCount()
    assert count == rmm_rs.device_count() >= 1
    gpu.setDevice(0)
    assert gpu.getDevice() == 0
    assert gpu.getDeviceAttribute(16, 0) > 0  # multiprocessor count
    assert gpu.getDeviceAttribute(75, 0) >= 3  # compute capability major
    assert gpu.getDeviceAttribute(18, 0) in (0, 1)  # integrated
    assert gpu.deviceGetName(0)
    assert gpu.driverGetVersion() >= 11000
    with pytest.raises(gpu.CUDARuntimeError) as e:
        gpu.setDevice(count)
    assert e.value.status == 101
    assert "CUDA_ERROR_INVALID_DEVICE" in str(e.value)
    with pytest.raises(gpu.CUDARuntimeError):
        gpu.getDeviceAttribute(-5, 0)


@pytest.mark.gpu
def test_gpu_attribute_from_cuda_bindings_enum():
    runtime = pytest.importorskip("cuda.bindings.runtime")
    attr = runtime.cudaDeviceAttr.cudaDevAttrMultiProcessorCount
    assert gpu.getDeviceAttribute(attr, 0) == gpu.getDeviceAttribute(16, 0)


@pytest.mark.gpu
def test_reinitialize_logging_names_on_the_gpu(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rmm.reinitialize(logging=True, log_file_name="gpu.csv")
    assert rmm.get_log_filenames() == {0: str(tmp_path / "gpu.dev0.csv")}
    rmm.DeviceBuffer(size=10)
    _memory_resource._flush_logs()
    assert "allocate" in (tmp_path / "gpu.dev0.csv").read_text()


@pytest.mark.gpu
def test_stream_pool_and_flags_on_the_gpu():
    flags = rmm.pylibrmm.stream.CudaStreamFlags
    assert (int(flags.SYNC_DEFAULT), int(flags.NON_BLOCKING)) == (0, 1)
    pool = rmm.pylibrmm.cuda_stream_pool.CudaStreamPool(pool_size=4, flags=flags.NON_BLOCKING)
    assert pool.get_pool_size() == 4
    streams = [pool.get_stream(i) for i in range(4)]
    assert len(set(streams)) == 4
    assert all(s != rmm.DEFAULT_STREAM for s in streams)
    assert streams[2] == pool.get_stream(2)


@pytest.mark.gpu
def test_device_buffer_module_copies_on_the_gpu():
    from rmm_rs.pylibrmm import device_buffer as db

    buf = db.to_device(b"abcdefgh")
    host = bytearray(8)
    db.copy_ptr_to_host(buf.ptr, host)
    assert bytes(host) == b"abcdefgh"
    db.copy_host_to_ptr(b"ZZ", buf.ptr)
    other = rmm.DeviceBuffer(size=8)
    db.copy_device_to_ptr(buf.ptr, other.ptr, 8)
    assert other.tobytes() == b"ZZcdefgh"
