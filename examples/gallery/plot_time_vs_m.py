"""
Time against the number of centres m
====================================

The paper's Figure 2: on cpuSmall (shipped with the package), fit and model selection
time grows about linearly with m for NYTRO and faster for Nyström KRLS, which solves for
every lambda of its grid. This small version times the best of two fits per m up to m = 800; the
full figure (m up to 4000, 5 repetitions) is ``python -m nytro figure2``.
"""
import time
import warnings

import matplotlib.pyplot as plt
from sklearn.exceptions import ConvergenceWarning

from nytro import NystromKRLSRegressor, NytroRegressor
from nytro.datasets import load_cpusmall

data = load_cpusmall()


def fit_seconds(model):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # GD's path may still improve at t = 500
        model.fit(data.X_train, data.y_train)
    return time.perf_counter() - start


ms = [100, 200, 400, 800]
builders = {"NYTRO (gd, 500 iterations)": lambda m: NytroRegressor(n_centers=m, sigma=0.75, method="gd",
                                                                   random_state=0, n_threads=2),
            "NKRLS (100 lambdas)": lambda m: NystromKRLSRegressor(n_centers=m, sigma=0.75, random_state=0,
                                                                  n_threads=2)}
for build in builders.values():  # warm up: the first fit also pays for starting thread pools
    fit_seconds(build(ms[0]))
# The best of two fits per point, so that a busy moment on the machine does not make a spike.
times = {name: [min(fit_seconds(build(m)) for _ in range(2)) for m in ms] for name, build in builders.items()}

fig, ax = plt.subplots(figsize=(7, 4))
for (name, seconds), color in zip(times.items(), ["tab:purple", "tab:orange"]):
    ax.plot(ms, seconds, "o-", color=color, label=name)
ax.set(xlabel="m (Nyström centres)", ylabel="fit + model selection (s)",
       title=f"cpuSmall, {len(data.X_train)} training rows (best of 2 fits, 2 threads)")
ax.legend()
plt.show()
