"""Build and machine configuration: which instruction-set variant of the C++ core runs
and the machine rates behind ``solver="auto"`` (``show_config``, ``machine_rates``), and
where the C++ library this package carries lives
(``get_cmake_dir``, ``get_include``, ``get_library_dir``), as pybind11 offers its own.
"""
from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version as _version
from pathlib import Path
from typing import Any, Dict, Optional, TextIO

from . import _core

_PACKAGE = Path(__file__).resolve().parent

try:  # one version source: CMakeLists.txt's project(), via the installed metadata
    __version__ = _version("nytro")
except PackageNotFoundError:  # a dev build on PYTHONPATH, never installed
    __version__ = "0+unknown"


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


def machine_rates(n_threads: Optional[int] = None, *, refresh: bool = False) -> Dict[str, Any]:
    """The rates behind ``solver="auto"`` (direct, gram or spectral) and the hold-out
    kernel's storage, for ``n_threads`` threads (None: ``default_n_threads()``), as a
    dict: ``flops`` and ``flops32`` (flop/s of the products that form A^T A, in float64
    and float32), ``bytes`` (bytes/s read by the direct solver's pass over a stored
    kernel), ``fresh_bytes`` (bytes/s of a first write to fresh memory), ``threads``,
    ``source`` (``"probe"``, ``"probe (loaded)"``, ``"probe (unsteady)"``,
    ``"cache <file>"``, ``"NYTRO_RATES"``, ``"set_machine_rates"`` or ``"default (...)"``)
    and ``key`` (the cache's key: CPU model, instruction-set variant, threads).

    They are measured once per process and thread count by a short probe of the core's
    own kernels (a fraction of a second) and cached on disk
    (``$XDG_CACHE_HOME/nytro/machine_rates.txt``, else ``~/.cache/nytro/machine_rates.txt``;
    ``NYTRO_RATES_CACHE=off`` disables it, ``NYTRO_RATES_CACHE=<file>`` moves it; a cache
    that cannot be written is ignored). A cache line holds the key, the probe's and the
    library's versions (another version probes again) and the four rates. A probe taken
    under load (the probe's thread received less than most of a core: ``"probe
    (loaded)"``) or whose repetitions disagreed (``"probe (unsteady)"``) serves this
    process only and is not written. A fit with ``solver="auto"`` of a second or more
    whose solver took over three times the model's price of the path it ran, or under a
    third of it, marks the rates it read stale: the next call probes again instead of
    reading the cache (once per process and thread count; measured rates only, not
    pinned ones). ``NYTRO_RATES="flops=1e11,bytes=3e10,fresh=3e9"``
    (optionally ``flops32=...``) or ``set_machine_rates`` pin them, for reproducible solver
    choices. ``refresh=True`` probes again and writes what it measured to the cache, even
    under load: run it on a quiet machine."""
    from . import options
    from ._checks import check_n_threads
    options.check_parameters(options.MACHINE_RATES, {"n_threads": n_threads}, ())  # by its row
    return dict(_core.machine_rates(check_n_threads(n_threads), bool(refresh)))


def set_machine_rates(flops: Optional[float] = None, *, bytes: Optional[float] = None,
                      fresh_bytes: Optional[float] = None, flops32: Optional[float] = None) -> None:
    """Pin the rates of ``machine_rates`` in this process, for every thread count (over
    ``NYTRO_RATES``); ``flops32`` defaults to twice ``flops``. With no arguments, unpin
    them (the next fit measures or reads the cache again)."""
    if flops is None:
        if bytes is not None or fresh_bytes is not None or flops32 is not None:
            raise ValueError("set_machine_rates: pass flops with bytes and fresh_bytes, or nothing to unpin")
        _core.set_machine_rates(0.0, 0.0, 0.0, 0.0)
        return
    def rate(name, value):
        if value is None:
            raise ValueError(f"set_machine_rates: {name} is required with flops")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a positive number, got {value!r}") from None
        if not (0 < number < float("inf")):
            raise ValueError(f"{name} must be a positive, finite number, got {value!r}")
        return number

    flops = rate("flops", flops)
    flops32 = 2.0 * flops if flops32 is None else rate("flops32", flops32)
    _core.set_machine_rates(flops, flops32, rate("bytes", bytes), rate("fresh_bytes", fresh_bytes))


def show_config(file: Optional[TextIO] = None) -> Dict[str, Any]:
    """Print which variant of the C++ core runs on this machine and why, and the machine
    rates behind ``solver="auto"`` (``machine_rates()``, measured now if not yet);
    return ``isa_info()`` with those rates under ``"rates"``.
    ``NYTRO_ISA=baseline|avx2|avx512`` in the environment, set before nytro is imported,
    asks for a variant (granted when the machine can run it)."""
    info = isa_info()
    rates = machine_rates()
    info["rates"] = rates
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
    lines += [
        f"  cost model   : {rates['threads']} threads, {rates['source']}",
        f"    products   : {rates['flops'] / 1e9:.3g} GFLOP/s float64, {rates['flops32'] / 1e9:.3g} float32",
        f"    memory     : read {rates['bytes'] / 1e9:.3g} GB/s, first write {rates['fresh_bytes'] / 1e9:.3g} GB/s",
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
