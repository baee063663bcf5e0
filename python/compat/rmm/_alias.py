"""The import hook that resolves ``rmm.X.Y`` to the module ``rmm_rs.X.Y``."""

import importlib
import importlib.abc
import importlib.util
import sys

ALIAS = "rmm"
TARGET = "rmm_rs"


def target_name(fullname):
    """``rmm.X.Y`` -> ``rmm_rs.X.Y``; None for names outside ``rmm.``.

    >>> target_name("rmm.mr.experimental")
    'rmm_rs.mr.experimental'
    >>> target_name("rmmx") is None
    True
    """
    if fullname.startswith(ALIAS + "."):
        return TARGET + fullname[len(ALIAS) :]
    return None


class _AliasLoader(importlib.abc.Loader):
    """Loads ``rmm.X`` by importing ``rmm_rs.X`` and handing back that very
    module object (its ``__name__`` and ``__spec__`` stay rmm_rs's)."""

    def __init__(self, target):
        self.target = target
        self._target_spec = None

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self._target_spec = module.__spec__
        return module

    def exec_module(self, module):
        # The module ran when rmm_rs imported it. The import system has just
        # set its __spec__ to the alias's (it always does); give it back its
        # own, so that rmm_rs's modules stay as they were.
        module.__spec__ = self._target_spec


class RmmAliasFinder(importlib.abc.MetaPathFinder):
    """Finds ``rmm.X`` wherever ``rmm_rs.X`` exists.

    It must come before the path finder: ``rmm``'s ``__path__`` is
    rmm_rs's, and the path finder would otherwise load a second copy of
    ``rmm_rs/X.py`` under the name ``rmm.X``.
    """

    def find_spec(self, fullname, path=None, target=None):
        name = target_name(fullname)
        if name is None:
            return None
        try:
            found = importlib.util.find_spec(name)
        except ModuleNotFoundError:
            # A parent of rmm_rs.X is missing or not a package.
            return None
        if found is None:
            return None
        is_package = found.submodule_search_locations is not None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(name), is_package=is_package)


def install_alias_finder():
    """Puts one ``RmmAliasFinder`` first in ``sys.meta_path`` (again first
    if it was there already)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, RmmAliasFinder)]
    sys.meta_path.insert(0, RmmAliasFinder())
