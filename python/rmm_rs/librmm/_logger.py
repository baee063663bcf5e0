"""``rmm.librmm._logger``: ``level_enum`` (the same class as
``rmm_rs.pylibrmm.logger.level_enum``)."""

from rmm_rs.pylibrmm.logger import level_enum

__all__ = ["level_enum"]
