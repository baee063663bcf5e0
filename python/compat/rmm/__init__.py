"""``import rmm`` for rmm_rs (the rmm-rs-compat distribution).

Importing this package makes ``sys.modules["rmm"]`` the module ``rmm_rs``
and installs ``rmm._alias.RmmAliasFinder`` first in ``sys.meta_path``, so
that ``rmm.X.Y`` is the module object ``rmm_rs.X.Y``, however and whenever
it is imported. The name ``rmm`` then refers to ``rmm_rs`` itself: this
module adds nothing to the API.

>>> import rmm, rmm_rs
>>> import rmm.mr
>>> rmm is rmm_rs and rmm.mr is rmm_rs.mr
True

Exclusive with RAPIDS' own ``rmm`` distribution: both install the top-level
package ``rmm``.
"""

import sys

import rmm_rs

from ._alias import install_alias_finder

install_alias_finder()
# The import system returns sys.modules["rmm"] once this module has run, so
# `import rmm` binds rmm_rs itself.
sys.modules[__name__] = rmm_rs
