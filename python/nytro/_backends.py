"""Where the estimators send arrays that live outside this process's memory.

A backend package registers its fit and predict for the arrays of one library when it is
imported; the estimators ask for the backend of an array here, which imports the package
named for that library the first time. So a backend depends on the estimators (their
parameters and fitted attributes), and the estimators on no backend: they know a backend
only by this table's name for it, and an optional library (Dask) is imported only when
its arrays are fitted.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

# The array library (the top-level package of an array's type) -> the nytro package that
# fits its arrays, and registers itself on import.
_PACKAGES = {"dask": "nytro.dask"}
_REGISTERED: dict = {}


@dataclass(frozen=True)
class Backend:
    """fit(estimator, X, y, sample_weight) -> the fitted estimator, and predict(X, centers,
    coef, sigma, kernel=, matern_nu=, n_threads=) -> the scores, for one array library."""

    fit: Callable
    predict: Callable


def register(library: str, fit: Callable, predict: Callable) -> None:
    """Make fit and predict the backend of `library`'s arrays (called by the backend's package)."""
    _REGISTERED[library] = Backend(fit, predict)


def library_of(X) -> str:
    """The top-level package of X's type, without importing it."""
    return type(X).__module__.split(".")[0]


def backend_of(X) -> Backend | None:
    """The backend that fits X's arrays, or None for arrays fitted in memory."""
    library = library_of(X)
    if library not in _PACKAGES:
        return None
    if library not in _REGISTERED:
        importlib.import_module(_PACKAGES[library])
    return _REGISTERED[library]
