"""The paper's experimental protocol, shared by the Table 2 and Figure 2 experiments.

Everything here comes from ``docs/protocol.md`` (the authors' public code read where the
text is silent) and from the paper's Table 1 and Table 2:

* per dataset: the number of centres m, the kernel bandwidth sigma, and the threshold of
  the authors' "window" stopping rule;
* the paper's own Table 2 numbers, printed beside ours;
* the hold-out split of one repetition: a fresh, seeded 20% validation part of the
  training set and m fresh centres drawn uniformly without replacement from the other
  80%. ``holdout_split`` draws exactly what ``NytroRegressor(random_state=seed)`` and the
  other estimators draw, so the peers of a repetition see the same rows and centres;
* a timer (``time.perf_counter`` around the fit only: training and model selection,
  kernel included; never the test prediction);
* result records, mean +- std summaries;
* whether an exact method (KOLS, KRLS, Landweber: n x n kernel) fits in memory;
* a description of the machine and of the thread pools, stored beside every number.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import shlex
import sys
import time
import warnings
from dataclasses import asdict, dataclass, field

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .. import __version__
from .. import _core
from .._api import sample_centers
from .._checks import available_cores

VALIDATION_FRACTION = 0.2
N_LAMBDAS = 100            # the paper's grid: 100 values log-spaced in [1e-15, 1] (times n)
MAX_ITER = 500             # NYTRO and Landweber iterations at most
WINDOW = 10                # the authors' window rule looks at the last 10 validation RMSEs
BYTES = 8                  # float64


# ---------------------------------------------------------------------------------------
# The paper's numbers
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PaperCell:
    """One cell of the paper's Table 2: time (s), test RMSE, selected parameter
    (lambda* for KRLS/NKRLS, t* for Early Stopping/NYTRO); std None where not printed."""

    time: float | None
    time_std: float | None
    rmse: float | None
    rmse_std: float | None
    param: float | None = None
    param_std: float | None = None


def _c(time, time_std, rmse, rmse_std, param=None, param_std=None) -> PaperCell:
    return PaperCell(time, time_std, rmse, rmse_std, param, param_std)


# Table 2 of the paper (methods keyed as in table2.METHODS' `paper` field). Time in
# seconds on 12 x 2.10 GHz Xeon E5-2620 v2 cores; "NA" cells are missing keys.
PAPER_TABLE2 = {
    "insurance": {"kols": _c(1.04, None, 5.179, None), "krls": _c(97.48, 0.77, 0.4651, 0.0001, 3.27e-4),
                  "landweber": _c(2.92, 0.04, 0.4650, 0.0002, 494, 1.7),
                  "nkrls": _c(20.32, 0.50, 0.4651, 0.0003, 5.14e-4, 1.42e-4),
                  "nytro": _c(5.49, 0.12, 0.4651, 0.0003, 491, 3)},
    "adult": {"kols": _c(112, None, 1765, None), "krls": _c(4360, 9.29, 0.645, 0.001, 4.04e-5, 1.04e-5),
              "landweber": _c(5.52, 0.23, 0.685, 0.002, 39.2, 1.1),
              "nkrls": _c(5.95, 0.31, 0.6462, 0.003, 4.04e-5, 1.83e-5),
              "nytro": _c(0.85, 0.05, 0.6873, 0.003, 44.9, 0.3)},
    "ijcnn1": {"kols": _c(271, None, 730.62, None), "krls": _c(825.01, 6.81, 0.615, 0.002, 1.07e-8, 1.47e-8),
               "landweber": _c(154.82, 1.24, 0.457, 0.001, 489, 7.2),
               "nkrls": _c(160.28, 1.54, 0.469, 0.003, 1.07e-7, 1.15e-7),
               # The paper prints 0.457; the authors' code records 0.477 (docs/protocol.md).
               "nytro": _c(80.9, 0.4, 0.457, 0.001, 328.7, 2.6)},
    "yearprediction": {"nkrls": _c(1188.47, 36.7, 0.1015, 0.0002, 3.05e-7, 1.05e-7),
                       "nytro": _c(887, 6, 0.1149, 0.0002, 481, 6.1)},
    "covtype": {"nkrls": _c(1235.21, 42.1, 1.204, 0.008, 9.33e-9, 1.12e-9),
                "nytro": _c(92.69, 2.35, 0.918, 0.006, 39.2, 2.3)},
}


@dataclass(frozen=True)
class DatasetConfig:
    """How the paper ran one dataset."""

    name: str            # our name (load_dataset's, or "yearprediction-synthetic")
    label: str           # as printed in tables
    m: int               # Nystrom centres
    sigma: float         # Gaussian bandwidth, k = exp(-|x-x'|^2 / (2 sigma^2))
    window_tol: float    # the authors' absolute threshold of the window rule
    paper_key: str       # key of PAPER_TABLE2
    paper_n: int         # n as printed in the paper's Table 1
    synthetic: bool = False
    # The large ones keep K_nm (and the hold-out kernel) in float32 with float64 sums,
    # and NYTRO stores K_nm (solver "direct"): 16.7 GB for Covertype at m = 10000,
    # where forming A^T A (solver "gram") would cost 2 n m^2 = 8e13 flops per fit.
    large: bool = False

    def nystrom_options(self) -> dict:
        return {"storage": "float32"} if self.large else {}

    def nytro_options(self) -> dict:
        return {"storage": "float32", "solver": "direct"} if self.large else {}

    @property
    def paper(self) -> dict:
        return PAPER_TABLE2.get(self.paper_key, {})


CONFIGS = {
    "insurance": DatasetConfig("insurance", "InsuranceCompany", 2000, 3.0, 0.000051, "insurance", 5822),
    "adult": DatasetConfig("adult", "Adult", 1000, 6.6, 0.0069, "adult", 32562),
    "ijcnn1": DatasetConfig("ijcnn1", "Ijcnn", 5000, 1.0, 0.000835, "ijcnn1", 49990),
    "covtype": DatasetConfig("covtype", "CovertypeBinary", 10000, 1.0, 0.013, "covtype", 522910, large=True),
    "yearprediction": DatasetConfig("yearprediction", "YearPredictionMSD", 10000, 1.0, 0.000113,
                                    "yearprediction", 463715, large=True),
    # The real YearPredictionMSD is not in the data kit: a SYNTHETIC stand-in of its shape.
    # The paper's numbers beside it are the real dataset's, for orientation only.
    "yearprediction-synthetic": DatasetConfig(
        "yearprediction-synthetic", "YearPrediction (SYNTHETIC stand-in)", 10000, 1.0, 0.000113,
        "yearprediction", 463715, synthetic=True, large=True),
}

_ALIASES = {"ijcnn": "ijcnn1", "insurancecompany": "insurance", "covertype": "covtype",
            "covertypebinary": "covtype", "yearprediction_synthetic": "yearprediction-synthetic",
            "synthetic": "yearprediction-synthetic", "yearpredictionmsd": "yearprediction"}


def dataset_config(name: str) -> DatasetConfig:
    key = _ALIASES.get(name.lower(), name.lower())
    if key not in CONFIGS:
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(CONFIGS)}")
    return CONFIGS[key]


def load(config: DatasetConfig, data_dir=None, *, n_train=None, n_test=None, seed=0):
    """The preprocessed Dataset; with n_train / n_test, a seeded uniform subsample of the
    training / test rows (the quick mode). The synthetic stand-in is generated at the
    requested size directly."""
    from ..datasets import Dataset, load_dataset, make_yearprediction_like
    if config.synthetic:
        kwargs = {}
        if n_train is not None:
            kwargs["n_train"] = n_train
        if n_test is not None:
            kwargs["n_test"] = n_test
        return make_yearprediction_like(random_state=0, **kwargs)
    data = load_dataset(config.name, data_dir)
    if n_train is None and n_test is None:
        return data
    rng = np.random.default_rng(seed)

    def pick(X, y, k):
        if k is None or k >= X.shape[0]:
            return X, y
        rows = np.sort(rng.choice(X.shape[0], size=k, replace=False))
        return np.ascontiguousarray(X[rows]), np.ascontiguousarray(y[rows])

    X_train, y_train = pick(data.X_train, data.y_train, n_train)
    X_test, y_test = pick(data.X_test, data.y_test, n_test)
    return Dataset(X_train, y_train, X_test, y_test, data.name,
                   data.description + f" [subsample: {X_train.shape[0]} train / {X_test.shape[0]} test rows, "
                   f"seed {seed}]")


# ---------------------------------------------------------------------------------------
# The hold-out split of one repetition
# ---------------------------------------------------------------------------------------
@dataclass
class Split:
    """One repetition's split of the n training rows (indices into them), and the m
    centres (indices into the `train` rows, so centres = X[train][centers])."""

    seed: int
    train: np.ndarray
    val: np.ndarray
    centers: np.ndarray | None

    @property
    def n_train(self) -> int:
        return int(self.train.size)

    @property
    def n_val(self) -> int:
        return int(self.val.size)

    def parts(self, X, y):
        """(X_train, y_train, X_val, y_val) of this split."""
        return X[self.train], y[self.train], X[self.val], y[self.val]

    def center_rows(self, X):
        """The centres themselves (rows of X)."""
        return X[self.train][self.centers]


def holdout_split(n: int, m: int | None, seed: int, fraction: float = VALIDATION_FRACTION) -> Split:
    """A uniformly random `fraction` of range(n) as validation rows, the rest as training
    rows, then m centres drawn uniformly without replacement from the training rows.

    This draws exactly what the nytro estimators draw when given random_state=seed
    (numpy RandomState(seed): a permutation for the split, then one 63-bit seed for
    nytro.sample_centers), so an estimator fitted with that seed and any peer given this
    split see the same rows and the same centres (table2 checks it at every fit)."""
    if not 0 < fraction < 1:
        raise ValueError(f"fraction must be in (0, 1), got {fraction}")
    rng = np.random.RandomState(seed)
    n_val = int(round(fraction * n))
    if n_val < 1 or n - n_val < 1:
        raise ValueError(f"a hold-out fraction of {fraction} of n={n} rows leaves an empty part")
    order = rng.permutation(n)
    train, val = np.sort(order[n_val:]), np.sort(order[:n_val])
    centers = None
    if m is not None:
        if m > train.size:
            raise ValueError(f"m={m} centres but only {train.size} training rows after the hold-out split")
        centers = sample_centers(train.size, m, int(rng.randint(0, 2**63 - 1, dtype=np.int64)))
        centers = np.asarray(centers, dtype=np.int64)
    return Split(int(seed), train, val, centers)


def repetition_seeds(base_seed: int, reps: int) -> list:
    """One seed per repetition: base_seed, base_seed + 1, ..."""
    return [int(base_seed) + r for r in range(int(reps))]


# ---------------------------------------------------------------------------------------
# Timing and records
# ---------------------------------------------------------------------------------------
@contextlib.contextmanager
def path_cut_expected():
    """The paper's protocol cuts every path at max_iter = 500 on purpose, and the tables
    report t* = 500 where a path was still improving there: inside this block the
    estimators' ConvergenceWarning, which would only repeat that, is not shown."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=ConvergenceWarning)
        yield


