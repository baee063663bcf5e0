"""Debug-logger levels (``rmm.pylibrmm.logger``)."""

import enum

from rmm_rs import _lib
from rmm_rs._lib import flush_logger, set_logging_level, should_log


class level_enum(enum.IntEnum):
    """Logging levels, numbered as rapids-logger numbers them."""

    trace = 0
    debug = 1
    info = 2
    warn = 3
    error = 4
    critical = 5
    off = 6


def get_logging_level():
    """The debug logger's level, a ``level_enum``."""
    return level_enum(_lib._get_logging_level())


__all__ = ["flush_logger", "get_logging_level", "level_enum", "set_logging_level", "should_log"]
