"""``rmm.pylibrmm.memory_resource``: the same names as ``rmm_rs.mr``."""

from rmm_rs.mr import *  # noqa: F401,F403
from rmm_rs.mr import __all__  # noqa: F401
