"""
The regime map: which method is fastest where
=============================================

The paper's Figure 1 compares the time each method needs to reach KRLS's accuracy at
the optimal lambda* = 1 / (n SNR), as a function of the signal-to-noise ratio and of the
effective dimension d~ of the problem. :func:`nytro.theory.regime_map` evaluates the
Discussion's complexity formulas (constants 1) on a grid and returns the fastest method
in each cell (NaN where no problem exists). The full figure is ``python -m nytro figure1``.
"""
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

from nytro import theory

n = 1e6
snr = np.logspace(-3, 3, 121)
d_tilde = np.logspace(0, 6, 121)
winners = theory.regime_map(n, d_tilde, snr)

cmap = ListedColormap([theory.METHOD_COLORS[name] for name in theory.METHODS])
fig, ax = plt.subplots(figsize=(6.5, 5))
ax.set_facecolor("#eeeeee")
ax.pcolormesh(snr, d_tilde, np.ma.masked_invalid(winners), cmap=cmap, vmin=-0.5, vmax=3.5, shading="nearest")
ax.set(xscale="log", yscale="log", xlabel="SNR", ylabel="d~ (effective dimension at lambda*)",
       title=f"Fastest method to KRLS's accuracy, n = {n:.0e}")
ax.legend(handles=[Patch(color=theory.METHOD_COLORS[name], label=name) for name in theory.METHODS]
          + [Patch(facecolor="#eeeeee", edgecolor="0.6", label="no such problem")], loc="lower right")
plt.show()
