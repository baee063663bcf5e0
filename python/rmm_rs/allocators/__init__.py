"""Allocator hooks: ``rmm_rs.allocators.cupy``, ``.numba``, ``.torch``.

Each submodule imports its library when it is imported; this package
imports none of them.
"""
