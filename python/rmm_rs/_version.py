"""``rmm._version``: ``__version__`` (the extension's crate version) and
``__git_commit__`` (the commit the extension was built from, recorded by
``python/build.rs``; ``""`` when it was built outside a git checkout)."""

from rmm_rs import _lib

__version__ = _lib.__version__
__git_commit__ = _lib.__git_commit__

__all__ = ["__git_commit__", "__version__"]
