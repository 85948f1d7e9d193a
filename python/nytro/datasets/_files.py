"""Finding, opening and downloading the original data files.

Every file the loaders read has a *key* (its public name, e.g. ``"a9a"``). ``CANDIDATES``
lists, per key, the paths relative to the data directory that are tried in order: the
public name itself, then the layout of the NYTRO data kit (``adult_a9a/a9a`` ...). Each
path is tried as is and with the suffixes in ``SUFFIXES`` (.xz, .bz2, .gz), which are
decompressed on the fly. ``REMOTES`` gives, per key, the original public address, the
name the download is saved under, and what is verified before the file is used.
"""
from __future__ import annotations

import bz2
import contextlib
import gzip
import hashlib
import lzma
import os
import shutil
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterator, Optional

ENV_VAR = "NYTRO_DATA"
DEFAULT_DIR = Path("~") / "nytro_data"
TIMEOUT_S = 10.0
SUFFIXES = ("", ".xz", ".bz2", ".gz")

_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases/"
_LIBSVM = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/"


class ChecksumError(ValueError):
    """A downloaded file failed verification (sha256 or content check); it was deleted."""


# Relative paths tried in order for each file key (each also with the SUFFIXES).
CANDIDATES: dict[str, tuple[str, ...]] = {
    "ticdata2000.txt": ("ticdata2000.txt", "insurance_coil2000/ticdata2000.txt"),
    "ticeval2000.txt": ("ticeval2000.txt", "insurance_coil2000/ticeval2000.txt"),
    "tictgts2000.txt": ("tictgts2000.txt", "insurance_coil2000/tictgts2000.txt"),
    "a9a": ("a9a", "adult_a9a/a9a", "a9a.txt"),
    "a9a.t": ("a9a.t", "adult_a9a/a9a.t"),
    "ijcnn1": ("ijcnn1", "ijcnn1/ijcnn1", "ijcnn1/ijcnn1.trn"),
    "ijcnn1.t": ("ijcnn1.t", "ijcnn1/ijcnn1.t", "ijcnn1/ijcnn1.tst"),
    "covtype_X.npy": ("covtype_binary/covtype_X.npy", "covtype_X.npy"),
    "covtype_y.npy": ("covtype_binary/covtype_y.npy", "covtype_y.npy"),
    "covtype.libsvm.binary": ("covtype.libsvm.binary", "covtype_binary/covtype.libsvm.binary"),
    "cpusmall": ("cpusmall", "cpusmall/cpusmall"),
    "YearPredictionMSD.txt": ("YearPredictionMSD.txt", "yearpredictionmsd/YearPredictionMSD.txt"),
}
# Extra suffixes accepted for some keys (the UCI distributes YearPredictionMSD zipped).
_EXTRA_SUFFIXES: dict[str, tuple[str, ...]] = {"YearPredictionMSD.txt": (".zip",)}


@dataclass(frozen=True)
class Remote:
    """Where a file comes from and how a download of it is verified.

    sha256: of the *decompressed* content, where the original is known byte for byte.
    Otherwise ``n_rows`` (and ``label_counts``: first field of each line -> count) are
    checked by scanning the decompressed lines; ``sep`` splits the first field (None:
    whitespace).
    """

    url: str
    filename: str
    sha256: Optional[str] = None
    n_rows: Optional[int] = None
    label_counts: Optional[dict] = field(default=None, hash=False)
    sep: Optional[bytes] = None


