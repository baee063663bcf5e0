"""``rmm.mr``: memory resources, adaptors and the per-device registry
(the names of ``rmm_rs.pylibrmm.memory_resource``), and ``rmm.mr.experimental``.

>>> import rmm_rs
>>> pool = rmm_rs.mr.PoolMemoryResource(rmm_rs.mr.SimulatedMemoryResource("1GiB"), "1MiB")
>>> isinstance(pool, rmm_rs.mr.UpstreamResourceAdaptor)
True
"""

import importlib

from rmm_rs.pylibrmm import memory_resource
from rmm_rs.pylibrmm.memory_resource import *  # noqa: F403 (the names of its __all__)

# ``rmm.mr.experimental`` is a module of its own. The star import above bound
# the name to ``rmm.pylibrmm.memory_resource.experimental``, and a
# from-import would return that binding without importing the submodule.
experimental = importlib.import_module("rmm_rs.mr.experimental")

# The current device as the registry counts it (0 without a GPU); private,
# for tests.
from rmm_rs.pylibrmm.memory_resource._registry import _current_device  # noqa: F401

# The same names as ``rmm.pylibrmm.memory_resource``, listed there once.
__all__ = list(memory_resource.__all__)
