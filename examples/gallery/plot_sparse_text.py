"""
Sparse input: one-hot features fitted as a CSR matrix
=====================================================

``NytroClassifier`` takes a ``scipy.sparse`` X (CSR or CSC) and fits it without
densifying it: the kernel blocks come from sparse-dense products, and only the centres
(m rows of X) are kept dense. Text counts, n-grams and one-hot codes are such data. This
example one-hot codes scikit-learn's bundled digits (each of the 64 pixels' 17 grey
levels a column of its own: 1088 columns, 64 of them set in each row, 6% of the matrix),
fits the same classifier on the CSR matrix and on its dense copy, and compares the
memory X takes, the fit time and the test accuracy: the two fits give the same model,
to rounding. At this size the dense fit is the faster (the core's fused passes against
NumPy's blocks); sparse input is for widths whose dense copy would not fit in memory
(``benchmarks/bench_sparse.py``: 20000 rows x 2^20 columns, 156 GiB dense).
"""
import time

import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from nytro import NytroClassifier

X, y = load_digits(return_X_y=True)
levels = 17
rows = np.repeat(np.arange(X.shape[0]), X.shape[1])
columns = (np.arange(X.shape[1]) * levels)[None, :] + X.astype(int)
onehot = sp.csr_matrix((np.ones(rows.size), (rows, columns.ravel())), shape=(X.shape[0], X.shape[1] * levels))
print(f"one-hot digits: {onehot.shape[0]} x {onehot.shape[1]}, {onehot.nnz / np.prod(onehot.shape):.1%} stored")

train, test = train_test_split(np.arange(X.shape[0]), test_size=0.3, stratify=y, random_state=0)
inputs = {"sparse (CSR)": onehot, "dense": onehot.toarray()}
results = {}
for name, data in inputs.items():
    model = NytroClassifier(n_centers=200, sigma=6.0, random_state=0, n_threads=2)
    start = time.perf_counter()
    model.fit(data[train], y[train])
    seconds = time.perf_counter() - start
    stored = data.data.nbytes + data.indices.nbytes + data.indptr.nbytes if sp.issparse(data) else data.nbytes
    results[name] = dict(seconds=seconds, megabytes=stored / 2**20, accuracy=model.score(data[test], y[test]),
                         decision=model.decision_function(data[test]))
    print(f"{name:>13}: X {results[name]['megabytes']:.2f} MiB, fit {seconds:.2f} s, "
          f"test accuracy {results[name]['accuracy']:.4f}")

difference = np.max(np.abs(results["sparse (CSR)"]["decision"] - results["dense"]["decision"]))
print(f"largest difference of the decision values, sparse against dense: {difference:.2e}")

fig, axes = plt.subplots(1, 3, figsize=(10, 3.2))
names = list(results)
for ax, (key, label) in zip(axes, [("megabytes", "memory of X (MiB)"), ("seconds", "fit time (s)"),
                                   ("accuracy", "test accuracy")]):
    ax.bar(names, [results[n][key] for n in names], color=["tab:blue", "tab:gray"])
    ax.set_title(label)
axes[2].set_ylim(0.9, 1.0)
fig.suptitle("NytroClassifier on one-hot digits: the same model from CSR and dense X")
fig.tight_layout()
plt.show()