class Timer:
    """``with Timer() as t: fit(...)``; then ``t.seconds`` (time.perf_counter).

    The clock starts after ``settle`` seconds of sleep: a BLAS pool that has just worked
    (the previous fit's, often a peer's OpenBLAS) keeps its threads spinning for a while,
    and on 2 cores they take time from the next fit (measured:
    benchmarks/results/table2/history.md, "Measurements behind the code"). Every
    method and peer gets the same pause."""

    SETTLE_S = 0.25

    def __init__(self, settle: float | None = None):
        self.settle = self.SETTLE_S if settle is None else settle

    def __enter__(self):
        self.seconds = float("nan")
        if self.settle > 0:
            time.sleep(self.settle)
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self._start
        return False


def rmse(prediction, target) -> float:
    """RMSE of raw real-valued predictions (no sign), as in the paper."""
    prediction = np.asarray(prediction, dtype=np.float64).reshape(-1)
    target = np.asarray(target, dtype=np.float64).reshape(-1)
    return float(np.sqrt(np.mean((prediction - target) ** 2)))


@dataclass
class Record:
    """One fit of one method (or peer) in one repetition of one dataset.

    status: "ok"; "NA" (does not fit in memory, `note` says how much it needs);
    "skipped" (over the time budget); "error" (`note` has the message)."""

    dataset: str
    method: str
    implementation: str          # "nytro", "nytro.reference", "scikit-learn"
    rep: int
    seed: int
    status: str = "ok"
    time_s: float | None = None
    test_rmse: float | None = None
    val_rmse: float | None = None
    param_name: str | None = None
    param: float | None = None
    ratio_to_nytro: float | None = None   # time / nytro's time for the same method, same split
    note: str = ""
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def mean_std(values):
    """(mean, std) over the finite values (std with ddof=0, as the paper's +- does not
    say; 0 for one value); (None, None) when there are none."""
    vals = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=np.float64)
    if vals.size == 0:
        return None, None
    return float(vals.mean()), float(vals.std())