REMOTES: dict[str, Remote] = {
    # UCI COIL 2000 files. The pinned checksums are those of the data kit's copies, which
    # keep the UCI format byte for byte (tab-separated, CRLF, no final newline).
    "ticdata2000.txt": Remote(
        _UCI + "tic-mld/ticdata2000.txt", "ticdata2000.txt",
        sha256="f6a7fe083ccedb3776bc30f5e000bdd34bfd25f625d2b4672f84afa6b70cb178"),
    "ticeval2000.txt": Remote(
        _UCI + "tic-mld/ticeval2000.txt", "ticeval2000.txt",
        sha256="880f3b7dbc1174ddd10e7a20ef1e4bc3a8e345400d4b553744c5ef0c71493837"),
    "tictgts2000.txt": Remote(
        _UCI + "tic-mld/tictgts2000.txt", "tictgts2000.txt",
        sha256="42274a9b6d1ced5fcb35e2c103869060118ceaa7e5c5fac1a652e1f1a5806da8"),
    # LIBSVM a9a / a9a.t: the kit's copies are byte-identical to these.
    "a9a": Remote(
        _LIBSVM + "binary/a9a", "a9a",
        sha256="f5d5ffd8d865ff41328e7ee043e4b020816914ff6843ff15b98905ddbedce906"),
    "a9a.t": Remote(
        _LIBSVM + "binary/a9a.t", "a9a.t",
        sha256="1f7bae8e9729ad2bf9d18f66e5fa622e503e615114f92c37b274dfd24f2e5725"),
    # LIBSVM ijcnn1 (= ijcnn1.tr + ijcnn1.val): the kit's train file is a re-serialisation
    # (labels written -1.0/1.0), so the original's checksum is unknown: verify the row
    # count and the label counts instead.
    "ijcnn1": Remote(
        _LIBSVM + "binary/ijcnn1.bz2", "ijcnn1.bz2",
        n_rows=49990, label_counts={-1.0: 45137, 1.0: 4853}),
    # ijcnn1.t: the kit's test file appears to be the verbatim original (LIBSVM formatting);
    # its decompressed checksum is pinned.
    "ijcnn1.t": Remote(
        _LIBSVM + "binary/ijcnn1.t.bz2", "ijcnn1.t.bz2",
        sha256="e7b0bbd518641980dc322746c6bc59d019d3153934e6258e48f9d8cfae2c4bb8"),
    # covtype.libsvm.binary: the kit holds a NumPy conversion, so the text original's
    # checksum is unknown: verify rows and label counts (LIBSVM label 2: 283301 rows).
    "covtype.libsvm.binary": Remote(
        _LIBSVM + "binary/covtype.libsvm.binary.bz2", "covtype.libsvm.binary.bz2",
        n_rows=581012, label_counts={1.0: 297711, 2.0: 283301}),
    # LIBSVM cpusmall (unscaled): byte-identical to the kit's copy.
    "cpusmall": Remote(
        _LIBSVM + "regression/cpusmall", "cpusmall",
        sha256="70d73c6efb2bcd873efe297388b9ee65a0b299cc6adc85ad246eb4899116313b"),
    # UCI YearPredictionMSD (about 200 MB zipped): no copy was available to pin a checksum;
    # verify the row count (515345 lines of 91 comma-separated values, year first).
    "YearPredictionMSD.txt": Remote(
        _UCI + "00203/YearPredictionMSD.txt.zip", "YearPredictionMSD.txt.zip",
        n_rows=515345, sep=b","),
}


def data_home(data_dir=None) -> Path:
    """The data directory: the argument, else $NYTRO_DATA, else ~/nytro_data."""
    if data_dir is None:
        data_dir = os.environ.get(ENV_VAR) or DEFAULT_DIR
    return Path(data_dir).expanduser()


def candidates(key: str) -> list[str]:
    """Relative paths tried for `key`, in order."""
    suffixes = SUFFIXES + _EXTRA_SUFFIXES.get(key, ())
    return [base + s for base in CANDIDATES[key] for s in suffixes]


def find(key: str, data_dir: Path) -> Optional[Path]:
    """The first existing candidate file for `key` under `data_dir`, else None."""
    for rel in candidates(key):
        path = data_dir / rel
        if path.is_file():  # the kit has folders named like files (cpusmall/, ijcnn1/)
            return path
    return None


def _compression(name: str) -> Optional[str]:
    for suffix in (".xz", ".bz2", ".gz", ".zip"):
        if name.endswith(suffix):
            return suffix[1:]
    return None


