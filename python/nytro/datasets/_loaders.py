"""The paper's datasets, read from the original files and preprocessed as the authors did.

Scaling is transductive: per-column min/max are taken over train and test together (as in
the authors' code). A constant column maps to 0. Arrays are float64 and C-contiguous.
"""
from __future__ import annotations

import http.client
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import _files

DATASETS = ("insurance", "adult", "ijcnn1", "covtype", "cpusmall", "yearprediction")

# (n_train, n_test) of the datasets split in file order (first rows train, last rows test).
SPLITS = {"covtype": (522910, 58102), "cpusmall": (6554, 1638),
          "yearprediction": (463715, 51630)}

_ALIASES = {
    "insurancecompany": "insurance", "coil2000": "insurance", "insurance_coil2000": "insurance",
    "a9a": "adult", "adult_a9a": "adult", "covtypebinary": "covtype", "covtype_binary": "covtype",
    "cpu_small": "cpusmall", "yearpredictionmsd": "yearprediction",
    "yearprediction_msd": "yearprediction",
}


@dataclass(frozen=True)
class Dataset:
    """A train/test split: X_* of shape (n, d), y_* of shape (n,), all float64."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    name: str
    description: str

    @property
    def n_features(self) -> int:
        return self.X_train.shape[1]

    def arrays(self):
        """(X_train, y_train, X_test, y_test)."""
        return self.X_train, self.y_train, self.X_test, self.y_test

    def __repr__(self) -> str:
        return (f"Dataset({self.name!r}, X_train={self.X_train.shape}, "
                f"X_test={self.X_test.shape})")


# ------------------------------------------------------------------------------------------
# Preprocessing
# ------------------------------------------------------------------------------------------
def minmax_scale(arrays, lo: float, hi: float) -> None:
    """Scale the columns of every array in `arrays` to [lo, hi], in place, with min/max over
    all of them together (transductive). Constant columns become 0."""
    cmin = np.min([a.min(axis=0) for a in arrays], axis=0)
    cmax = np.max([a.max(axis=0) for a in arrays], axis=0)
    span = cmax - cmin
    constant = span == 0
    span[constant] = 1.0
    for a in arrays:
        a -= cmin
        a /= span
        if (lo, hi) != (0.0, 1.0):
            a *= hi - lo
            a += lo
        a[:, constant] = 0.0


def _split(X, y, n_train: int, n_test: int, path) -> tuple:
    if X.shape[0] != n_train + n_test:
        raise ValueError(f"{path}: {X.shape[0]} rows, expected {n_train + n_test}")
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def _pm_one(y, positive, negative) -> np.ndarray:
    """Labels `positive` -> +1 and `negative` -> -1; anything else is an error."""
    bad = (y != positive) & (y != negative)
    if bad.any():
        raise ValueError(f"unexpected labels {np.unique(y[bad])[:5]} (expected {positive} "
                         f"or {negative})")
    return np.where(y == positive, 1.0, -1.0)


def _c64(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64)


# ------------------------------------------------------------------------------------------
# Readers
# ------------------------------------------------------------------------------------------
def _svmlight(path: Path, n_features: int):
    from sklearn.datasets import load_svmlight_file
    with _files.open_binary(path) as fh:
        X, y = load_svmlight_file(fh, n_features=n_features, dtype=np.float64, zero_based=False)
    return X.toarray(), np.asarray(y, dtype=np.float64)


def _table(path: Path, n_cols: int, delimiter=None) -> np.ndarray:
    with _files.open_binary(path) as fh:
        data = np.loadtxt(fh, dtype=np.float64, delimiter=delimiter, ndmin=2)
    if data.shape[1] != n_cols:
        raise ValueError(f"{path}: {data.shape[1]} columns, expected {n_cols}")
    return data


def _npy(path: Path) -> np.ndarray:
    with _files.open_binary(path) as fh:
        return np.load(io.BytesIO(fh.read()), allow_pickle=False)


def _locate(dataset: str, keys, data_dir: Path, download: bool, note: str = "") -> dict:
    """Paths of `keys` under data_dir, downloading the missing ones when allowed."""
    found = {k: _files.find(k, data_dir) for k in keys}
    missing = [k for k, p in found.items() if p is None]
    if missing and not download:
        raise FileNotFoundError(_files.missing_message(
            dataset, missing, data_dir, note + "Downloading is off (download=False)."))
    for key in missing:
        try:
            found[key] = _files.download(key, data_dir)
        except (OSError, http.client.HTTPException) as exc:
            raise FileNotFoundError(_files.missing_message(
                dataset, missing, data_dir,
                note + f"Downloading {_files.REMOTES[key].url} failed: {exc!r}")) from exc
    return found


# ------------------------------------------------------------------------------------------
# Datasets
# ------------------------------------------------------------------------------------------
def _insurance(data_dir, download) -> Dataset:
    p = _locate("insurance", ("ticdata2000.txt", "ticeval2000.txt", "tictgts2000.txt"),
                data_dir, download)
    train = _table(p["ticdata2000.txt"], 86)
    X_test = _table(p["ticeval2000.txt"], 85)
    y_test = _table(p["tictgts2000.txt"], 1)[:, 0]
    if train.shape[0] != 5822 or X_test.shape[0] != 4000 or y_test.shape[0] != 4000:
        raise ValueError(f"insurance: unexpected sizes {train.shape}, {X_test.shape}, "
                         f"{y_test.shape} (expected 5822 x 86, 4000 x 85, 4000)")
    X_train, y_train = _c64(train[:, :85]), train[:, 85]
    minmax_scale([X_train, X_test], -1.0, 1.0)
    return Dataset(X_train, _pm_one(y_train, 1, 0), X_test, _pm_one(y_test, 1, 0), "insurance",
                   "Insurance Company Benchmark (COIL 2000), official split 5822/4000, "
                   "85 features scaled per column to [-1, 1], CARAVAN 1 -> +1, 0 -> -1")


def _adult(data_dir, download) -> Dataset:
    p = _locate("adult", ("a9a", "a9a.t"), data_dir, download)
    X_train, y_train = _svmlight(p["a9a"], 123)
    X_test, y_test = _svmlight(p["a9a.t"], 123)
    if X_train.shape[0] != 32561 or X_test.shape[0] != 16281:
        raise ValueError(f"adult: {X_train.shape[0]}/{X_test.shape[0]} rows, "
                         f"expected 32561/16281")
    for X in (X_train, X_test):
        X *= 2.0
        X -= 1.0
    return Dataset(X_train, _pm_one(y_train, 1, -1), X_test, _pm_one(y_test, 1, -1), "adult",
                   "Adult (LIBSVM a9a), official split 32561/16281, 123 binary features "
                   "0/1 mapped to -1/+1, labels +-1")


def _ijcnn1(data_dir, download) -> Dataset:
    p = _locate("ijcnn1", ("ijcnn1", "ijcnn1.t"), data_dir, download)
    X_train, y_train = _svmlight(p["ijcnn1"], 22)
    X_test, y_test = _svmlight(p["ijcnn1.t"], 22)
    if X_train.shape[0] != 49990 or X_test.shape[0] != 91701:
        raise ValueError(f"ijcnn1: {X_train.shape[0]}/{X_test.shape[0]} rows, "
                         f"expected 49990/91701")
    return Dataset(X_train, _pm_one(y_train, 1, -1), X_test, _pm_one(y_test, 1, -1), "ijcnn1",
                   "ijcnn1 (LIBSVM), official split 49990/91701, 22 features as stored "
                   "(no scaling), labels +-1")


def _covtype(data_dir, download) -> Dataset:
    npy = {k: _files.find(k, data_dir) for k in ("covtype_X.npy", "covtype_y.npy")}
    if all(npy.values()):  # the data kit's conversion: y stored as LIBSVM label - 1
        X = _npy(npy["covtype_X.npy"]).astype(np.float64, order="C")
        y = _pm_one(_npy(npy["covtype_y.npy"]), 1, 0)
        source = npy["covtype_X.npy"]
    else:
        note = ("(The data kit's covtype_binary/covtype_X.npy.xz and covtype_y.npy.xz, "
                "y = LIBSVM label - 1, are read instead when both are present.)\n")
        source = _locate("covtype", ("covtype.libsvm.binary",), data_dir, download,
                         note)["covtype.libsvm.binary"]
        X, y = _svmlight(source, 54)
        y = _pm_one(y, 2, 1)
    if X.shape[1] != 54 or y.shape != X.shape[:1]:
        raise ValueError(f"{source}: shapes {X.shape}, {y.shape}, expected (581012, 54)")
    minmax_scale([X], -1.0, 1.0)  # to [0, 1], then 2x - 1
    return Dataset(*_split(X, y, *SPLITS["covtype"], source), "covtype",
                   "CovertypeBinary (LIBSVM covtype.libsvm.binary), first 522910 rows train, "
                   "last 58102 test (file order), 54 features scaled per column to [0, 1] "
                   "then 2x-1, LIBSVM label 2 -> +1, 1 -> -1")


def _cpusmall(data_dir, download) -> Dataset:
    path = _locate("cpusmall", ("cpusmall",), data_dir, download)["cpusmall"]
    X, y = _svmlight(path, 12)
    minmax_scale([X], 0.0, 1.0)
    return Dataset(*_split(X, y, *SPLITS["cpusmall"], path), "cpusmall", CPUSMALL_DESCRIPTION)


CPUSMALL_DESCRIPTION = ("cpuSmall (LIBSVM cpusmall), first 6554 rows train, last 1638 test "
                        "(file order), 12 features scaled per column to [0, 1], raw target "
                        "(%usr)")


def _yearprediction(data_dir, download) -> Dataset:
    key = "YearPredictionMSD.txt"
    path = _locate("yearprediction", (key,), data_dir, download)[key]
    data = _table(path, 91, delimiter=",")
    X, y = _c64(data[:, 1:]), (data[:, 0] - 1922.0) / 89.0
    del data
    minmax_scale([X], 0.0, 1.0)
    return Dataset(*_split(X, y, *SPLITS["yearprediction"], path), "yearprediction",
                   "YearPredictionMSD (UCI), first 463715 rows train, last 51630 test, 90 "
                   "features scaled per column to [0, 1], target (year - 1922) / 89")


_LOADERS = {"insurance": _insurance, "adult": _adult, "ijcnn1": _ijcnn1, "covtype": _covtype,
            "cpusmall": _cpusmall, "yearprediction": _yearprediction}


def load_dataset(name: str, data_dir=None, *, download: bool = True) -> Dataset:
    """Load one of the paper's datasets, preprocessed as in docs/protocol.md.

    Parameters
    ----------
    name : one of DATASETS ("insurance", "adult", "ijcnn1", "covtype", "cpusmall",
        "yearprediction"); a few aliases ("a9a", "covtype_binary", ...) are accepted.
    data_dir : directory holding the original files (public names, optionally .xz/.bz2/.gz,
        or the NYTRO data kit's layout). Default: $NYTRO_DATA, else ~/nytro_data.
    download : fetch missing files from their public address into data_dir (verified
        against a pinned sha256, or row/label counts where no checksum is known).

    Raises FileNotFoundError (listing the files expected) when a file is missing and cannot
    be downloaded, and ChecksumError when a download fails verification.
    """
    key = name.lower().strip()
    key = _ALIASES.get(key, key)
    if key not in _LOADERS:
        raise ValueError(f"unknown dataset {name!r}; expected one of {DATASETS}")
    return _LOADERS[key](_files.data_home(data_dir), download)


def load_cpusmall() -> Dataset:
    """cpuSmall as shipped with the package (nytro/data/cpusmall.npz): the same arrays as
    load_dataset("cpusmall"), without any data directory."""
    from importlib import resources
    ref = resources.files("nytro") / "data" / "cpusmall.npz"
    with resources.as_file(ref) as path, np.load(path, allow_pickle=False) as npz:
        arrays = [_c64(npz[k]) for k in ("X_train", "y_train", "X_test", "y_test")]
    return Dataset(*arrays, "cpusmall", CPUSMALL_DESCRIPTION)
