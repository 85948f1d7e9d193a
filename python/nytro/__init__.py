"""nytro: NYstrom iTerative RegularizatiOn for large-scale kernel least squares.

NYTRO (Angles, Camoriano, Rudi, Rosasco, "NYTRO: When Subsampling Meets Early
Stopping", AISTATS 2016) runs early-stopped gradient descent on a Nystrom-subsampled
kernel: memory O(n m), and one run gives the whole regularisation path. This package
has NYTRO and the paper's baselines as scikit-learn estimators backed by a C++ core,
and ``nytro.reference``, the same routines in plain NumPy.
"""
from ._api import (default_n_threads, gaussian_kernel, kernel_matrix, kernel_predict, kols, krls_path, landweber_path,
                   nkrls_path, nystrom_factor, nytro_path, sample_centers)
from ._checks import paper_lambdas
from ._config import (__version__, get_cmake_dir, get_include, get_library_dir, machine_rates,
                      set_machine_rates, show_config)
from ._results import PathResult, TikhonovResult
from .options import IterativeOptions, KOLSOptions, NytroOptions, TikhonovOptions
from . import datasets

# The estimators import scikit-learn, most of `import nytro`'s time: they load on first
# use (PEP 562), so that the core's functions and `python -m nytro --show-config` start
# without it.
_ESTIMATORS = ("KOLSRegressor", "KRLSRegressor", "LandweberRegressor", "NystromKRLSClassifier",
               "NystromKRLSRegressor", "NytroClassifier", "NytroLogisticClassifier", "NytroRegressor")


def __getattr__(name):
    if name in _ESTIMATORS:
        from . import estimators

        return getattr(estimators, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "NytroRegressor", "NystromKRLSRegressor", "KRLSRegressor", "LandweberRegressor", "KOLSRegressor",
    "NytroClassifier", "NystromKRLSClassifier", "NytroLogisticClassifier",
    "gaussian_kernel", "kernel_matrix", "kernel_predict", "sample_centers", "nystrom_factor", "nytro_path",
    "landweber_path", "nkrls_path", "krls_path", "kols", "paper_lambdas", "PathResult",
    "TikhonovResult", "NytroOptions", "IterativeOptions", "TikhonovOptions", "KOLSOptions", "default_n_threads",
    "show_config",
    "machine_rates", "set_machine_rates", "get_cmake_dir", "get_include", "get_library_dir",
    "__version__",
]
