"""Build and machine configuration: which instruction-set variant of the C++ core runs
(``show_config``), and where the C++ library this package carries lives
(``get_cmake_dir``, ``get_include``, ``get_library_dir``), as pybind11 offers its own.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict, Optional, TextIO

from . import _core

_PACKAGE = Path(__file__).resolve().parent


def _cpp_path(*parts: str) -> str:
    path = _PACKAGE.joinpath(*parts)
    if not path.is_dir():
        raise FileNotFoundError(
            f"{path} does not exist: this nytro was not installed from a wheel or `pip install .`, which "
            "carry the C++ library (headers, static library and CMake config); a source checkout's "
            "library is installed with `cmake --install <build> --prefix <prefix>`")
    return str(path)


def get_cmake_dir() -> str:
    """The folder of ``nytroConfig.cmake``: pass it as ``-Dnytro_DIR=...`` (or put it on
    ``CMAKE_PREFIX_PATH``) to ``find_package(nytro CONFIG)``, then link ``nytro::core``."""
    return _cpp_path("lib", "cmake", "nytro")


def get_include() -> str:
    """The folder holding ``nytro/nytro.hpp``."""
    return _cpp_path("include")


def get_library_dir() -> str:
    """The folder holding the static library ``libnytro.a``."""
    return _cpp_path("lib")


def isa_info() -> Dict[str, Any]:
    """The instruction-set variant of the C++ core in use and why, as a dict: ``selected``
    ("baseline", "avx2", "avx512", or "native" for a build without run-time dispatch),
    ``reason``, ``requested`` (the ``NYTRO_ISA`` environment variable), ``dispatch``,
    ``compiled``, ``runnable`` and ``cpu_features`` (from cpuid and xgetbv)."""
    return dict(_core.isa_info())


def show_config(file: Optional[TextIO] = None) -> Dict[str, Any]:
    """Print which variant of the C++ core runs on this machine and why; return
    ``isa_info()``. ``NYTRO_ISA=baseline|avx2|avx512`` in the environment, set before
    nytro is imported, asks for a variant (granted when the machine can run it)."""
    from . import __version__
    info = isa_info()
    out = sys.stdout if file is None else file
    build = ("run-time dispatch over " + ", ".join(info["compiled"]) if info["dispatch"]
             else "no run-time dispatch (one variant)")
    lines = [
        f"nytro {__version__}",
        f"  core variant : {info['selected']}",
        f"  why          : {info['reason']}",
        f"  build        : {build}",
        f"  runnable here: {', '.join(info['runnable'])}",
        f"  NYTRO_ISA    : {info['requested'] or '(unset)'}",
        f"  cpu features : {' '.join(info['cpu_features']) or '(none detected)'}",
    ]
    try:
        lines.append(f"  cmake dir    : {get_cmake_dir()}")
    except FileNotFoundError:
        lines.append("  cmake dir    : (not installed: source checkout)")
    print("\n".join(lines), file=out)
    return info


def _select_isa(name: str) -> None:
    """For tests and benchmarks: run the given variant from now on (ValueError when this
    build lacks it or this machine cannot run it)."""
    _core.select_isa(name)
