"""
Uniform against leverage-score centres
======================================

Uniform centres follow the density of the data. When most rows crowd into a small
region where the target hardly changes, most uniform centres land there and add nothing:
the rest of the space, where the target varies, gets few. ``center_selection="leverage"``
draws the centres by approximate ridge leverage scores (BLESS-style, :mod:`nytro.centers`).
Rows in a region of their own have high scores, and rows in a crowd share theirs, so the
centres go where the kernel's feature space needs them.

Here 95% of the rows form one tight cluster with a nearly constant target, and 5% are
spread over a wide square where the target is ``sin(x1) cos(0.7 x2)``, with noise 0.1
(the best possible test RMSE is 0.1). On the paper's datasets, whose density is more even,
the two selections give about the same error, and leverage scores only add the cost of
the selection (``benchmarks/bench_centers_paper.py``).
"""
import matplotlib.pyplot as plt
import numpy as np

from nytro import NytroRegressor


def uneven_mixture(n, seed):
    """Rows of a tight cluster (share 0.95) and of a wide, sparse square (share 0.05)."""
    rng = np.random.default_rng(seed)
    wide = rng.random(n) < 0.05
    X = np.where(wide[:, None], rng.uniform(-5.0, 5.0, (n, 2)), 0.3 * rng.standard_normal((n, 2)))
    y = np.sin(X[:, 0]) * np.cos(0.7 * X[:, 1]) + 0.1 * rng.standard_normal(n)
    return X, y


X, y = uneven_mixture(8000, seed=0)
X_test, y_test = uneven_mixture(4000, seed=1)

ms = [25, 50, 100, 200]
rmse = {"uniform": [], "leverage": []}
centres = {}
for selection in rmse:
    for m in ms:
        model = NytroRegressor(n_centers=m, sigma=0.5, center_selection=selection, random_state=0)
        model.fit(X, y)
        rmse[selection].append(np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2)))
        centres[selection] = model.centers_  # keep the largest m's for the right panel
    print(selection, " ".join(f"m={m}: {e:.3f}" for m, e in zip(ms, rmse[selection])))

fig, (left, *maps) = plt.subplots(1, 3, figsize=(13, 4))
for selection, marker in (("uniform", "o"), ("leverage", "s")):
    left.plot(ms, rmse[selection], marker=marker, label=selection)
left.axhline(0.1, color="0.5", linestyle=":", label="noise level")
left.set(xscale="log", xlabel="centres m", ylabel="test RMSE", title="Test RMSE against m")
left.set_xticks(ms, [str(m) for m in ms])
left.minorticks_off()
left.legend()

for ax, (selection, color) in zip(maps, (("uniform", "C0"), ("leverage", "C1"))):
    outside = int(np.sum(np.abs(centres[selection]).max(axis=1) > 1.5))  # beyond 5 std of the cluster
    ax.scatter(X[:, 0], X[:, 1], s=1, color="0.8")
    ax.scatter(centres[selection][:, 0], centres[selection][:, 1], s=10, color=color)
    ax.set(xlabel="x1", ylabel="x2", aspect="equal")
    ax.set_title(f"{selection}: {outside} of {ms[-1]} centres outside the cluster", fontsize=10)
fig.tight_layout()
plt.show()
