"""
Time against the number of centres m
====================================

The paper's Figure 2: on cpuSmall (shipped with the package), fit and model selection
time grows about linearly with m for NYTRO and faster for Nyström KRLS, which solves for
every lambda of its grid. This small version times one fit per m up to m = 800; the
full figure (m up to 4000, 5 repetitions) is ``python -m nytro figure2``.
"""
import time
import warnings

import matplotlib.pyplot as plt
from sklearn.exceptions import ConvergenceWarning

from nytro import NystromKRLSRegressor, NytroRegressor
from nytro.datasets import load_cpusmall

data = load_cpusmall()
ms = [100, 200, 400, 800]
times = {"NYTRO (gd, 500 iterations)": [], "NKRLS (100 lambdas)": []}
for m in ms:
    common = dict(n_centers=m, sigma=0.75, random_state=0, n_threads=2)
    for name, model in [("NYTRO (gd, 500 iterations)", NytroRegressor(method="gd", **common)),
                        ("NKRLS (100 lambdas)", NystromKRLSRegressor(**common))]:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(data.X_train, data.y_train)
        times[name].append(time.perf_counter() - start)

fig, ax = plt.subplots(figsize=(7, 4))
for (name, seconds), color in zip(times.items(), ["tab:purple", "tab:orange"]):
    ax.plot(ms, seconds, "o-", color=color, label=name)
ax.set(xlabel="m (Nyström centres)", ylabel="fit + model selection (s)",
       title=f"cpuSmall, n = {len(data.X_train)} (one fit per point, 2 threads)")
ax.legend()
plt.show()