def format_number(value, kind: str = "g") -> str:
    if value is None:
        return "-"
    if kind == "time":
        return f"{value:.3g}" if value < 100 else f"{value:.0f}"
    if kind == "rmse":
        return f"{value:.4f}" if abs(value) < 10 else f"{value:.4g}"
    if kind == "int":
        return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"
    return f"{value:.3g}"


def format_mean_std(mean, std, kind: str = "g") -> str:
    if mean is None:
        return "-"
    if std is None or std == 0:
        return format_number(mean, kind)
    return f"{format_number(mean, kind)} ± {format_number(std, kind)}"


# ---------------------------------------------------------------------------------------
# Does an exact method fit?
# ---------------------------------------------------------------------------------------
def default_memory_budget() -> int:
    """Half of the machine's physical memory, in bytes."""
    return int(_core.physical_memory_bytes()) // 2


def exact_method_bytes(method: str, n: int, n_val: int = 0, solver: str = "eigh") -> float:
    """Peak memory (bytes, float64) of an exact method on n training rows and n_val
    validation rows, from the core's allocations:

    * KOLS, KRLS with solver "eigh": K (n^2) and its eigendecomposition (LAPACK ?syevd
      on a copy: the copy, 2 n^2 of workspace, the eigenvectors: about 3 n^2 more,
      4 n^2 at least and 5 n^2 at the peak; we count 5 n^2);
    * KRLS with solver "cholesky": K, the shifted copy and its factor (3 n^2);
    * Landweber: K (n^2);
    plus the validation kernel (n_val x n) where there is a hold-out set, and the
    100 coefficient vectors of a lambda grid."""
    n, n_val = float(n), float(n_val)
    if method == "kols":
        values = 5 * n * n
    elif method == "krls":
        values = (5 if solver == "eigh" else 3) * n * n + n_val * n + N_LAMBDAS * n
    elif method == "landweber":
        values = n * n + n_val * n + 4 * n
    else:
        raise ValueError(f"{method!r} is not an exact method (kols, krls, landweber)")
    return values * BYTES


