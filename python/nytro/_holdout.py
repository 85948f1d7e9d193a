"""The hold-out split that needs only a row's index: each row's part decided by a hash
of its global index and the seed, so that rows split alike whether they come in one
array, in a Dask array's chunks, or in partial_fit's batches."""
from __future__ import annotations

import numpy as np

from . import _checks as chk


def _mix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on uint64 arrays (wrapping arithmetic)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def holdout_mask(rows, validation_fraction, seed) -> np.ndarray:
    """Whether each global row index in `rows` is held out, for a split seeded by `seed`.

    Row i is held out when u(i) < validation_fraction, with u(i) in [0, 1) the top 53
    bits of h = mix(mix(seed XOR 0x6E7974726F) + (i + 1) * 0x9E3779B97F4A7C15) (mod 2^64)
    over 2^53, mix being SplitMix64's finaliser. It needs only the row's index, so each
    chunk splits its own rows; the salt keeps h apart from the stream that
    ``nytro.sample_centers`` draws from the same seed.
    """
    fraction = _check_fraction(validation_fraction)
    rows = np.asarray(rows, dtype=np.int64)
    if fraction is None:
        return np.zeros(rows.shape, dtype=bool)
    seed = _check_seed(seed)
    with np.errstate(over="ignore"):
        key = _mix64(np.array([seed ^ 0x6E7974726F], dtype=np.uint64))
        h = _mix64(key + (rows.astype(np.uint64) + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15))
    return (h >> np.uint64(11)).astype(np.float64) * 2.0**-53 < fraction


def _check_fraction(fraction):
    # The estimators' check: NumPy's numbers too (np.float32(0.25) is a fraction in memory).
    return chk.check_fraction("validation_fraction", fraction)


def _check_seed(seed) -> int:
    seed = chk.check_int("seed", seed, 0)
    if seed >= 2**64:
        raise ValueError(f"seed must be < 2**64, got {seed}")
    return seed
