"""Debug-logger levels (``rmm.pylibrmm.logger``), over the crate's debug
log (``RMM_DEBUG_LOG_FILE``, ``RMM_DEBUG_LOG_LEVEL``).

As in RMM, every function takes only ``level_enum`` members (``TypeError``
for names, ints, None). Unlike RMM's C++ library, which may be compiled
without its trace and debug messages (and then warns when asked for
them), the crate logs at every level, so nothing here warns.

The crate's debug log writes each line through as it is logged, so every
level is flushed at once; ``set_flush_level`` records the level, which
``get_flush_level`` returns (initially ``level_enum.trace``: what is
flushed now).

>>> set_logging_level(level_enum.warn)
>>> get_logging_level()
<level_enum.warn: 3>
>>> set_logging_level(level_enum.info)
"""

import enum
import threading

from rmm_rs import _lib


class level_enum(enum.IntEnum):
    """Logging levels, numbered as rapids-logger numbers them
    (``n_levels`` is the count, a level above ``off``)."""

    trace = 0
    debug = 1
    info = 2
    warn = 3
    error = 4
    critical = 5
    off = 6
    n_levels = 7


def _validate_level_type(level):
    if not isinstance(level, level_enum):
        raise TypeError("level must be an instance of the level_enum enum")


def should_log(level):
    """True when a message at ``level`` would be logged."""
    _validate_level_type(level)
    return _lib.should_log(int(level))


def set_logging_level(level):
    """Sets the debug logger's level."""
    _validate_level_type(level)
    _lib.set_logging_level(int(level))


def get_logging_level():
    """The debug logger's level, a ``level_enum``."""
    return level_enum(_lib._get_logging_level())


def flush_logger():
    """Writes buffered debug log lines out."""
    _lib.flush_logger()


_flush_lock = threading.Lock()
_flush_level = level_enum.trace


def set_flush_level(level):
    """Records the level from which messages are flushed as they are
    logged (the crate's log flushes every line already)."""
    global _flush_level
    _validate_level_type(level)
    with _flush_lock:
        _flush_level = level


def get_flush_level():
    """The level ``set_flush_level`` recorded (``level_enum.trace`` until
    then)."""
    with _flush_lock:
        return _flush_level


__all__ = [
    "flush_logger",
    "get_flush_level",
    "get_logging_level",
    "level_enum",
    "set_flush_level",
    "set_logging_level",
    "should_log",
]
