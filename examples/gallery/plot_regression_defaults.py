"""
Defaults, a tuned grid and gradient boosting on the diabetes data
=================================================================

What a user gets from ``NytroRegressor(n_centers=200).fit(X, y)`` on raw features (the
default n_centers is more than these 442 rows: it would be capped, with a warning),
against the same
estimator behind a ``StandardScaler`` with its bandwidth and number of centres chosen by
``GridSearchCV``, and against scikit-learn's ``HistGradientBoostingRegressor`` with its
defaults. Each is fitted on the same 75% of scikit-learn's diabetes data (442 rows, 10
features); the bars give the test RMSE and the fit time.
"""
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from nytro import NytroRegressor

X, y = load_diabetes(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)

grid = GridSearchCV(
    make_pipeline(StandardScaler(), NytroRegressor(random_state=0, n_threads=2)),
    {"nytroregressor__sigma": [1.0, 2.0, 4.0, 8.0, 16.0], "nytroregressor__n_centers": [100, 200]},
    cv=3, scoring="neg_root_mean_squared_error")
models = {
    "nytro defaults\n(raw features)": NytroRegressor(n_centers=200, random_state=0, n_threads=2),
    "nytro, scaled,\ntuned grid (30 fits)": grid,
    "HistGradientBoosting\ndefaults": HistGradientBoostingRegressor(random_state=0),
}
rmse, seconds = [], []
for model in models.values():
    start = time.perf_counter()
    model.fit(X_train, y_train)
    seconds.append(time.perf_counter() - start)
    rmse.append(np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2)))

fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
names = list(models)
left.barh(names, rmse, color="tab:orange")
left.set(xlabel="test RMSE", title="Error")
right.barh(names, seconds, color="tab:blue")
right.set(xlabel="fit time (s)", xscale="log", title="Time")
right.set_yticklabels([])
for ax, values, fmt in [(left, rmse, "{:.1f}"), (right, seconds, "{:.2f}")]:
    for i, value in enumerate(values):
        ax.text(value, i, " " + fmt.format(value), va="center")
    ax.margins(x=0.2)  # room for the labels
fig.tight_layout()
plt.show()
