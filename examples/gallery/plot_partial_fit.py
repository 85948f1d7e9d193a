"""
Data that arrives in pieces: partial_fit on cpuSmall
====================================================

``NytroRegressor.partial_fit`` adds each batch's exact sums (AᵀA and Aᵀy over its
training rows, the triangular factor of its hold-out rows) and re-selects the whole
regularisation path at every call, so after the last batch the model is the one a single
call on all the rows fits with the same centres: the first call draws them from its own
rows and fixes the bandwidths. This example feeds cpuSmall's 6554 training rows in ten
batches and draws the test RMSE after each one, beside scikit-learn's streaming peer,
SGD on the same number of random Fourier features (``RBFSampler`` +
``SGDRegressor.partial_fit``), fed the same batches.
"""
import matplotlib.pyplot as plt
import numpy as np
from sklearn.kernel_approximation import RBFSampler
from sklearn.linear_model import SGDRegressor
from sklearn.preprocessing import StandardScaler

from nytro import NytroRegressor
from nytro.datasets import load_cpusmall

data = load_cpusmall()
X, y, X_test, y_test = data.X_train, data.y_train, data.X_test, data.y_test
batches = np.array_split(np.arange(len(X)), 10)
m = 300


def rmse(predicted):
    return float(np.sqrt(np.mean((predicted - y_test) ** 2)))


model = NytroRegressor(n_centers=m, random_state=0, n_threads=2)
scaler = StandardScaler().fit(X[batches[0]])
features = RBFSampler(gamma=0.5 / X.shape[1], n_components=m, random_state=0).fit(scaler.transform(X[batches[0]]))
sgd = SGDRegressor(random_state=0)
seen, nytro_curve, sgd_curve = [], [], []
for rows in batches:
    model.partial_fit(X[rows], y[rows])
    sgd.partial_fit(features.transform(scaler.transform(X[rows])), y[rows])
    seen.append(rows[-1] + 1)
    nytro_curve.append(rmse(model.predict(X_test)))
    sgd_curve.append(rmse(sgd.predict(features.transform(scaler.transform(X_test)))))

# One call on every row with the first call's centres and bandwidths: the same model.
whole = NytroRegressor(n_centers=m, centers=model.centers_, sigma=model.sigma_, random_state=0, n_threads=2)
whole.partial_fit(X, y)
difference = np.abs(whole.predict(X_test) - model.predict(X_test)).max() / np.abs(whole.predict(X_test)).max()
print(f"after 10 batches: test RMSE {nytro_curve[-1]:.3f}, selected t = {model.n_iter_}; one call on all rows: "
      f"{rmse(whole.predict(X_test)):.3f} (predictions agree to {difference:.1e})")
print(f"SGD on {m} random Fourier features, one pass: test RMSE {sgd_curve[-1]:.3f}")

fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(seen, nytro_curve, "o-", label="NytroRegressor.partial_fit")
ax.plot(seen, sgd_curve, "s--", label="RBFSampler + SGDRegressor.partial_fit")
ax.axhline(rmse(whole.predict(X_test)), color="gray", lw=0.8, label="one call on all rows")
ax.set_xlabel("training rows seen")
ax.set_ylabel("test RMSE")
ax.set_yscale("log")
ax.set_title(f"cpuSmall in 10 batches, m = {m}")
ax.legend()
fig.tight_layout()
plt.show()
