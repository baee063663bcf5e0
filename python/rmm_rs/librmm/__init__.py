"""``rmm.librmm``: in RMM the Cython declarations of the C++ library;
here only ``_logger`` (``level_enum``), the one name of it Python code
imports."""
