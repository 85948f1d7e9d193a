"""nytro.datasets: the paper's datasets, the shipped cpuSmall, downloads, the synthetic stand-in.

Tests on the real data need the NYTRO data kit: set NYTRO_DATA to its folder (see
docs/user_guide/reproducing.md). The download tests only talk to an HTTP server
on 127.0.0.1 that they start themselves; nothing here touches the real network.
"""
from __future__ import annotations

import bz2
import functools
import hashlib
import http.server
import lzma
import os
import socket
import threading
from pathlib import Path

import numpy as np
import pytest

from nytro import datasets
from nytro.datasets import _files, _loaders

KIT = os.environ.get("NYTRO_DATA")
needs_kit = pytest.mark.skipif(
    not KIT or not Path(KIT).is_dir(),
    reason="NYTRO_DATA is not set to the NYTRO data kit folder (see docs/user_guide/reproducing.md)")

_CACHE: dict = {}


@pytest.fixture(scope="module", autouse=True)
def _free_cache():
    yield
    _CACHE.clear()


def kit(name: str) -> datasets.Dataset:
    """load_dataset(name) from the kit, loaded once per test session (no download)."""
    if name not in _CACHE:
        _CACHE[name] = datasets.load_dataset(name, KIT, download=False)
    return _CACHE[name]


def check_arrays(ds, n_train, n_test, d):
    assert ds.X_train.shape == (n_train, d) and ds.X_test.shape == (n_test, d)
    assert ds.y_train.shape == (n_train,) and ds.y_test.shape == (n_test,)
    for a in ds.arrays():
        assert a.dtype == np.float64 and a.flags.c_contiguous
        assert np.all(np.isfinite(a))


def check_scaled(ds, lo, hi):
    """Per column, min/max over train + test together are exactly lo/hi (transductive)."""
    X = np.vstack([ds.X_train, ds.X_test])
    np.testing.assert_array_equal(X.min(axis=0), lo)
    np.testing.assert_array_equal(X.max(axis=0), hi)


def check_pm_one(ds, pos_train, pos_test):
    assert set(np.unique(ds.y_train)) == {-1.0, 1.0} == set(np.unique(ds.y_test))
    assert (ds.y_train == 1).sum() == pos_train and (ds.y_test == 1).sum() == pos_test


# ------------------------------------------------------------------------------------------
# Real data (NYTRO data kit)
# ------------------------------------------------------------------------------------------
@needs_kit
def test_insurance():
    ds = kit("insurance")
    check_arrays(ds, 5822, 4000, 85)
    check_scaled(ds, -1.0, 1.0)
    check_pm_one(ds, 348, 238)  # the published COIL 2000 counts of CARAVAN = 1


@needs_kit
def test_adult():
    ds = kit("adult")
    check_arrays(ds, 32561, 16281, 123)
    assert set(np.unique(ds.X_train)) == {-1.0, 1.0} == set(np.unique(ds.X_test))
    assert (ds.X_train == 1).sum() == 451592  # the nonzeros of a9a
    check_pm_one(ds, 7841, 3846)


@needs_kit
def test_ijcnn1_as_stored():
    ds = kit("ijcnn1")
    check_arrays(ds, 49990, 91701, 22)
    assert (ds.X_train.min(), ds.X_train.max()) == (-0.930435, 1.0)
    assert (ds.X_test.min(), ds.X_test.max()) == (-1.321543, 1.312081)
    np.testing.assert_array_equal(ds.X_train[:, :10].sum(axis=0), 4999)  # one-hot columns
    check_pm_one(ds, 4853, 8712)


@needs_kit
def test_cpusmall():
    ds = kit("cpusmall")
    check_arrays(ds, 6554, 1638, 12)
    check_scaled(ds, 0.0, 1.0)
    y = np.concatenate([ds.y_train, ds.y_test])
    assert y.min() == 0 and y.max() == 99 and abs(y.mean() - 83.97) < 0.01  # raw %usr


@needs_kit
def test_shipped_cpusmall_equals_kit():
    shipped, ds = datasets.load_cpusmall(), kit("cpusmall")
    for a, b in zip(shipped.arrays(), ds.arrays()):
        np.testing.assert_array_equal(a, b)
    assert shipped.name == "cpusmall"