@contextlib.contextmanager
def open_binary(path, name: Optional[str] = None) -> Iterator[IO[bytes]]:
    """Open `path` for binary reading, decompressing by the suffix of `name` (default:
    the path's own name). A .zip must hold one file, or one named like the zip's stem."""
    path = Path(path)
    kind = _compression(name or path.name)
    if kind is None:
        with open(path, "rb") as fh:
            yield fh
    elif kind == "zip":
        with zipfile.ZipFile(path) as zf:
            members = [i.filename for i in zf.infolist() if not i.is_dir()]
            stem = Path(name or path.name).stem
            wanted = [m for m in members if Path(m).name == stem]
            member = wanted[0] if wanted else (members[0] if len(members) == 1 else None)
            if member is None:
                raise ValueError(f"{path}: expected {stem} inside the zip, found {members}")
            with zf.open(member) as fh:
                yield fh
    else:
        opener = {"xz": lzma.open, "bz2": bz2.open, "gz": gzip.open}[kind]
        with opener(path, "rb") as fh:
            yield fh


def sha256_of(path, name: Optional[str] = None) -> str:
    """sha256 of the decompressed content of `path`."""
    digest = hashlib.sha256()
    with open_binary(path, name) as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify(remote: Remote, path: Path, name: Optional[str] = None) -> None:
    """Raise ChecksumError when the content of `path` (decompressed according to `name`,
    default remote.filename) does not match `remote`."""
    name = name or remote.filename
    if remote.sha256 is not None:
        got = sha256_of(path, name)
        if got != remote.sha256:
            raise ChecksumError(f"sha256 of the content of {remote.filename} from {remote.url} is "
                                f"{got}, expected {remote.sha256}")
        return
    rows, counts = 0, {}
    with open_binary(path, name) as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            rows += 1
            if remote.label_counts is not None:
                label = float(line.split(remote.sep, 1)[0])
                counts[label] = counts.get(label, 0) + 1
    if remote.n_rows is not None and rows != remote.n_rows:
        raise ChecksumError(f"{remote.filename} from {remote.url} has {rows} rows, "
                            f"expected {remote.n_rows}")
    if remote.label_counts is not None and counts != remote.label_counts:
        raise ChecksumError(f"{remote.filename} from {remote.url} has label counts {counts}, "
                            f"expected {remote.label_counts}")


def download(key: str, data_dir: Path) -> Path:
    """Fetch `key` from its public address into `data_dir` and verify it.

    Raises OSError (URLError, timeout, ...) when the download fails and ChecksumError when
    verification fails; in both cases nothing is left behind in `data_dir`.
    """
    remote = REMOTES[key]
    data_dir.mkdir(parents=True, exist_ok=True)
    target = data_dir / remote.filename
    part = data_dir / (remote.filename + ".part")
    try:
        with urllib.request.urlopen(remote.url, timeout=TIMEOUT_S) as resp, \
                open(part, "wb") as out:
            shutil.copyfileobj(resp, out, 1 << 20)
        verify(remote, part)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    os.replace(part, target)
    return target


def missing_message(dataset: str, keys, data_dir: Path, reason: str = "") -> str:
    """The FileNotFoundError text: what to put where."""
    lines = [f"dataset {dataset!r}: file(s) not found in {str(data_dir)!r}."]
    for key in keys:
        suffixes = "/".join(s for s in SUFFIXES + _EXTRA_SUFFIXES.get(key, ()) if s)
        line = f"  {key}: any of {', '.join(CANDIDATES[key])} (optionally {suffixes})"
        if key in REMOTES:
            line += f"; public source {REMOTES[key].url}"
        lines.append(line)
    lines.append(f"Put them in that directory, or pass data_dir=... or set the environment "
                 f"variable {ENV_VAR} to the directory holding them; with download=True they "
                 f"are fetched from the public sources.")
    if reason:
        lines.append(reason)
    return "\n".join(lines)