@dataclass
class MemoryVerdict:
    fits: bool
    needed_bytes: float
    budget_bytes: float

    @property
    def needed_gb(self) -> float:
        return self.needed_bytes / 1e9

    def na_text(self) -> str:
        """The table cell of a method that does not fit, as the paper prints it (NA),
        with the size that would have been needed."""
        return f"NA ({self.needed_gb:.1f} GB > {self.budget_bytes / 1e9:.1f} GB)"


def memory_verdict(needed_bytes: float, budget_bytes: float | None = None) -> MemoryVerdict:
    budget = default_memory_budget() if budget_bytes is None else float(budget_bytes)
    return MemoryVerdict(bool(needed_bytes <= budget), float(needed_bytes), budget)


def exact_method_fits(method: str, n: int, n_val: int = 0, *, solver: str = "eigh",
                      budget_bytes: float | None = None) -> MemoryVerdict:
    """Whether `method` (kols, krls, landweber) on n rows fits in `budget_bytes`
    (default: half of the physical memory)."""
    return memory_verdict(exact_method_bytes(method, n, n_val, solver), budget_bytes)


# ---------------------------------------------------------------------------------------
# Threads and the machine
# ---------------------------------------------------------------------------------------
def resolve_threads(threads) -> int:
    """The thread count used everywhere in a run: `threads`, or all available cores."""
    if threads is None:
        return available_cores()
    threads = int(threads)
    if threads < 1:
        raise ValueError(f"--threads must be >= 1, got {threads}")
    return threads