@needs_kit
@pytest.mark.slow
def test_covtype():
    ds = datasets.load_dataset("covtype", KIT, download=False)  # ~1-5 s, 250 MB
    check_arrays(ds, 522910, 58102, 54)
    check_scaled(ds, -1.0, 1.0)
    check_pm_one(ds, 258912, 283301 - 258912)  # LIBSVM label 2: 283301 of 581012 rows
    # First row of UCI covtype.data: 2596,51,3,258,0,510,... (elevation in [1859, 3858]).
    assert ds.X_train[0, 0] == pytest.approx(2 * (2596 - 1859) / (3858 - 1859) - 1)


@needs_kit
@pytest.mark.parametrize("key", ["ticdata2000.txt", "ticeval2000.txt", "tictgts2000.txt", "a9a",
                                 "a9a.t", "ijcnn1", "ijcnn1.t", "cpusmall"])
def test_download_verification_accepts_kit_files(key):
    """The pinned checksums (and, for ijcnn1 train, the row/label counts) hold for the kit."""
    path = _files.find(key, Path(KIT))
    _files.verify(_files.REMOTES[key], path, path.name)


@needs_kit
def test_yearprediction_if_present():
    try:
        ds = datasets.load_dataset("yearprediction", KIT, download=False)
    except FileNotFoundError:
        pytest.skip("YearPredictionMSD.txt is not in the data kit (see its README)")
    check_arrays(ds, 463715, 51630, 90)
    check_scaled(ds, 0.0, 1.0)
    y = np.concatenate([ds.y_train, ds.y_test])
    assert y.min() >= 0 and y.max() <= 1


# ------------------------------------------------------------------------------------------
# Shipped cpuSmall, scaling, file layout (no kit needed)
# ------------------------------------------------------------------------------------------
def test_shipped_cpusmall():
    ds = datasets.load_cpusmall()
    check_arrays(ds, 6554, 1638, 12)
    check_scaled(ds, 0.0, 1.0)
    y = np.concatenate([ds.y_train, ds.y_test])
    assert y.min() == 0 and y.max() == 99
    npz = Path(datasets.__file__).parents[1] / "data" / "cpusmall.npz"
    assert npz.stat().st_size < 600_000


@pytest.mark.parametrize("lo, hi", [(0.0, 1.0), (-1.0, 1.0)])
def test_minmax_scale_transductive_and_constant_column(lo, hi):
    a = np.array([[1.0, 5.0, 2.0], [3.0, 5.0, 4.0]])
    b = np.array([[2.0, 5.0, 0.0]])
    _loaders.minmax_scale([a, b], lo, hi)
    mid = (lo + hi) / 2
    np.testing.assert_array_equal(a, [[lo, 0.0, mid], [hi, 0.0, hi]])
    np.testing.assert_array_equal(b, [[mid, 0.0, lo]])


def test_unknown_name_and_aliases(tmp_path):
    with pytest.raises(ValueError, match="unknown dataset"):
        datasets.load_dataset("mnist", tmp_path)
    assert set(datasets.DATASETS) == {"insurance", "adult", "ijcnn1", "covtype", "cpusmall",
                                      "yearprediction"}
    with pytest.raises(FileNotFoundError, match="a9a"):
        datasets.load_dataset("A9A", tmp_path, download=False)


def fake_cpusmall(seed=0):
    """Text in LIBSVM cpusmall's format (8192 rows, 12 features) and its raw arrays."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 1000, size=(8192, 12)).astype(np.float64)
    X[:, 3] = 7.0  # a constant column
    y = rng.integers(0, 100, size=8192).astype(np.float64)
    lines = [f"{int(t)} " + " ".join(f"{j + 1}:{int(v)}" for j, v in enumerate(row))
             for t, row in zip(y, X)]
    return ("\n".join(lines) + "\n").encode(), X, y


def check_fake(ds, X, y):
    check_arrays(ds, 6554, 1638, 12)
    expected = (X - X.min(0)) / np.where(np.ptp(X, 0) > 0, np.ptp(X, 0), 1.0)
    expected[:, 3] = 0.0
    np.testing.assert_allclose(np.vstack([ds.X_train, ds.X_test]), expected, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(np.concatenate([ds.y_train, ds.y_test]), y)


@pytest.mark.parametrize("rel, compress", [
    ("cpusmall", None), ("cpusmall.gz", "gz"), ("cpusmall/cpusmall.xz", "xz"),
    ("cpusmall/cpusmall.bz2", "bz2")])
def test_candidate_paths_and_compression(tmp_path, rel, compress):
    import gzip
    text, X, y = fake_cpusmall()
    data = {None: lambda b: b, "gz": gzip.compress, "xz": lzma.compress,
            "bz2": bz2.compress}[compress](text)
    (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / rel).write_bytes(data)
    check_fake(datasets.load_dataset("cpusmall", tmp_path, download=False), X, y)


def test_covtype_from_libsvm_text(tmp_path, monkeypatch):
    """Without the kit's .npy pair, covtype.libsvm.binary is read: label 2 -> +1, 1 -> -1."""
    rows = ["2 1:10 3:1 54:1", "1 1:20 2:5", "1 1:30 3:2 54:1", "2 2:1 3:4", "1 1:15"]
    (tmp_path / "covtype_binary").mkdir()
    (tmp_path / "covtype_binary" / "covtype.libsvm.binary.bz2").write_bytes(
        bz2.compress("\n".join(rows).encode()))
    monkeypatch.setitem(_loaders.SPLITS, "covtype", (3, 2))
    ds = datasets.load_dataset("covtype", tmp_path, download=False)
    check_arrays(ds, 3, 2, 54)
    np.testing.assert_array_equal(ds.y_train, [1, -1, -1])
    np.testing.assert_array_equal(ds.y_test, [1, -1])
    np.testing.assert_allclose(ds.X_train[:, 0], [-1 / 3, 1 / 3, 1.0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(ds.X_test[:, 0], [-1.0, 0.0], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(ds.X_test[:, 5], [0.0, 0.0])  # constant column -> 0


def test_wrong_row_count_is_an_error(tmp_path):
    text, _, _ = fake_cpusmall()
    (tmp_path / "cpusmall").write_bytes(b"\n".join(text.split(b"\n")[:100]))
    with pytest.raises(ValueError, match="8192"):
        datasets.load_dataset("cpusmall", tmp_path, download=False)


# ------------------------------------------------------------------------------------------
# Missing data and downloads (local HTTP server only)
# ------------------------------------------------------------------------------------------
def test_missing_data_message(tmp_path, monkeypatch):
    monkeypatch.setenv("NYTRO_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError) as info:
        datasets.load_dataset("insurance", download=False)  # directory from NYTRO_DATA
    msg = str(info.value)
    for part in ("ticdata2000.txt", "ticeval2000.txt", "tictgts2000.txt", str(tmp_path),
                 "NYTRO_DATA", "download=False", "insurance_coil2000/ticdata2000.txt"):
        assert part in msg
    with pytest.raises(FileNotFoundError, match="covtype_X.npy"):
        datasets.load_dataset("covtype", tmp_path, download=False)
    with pytest.raises(FileNotFoundError, match="YearPredictionMSD.txt"):
        datasets.load_dataset("yearprediction", tmp_path, download=False)
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def server(tmp_path, monkeypatch):
    """An HTTP server on 127.0.0.1 serving tmp_path/'www'; yields (base_url, root, requests)."""
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy",
                "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    root = tmp_path / "www"
    root.mkdir()
    requests = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            requests.append(self.path)

    srv = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/", root, requests
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join()


def serve_fake_cpusmall(server, monkeypatch, sha=None):
    base, root, _ = server
    text, X, y = fake_cpusmall()
    (root / "cpusmall.bz2").write_bytes(bz2.compress(text))
    sha = sha or hashlib.sha256(text).hexdigest()  # pinned: of the decompressed content
    monkeypatch.setitem(_files.REMOTES, "cpusmall",
                        _files.Remote(base + "cpusmall.bz2", "cpusmall.bz2", sha256=sha))
    return X, y


def test_download(tmp_path, server, monkeypatch):
    X, y = serve_fake_cpusmall(server, monkeypatch)
    data = tmp_path / "data" / "new"  # created on demand
    check_fake(datasets.load_dataset("cpusmall", data), X, y)
    assert sorted(p.name for p in data.iterdir()) == ["cpusmall.bz2"]
    assert server[2] == ["/cpusmall.bz2"]
    check_fake(datasets.load_dataset("cpusmall", data), X, y)  # now found locally
    assert server[2] == ["/cpusmall.bz2"]


def test_download_checksum_mismatch(tmp_path, server, monkeypatch):
    serve_fake_cpusmall(server, monkeypatch, sha="0" * 64)
    with pytest.raises(datasets.ChecksumError, match="sha256"):
        datasets.load_dataset("cpusmall", tmp_path)
    assert [p for p in tmp_path.iterdir() if p.name != "www"] == []  # deleted, no .part


@pytest.mark.parametrize("counts, ok", [({0.0: 2, 1.0: 1}, True), ({0.0: 1, 1.0: 2}, False)])
def test_download_row_and_label_check(tmp_path, server, monkeypatch, counts, ok):
    base, root, _ = server
    (root / "f.txt").write_bytes(b"0 1:1\n1 1:2\n0 1:3\n")
    remote = _files.Remote(base + "f.txt", "f.txt", n_rows=3, label_counts=counts)
    monkeypatch.setitem(_files.REMOTES, "f", remote)
    data = tmp_path / "data"
    if ok:
        assert _files.download("f", data).read_bytes().startswith(b"0 1:1")
    else:
        with pytest.raises(datasets.ChecksumError, match="label counts"):
            _files.download("f", data)
        assert list(data.iterdir()) == []


def test_yearprediction_zip_download(tmp_path, server, monkeypatch):
    """The UCI zip, downloaded and row-checked; year -> (year - 1922) / 89, features to [0, 1]
    (split sizes shrunk to the 5-row test file)."""
    import zipfile
    base, root, _ = server
    rng = np.random.default_rng(1)
    data = np.column_stack([[2001, 1922, 2011, 1990, 1950], rng.normal(size=(5, 90))])
    data[:, 5] = 3.25  # a constant column
    with zipfile.ZipFile(root / "YearPredictionMSD.txt.zip", "w") as zf:
        zf.writestr("YearPredictionMSD.txt",
                    "\n".join(",".join(repr(float(v)) for v in r) for r in data))
    monkeypatch.setitem(_files.REMOTES, "YearPredictionMSD.txt", _files.Remote(
        base + "YearPredictionMSD.txt.zip", "YearPredictionMSD.txt.zip", n_rows=5, sep=b","))
    monkeypatch.setitem(_loaders.SPLITS, "yearprediction", (3, 2))
    ds = datasets.load_dataset("yearprediction", tmp_path)
    assert (tmp_path / "YearPredictionMSD.txt.zip").is_file()
    check_arrays(ds, 3, 2, 90)
    np.testing.assert_array_equal(np.concatenate([ds.y_train, ds.y_test]),
                                  (data[:, 0] - 1922) / 89)
    X = data[:, 1:]
    expected = (X - X.min(0)) / np.where(np.ptp(X, 0) > 0, np.ptp(X, 0), 1.0)
    np.testing.assert_allclose(np.vstack([ds.X_train, ds.X_test]), expected, rtol=0,
                               atol=1e-15)
    assert np.all(ds.X_train[:, 4] == 0)


def test_download_http_error(tmp_path, server, monkeypatch):
    monkeypatch.setitem(_files.REMOTES, "cpusmall",
                        _files.Remote(server[0] + "nothing-here", "cpusmall", sha256="0" * 64))
    with pytest.raises(FileNotFoundError, match="404"):
        datasets.load_dataset("cpusmall", tmp_path / "d")
    assert list((tmp_path / "d").iterdir()) == []


def test_no_network_gives_missing_message(tmp_path, monkeypatch):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setitem(_files.REMOTES, "cpusmall",
                        _files.Remote(f"http://127.0.0.1:{port}/cpusmall", "cpusmall"))
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    with pytest.raises(FileNotFoundError) as info:
        datasets.load_dataset("cpusmall", tmp_path)
    msg = str(info.value)
    assert "failed" in msg and "NYTRO_DATA" in msg and "cpusmall" in msg


# ------------------------------------------------------------------------------------------
# Synthetic YearPredictionMSD stand-in
# ------------------------------------------------------------------------------------------
def test_make_yearprediction_like():
    ds = datasets.make_yearprediction_like(n_train=800, n_test=200, d=20, random_state=3)
    check_arrays(ds, 800, 200, 20)
    check_scaled(ds, 0.0, 1.0)
    y = np.concatenate([ds.y_train, ds.y_test])
    assert 0 <= y.min() and y.max() <= 1 and 0.7 < y.mean() < 0.95 and y.std() > 0.05
    assert "synthetic" in ds.name and "SYNTHETIC" in ds.description
    assert "SYNTHETIC" in datasets.make_yearprediction_like.__doc__
    again = datasets.make_yearprediction_like(n_train=800, n_test=200, d=20, random_state=3)
    for a, b in zip(ds.arrays(), again.arrays()):
        np.testing.assert_array_equal(a, b)
    other = datasets.make_yearprediction_like(n_train=800, n_test=200, d=20, random_state=4)
    assert not np.array_equal(ds.X_train, other.X_train)


def test_make_yearprediction_like_defaults_shape():
    import inspect
    sig = inspect.signature(datasets.make_yearprediction_like)
    assert [sig.parameters[k].default for k in ("n_train", "n_test", "d", "random_state")] == \
        [463715, 51630, 90, 0]