@contextlib.contextmanager
def blas_threads(n_threads: int):
    """Cap every BLAS/OpenMP pool that threadpoolctl knows (NumPy's, SciPy's,
    scikit-learn's) at n_threads, so that the NumPy and scikit-learn peers use as many
    threads as nytro's core."""
    from threadpoolctl import threadpool_limits
    with threadpool_limits(limits=int(n_threads)):
        yield


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info(n_threads: int) -> dict:
    """CPU, cores, memory, library versions and the thread pools as seen now (call it
    inside blas_threads to record the limits in force)."""
    import scipy
    import sklearn
    from threadpoolctl import threadpool_info
    try:
        load = os.getloadavg()
    except OSError:  # pragma: no cover
        load = None
    pools = [{k: pool.get(k) for k in ("user_api", "internal_api", "num_threads", "version",
                                        "threading_layer", "architecture", "filepath")}
             for pool in threadpool_info()]
    return {
        "cpu_model": cpu_model(),
        "logical_cpus": os.cpu_count(),
        "available_cores": available_cores(),
        "threads_used": int(n_threads),
        "physical_memory_gb": round(_core.physical_memory_bytes() / 1e9, 2),
        "load_average_at_start": list(load) if load else None,
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "nytro": __version__,
        "nytro_core_has_lapack": bool(getattr(_core, "has_lapack", lambda: None)()),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
        "threadpools": pools,
    }


def machine_line(info: dict) -> str:
    """One line for the head of a table: hardware and threads beside every number."""
    return (f"{info['cpu_model']}, {info['available_cores']} cores available, "
            f"{info['threads_used']} threads used, {info['physical_memory_gb']} GB RAM, "
            f"load average at start {', '.join(f'{x:.2f}' for x in info['load_average_at_start'] or [])}")


def command_line(command: str, options: list) -> str:
    """`python -m nytro <command> <options...>`, shell-quoted."""
    return shlex.join(["python", "-m", "nytro", command, *[str(o) for o in options]])


def write_command(out_dir: str, filename: str, command: str) -> str:
    """Write the command that made the outputs (with the raw argv and the folder it ran
    in) to out_dir/filename; returns the path."""
    path = os.path.join(out_dir, filename)
    data_dir = os.environ.get("NYTRO_DATA")
    with open(path, "w") as f:
        f.write("# The command that made the files in this folder (all options explicit):\n")
        if data_dir:
            f.write(f"NYTRO_DATA={shlex.quote(data_dir)} ")
        f.write(command + "\n")
        f.write(f"# as invoked: {shlex.join(sys.argv)}\n# in: {os.getcwd()}\n")
    return path


def write_report(out_dir: str, stem: str, report: dict, text: str) -> None:
    """A benchmark's record as out_dir/stem.json and its table as out_dir/stem.md (the
    folder is made if needed); the table is printed too."""
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, stem + ".json"), "w") as f:
        json.dump(report, f, indent=1)
    with open(os.path.join(out_dir, stem + ".md"), "w") as f:
        f.write(text)
    print(text)


def write_claim(out_dir: str, stem: str, report: dict, text: str) -> None:
    """A benchmark's results folder (benchmarks/results/<claim>/): write_report's
    stem.json and stem.md, the command (report["command"]) as command.txt and the machine
    (report["machine"]) as machine.txt."""
    write_report(out_dir, stem, report, text)
    write_command(out_dir, "command.txt", report["command"])
    with open(os.path.join(out_dir, "machine.txt"), "w") as f:
        f.write(machine_line(report["machine"]) + "\n")


def finite_or_none(value):
    """JSON-friendly float: None for NaN/inf."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def json_ready(value):
    """A copy of `value` that json.dump(allow_nan=False) accepts: NumPy scalars and
    arrays as Python numbers and lists, NaN and infinities as None."""
    if isinstance(value, dict):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    if isinstance(value, np.ndarray):
        return json_ready(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return finite_or_none(value)
    return value
