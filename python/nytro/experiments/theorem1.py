"""The main theorem (Theorem 4 of paper/nytro_paper.tex, "NYTRO and NKRLS"), checked exactly
on a fixed-design problem: E R(NYTRO_t) <= c_t E R(NKRLS_lambda) with lambda = 1/(gamma t),
c_t = 4 (1 + 1/(t-1))^2, for every t >= 2 of a log-spaced grid.

Both sides come from Proposition 2, E R = (sigma^2/n) Tr(Q^2) + (1/n) ||P (I - Q) mu||^2,
with the Q matrices of the proof of Theorem 4 (Z = A A^T, A = K_nm R, R R^T = K_mm^+):

    NYTRO  Q_t      = I - (I - (gamma/n) Z)^t
    NKRLS  Q_lambda = Z (Z + lambda n I)^-1,   lambda = 1/(gamma t)

evaluated on the thin SVD of A, so each t costs O(m) (nytro.theory.SpectralDesign).

Normalisation: the algorithm (eq. 13) steps by gamma/n with gamma = 1/max_i k(x_i, x_i)
= 1 for the Gaussian kernel (the estimators' step_size="paper"); the proof's
Q_t = I - (I - gamma/n Z)^t and its bias bound sup (1 - gamma s/n)^2t (s + n/(gamma t))^2
<= (n/(gamma t))^2 use that same step, so lambda = 1/(gamma t), with no extra n (the
proof's first line for C writes gamma for gamma/n, and the theorem's condition
"gamma < ||K_nm R||^2" stands for ||Z|| <= n/gamma, which gamma = 1/max k(x, x) gives
since Z <= K). We use step gamma/n, gamma = 1, lambda = 1/t, and check ||Z|| <= n.

Problem: n points uniform in [-1, 1]^d, Gaussian kernel of width --sigma (also P = I: the
kernel matrix of distinct points is positive definite), m centres drawn with
nytro.sample_centers, mu = sum of a few Gaussian bumps centred at training points (so mu
= K a lies in H_n and ||f_opt||^2 = a^T K a is exact, giving SNR and lambda*), noise
variance --noise-var. With --full (default) the same check is run for m = n (Z = K), i.e.
Theorem 3 (Early Stopping against KRLS), plus Theorem 2's E R(KRLS_lambda*) <= sigma^2
d_eff(lambda*)/n.

Writes theorem1_bound.png (both sides and c_t E R(NKRLS) against t; the ratio against
c_t) and theorem1_bound.json to --out. Exit status 1 if the inequality fails anywhere.

    python -m nytro theorem1 --out results/            # or benchmarks/theorem1.py
"""
from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from .. import theory

PNG = "theorem1_bound.png"
JSON = "theorem1_bound.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default=".", help="folder for theorem1_bound.png/.json (default: .)")
    parser.add_argument("--quick", action="store_true", help="small problem (n = 300, m = 40)")
    parser.add_argument("--n", type=int, default=None, help="training points (default 1500, 300 with --quick)")
    parser.add_argument("--m", type=int, default=None, help="Nystrom centres (default 100, 40 with --quick)")
    parser.add_argument("--dim", type=int, default=2, help="input dimension d (default 2)")
    parser.add_argument("--sigma", type=float, default=0.3, help="Gaussian kernel width (default 0.3)")
    parser.add_argument("--noise-var", type=float, default=0.25, help="noise variance sigma^2 (default 0.25)")
    parser.add_argument("--bumps", type=int, default=8, help="Gaussian bumps in mu (default 8)")
    parser.add_argument("--t-max", type=float, default=1e4, help="largest t (default 1e4)")
    parser.add_argument("--t-points", type=int, default=200, help="log-spaced t values from 2 (default 200)")
    parser.add_argument("--seed", type=int, default=0, help="data, mu and centres (default 0)")
    parser.add_argument("--full", action=argparse.BooleanOptionalAction, default=True,
                        help="also m = n (Theorem 3: Early Stopping vs KRLS; an n x n eigendecomposition)")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads for the dense algebra (default 1: the matrices are small and an "
                             "oversubscribed pool on a busy machine is many times slower)")


def make_problem(n, m, dim, sigma, bumps, seed):
    """X (n x dim), mu = K[:, J] a (J: `bumps` training rows), ||f_opt||^2 = a^T K_JJ a, and
    A = K_nm R for m centres. Uses nytro's kernel, centre sampler and Nystrom factor."""
    import nytro

    if not 2 <= m <= n:
        raise ValueError(f"need 2 <= m <= n, got m={m}, n={n}")
    if not 1 <= bumps <= n:
        raise ValueError(f"need 1 <= bumps <= n, got {bumps}")
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, dim))
    anchors = rng.choice(n, size=bumps, replace=False)
    weights = rng.standard_normal(bumps)
    mu = nytro.gaussian_kernel(X, X[anchors], sigma) @ weights
    norm2 = float(weights @ nytro.gaussian_kernel(X[anchors], X[anchors], sigma) @ weights)
    centers = X[nytro.sample_centers(n, m, seed + 1)]
    R = nytro.nystrom_factor(nytro.gaussian_kernel(centers, centers, sigma))
    A = nytro.gaussian_kernel(X, centers, sigma) @ R
    return X, mu, norm2, A


def t_grid(t_max, points):
    """Distinct integers from 2 to t_max, log-spaced (Theorem 4 needs t >= 2)."""
    if not t_max > 2 or points < 2:
        raise ValueError(f"need t_max > 2 and t_points >= 2, got {t_max}, {points}")
    return np.unique(np.round(np.logspace(np.log10(2), np.log10(t_max), points)))


def compare(design, t, noise_var, gamma=1.0):
    """Both sides of the theorem on the grid t: dict of arrays (V, B, E R of each method,
    ratio, c_t, ratio / c_t and ratio / the proof's constant)."""
    v_it, b_it = design.nytro(t, noise_var, gamma)
    v_tk, b_tk = design.nkrls(theory.stopping_time(t, gamma), noise_var)  # lambda = 1/(gamma t)
    risk_it, risk_tk = v_it + b_it, v_tk + b_tk
    ratio = risk_it / risk_tk
    return {"t": t, "iterative_variance": v_it, "iterative_bias": b_it, "iterative_risk": risk_it,
            "tikhonov_variance": v_tk, "tikhonov_bias": b_tk, "tikhonov_risk": risk_tk, "ratio": ratio,
            "c_t": theory.c_t(t), "ratio_over_c_t": ratio / theory.c_t(t),
            "ratio_over_c_t_proof": ratio / theory.c_t_proof(t)}


def summarize(result):
    """Scalars of a comparison: the worst ratio / c_t, where it is reached, pass/fail."""
    i = int(np.argmax(result["ratio_over_c_t"]))
    return {"max_ratio_over_c_t": float(result["ratio_over_c_t"][i]), "at_t": float(result["t"][i]),
            "max_ratio": float(result["ratio"].max()), "min_ratio": float(result["ratio"].min()),
            "max_ratio_over_c_t_proof": float(result["ratio_over_c_t_proof"].max()),
            "holds": bool(np.all(result["ratio_over_c_t"] <= 1 + 1e-12)),
            "best_t_iterative": float(result["t"][np.argmin(result["iterative_risk"])]),
            "min_risk_iterative": float(result["iterative_risk"].min()),
            "min_risk_tikhonov": float(result["tikhonov_risk"].min())}


def _plot(results, path, title):
    from ..plots import new_figure

    styles = {"nystrom": ("NYTRO_t", "NKRLS_1/(gamma t)", "tab:purple", "#c9a400", "Theorem 4: NYTRO vs NKRLS"),
              "full": ("ES_t", "KRLS_1/(gamma t)", "tab:blue", "tab:orange", "Theorem 3 (m = n): ES vs KRLS")}
    fig = new_figure(figsize=(5.2 * (len(results) + 1), 4.6), layout="constrained")
    axes = fig.subplots(1, len(results) + 1)
    ratio_ax = axes[-1]
    for ax, (key, result) in zip(axes, results.items()):
        it_name, tk_name, it_color, tk_color, panel_title = styles[key]
        t = result["t"]
        ax.loglog(t, result["iterative_risk"], color=it_color, lw=2, label=f"E R({it_name})")
        ax.loglog(t, result["tikhonov_risk"], color=tk_color, lw=1.5, label=f"E R({tk_name})")
        ax.loglog(t, result["c_t"] * result["tikhonov_risk"], color=tk_color, ls="--", lw=1.2,
                  label="c_t x that  (the bound)")
        ax.loglog(t, result["iterative_variance"], color=it_color, ls=":", lw=1, label="its variance")
        ax.loglog(t, result["iterative_bias"], color=it_color, ls="-.", lw=1, label="its bias")
        ax.set(xlabel="t  (lambda = 1/(gamma t))", ylabel="expected excess risk (Prop. 2)", title=panel_title)
        ax.legend(fontsize=8)
        ratio_ax.semilogx(t, result["ratio"], color=it_color, lw=2 if key == "nystrom" else 1.2,
                          ls="-" if key == "nystrom" else "--", label=f"E R({it_name}) / E R({tk_name})")
    t = next(iter(results.values()))["t"]
    ratio_ax.semilogx(t, theory.c_t(t), color="k", lw=1.2, label="c_t = 4 (1 + 1/(t-1))^2")
    ratio_ax.semilogx(t, theory.c_t_proof(t), color="k", ls=":", lw=1.2, label="proof's ((2t-1)/(t-1))^2")
    ratio_ax.set(xlabel="t", ylabel="ratio", ylim=(0, None), title="ratio against the constant")
    ratio_ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.savefig(path, dpi=120)
    return path


def _listed(result):
    return {key: np.asarray(value).tolist() for key, value in result.items()}


def run(args) -> int:
    from threadpoolctl import threadpool_limits

    start = time.perf_counter()
    n = args.n if args.n is not None else (300 if args.quick else 1500)
    m = args.m if args.m is not None else (40 if args.quick else 100)
    if args.seed < 0:  # numpy's own message ("expected non-negative integer") named no flag
        raise ValueError(f"--seed must be >= 0, got {args.seed}")
    if not args.noise_var > 0 or not args.sigma > 0:
        raise ValueError(f"--noise-var and --sigma must be > 0, got {args.noise_var}, {args.sigma}")
    gamma = 1.0  # 1 / max_i k(x_i, x_i): the Gaussian kernel has k(x, x) = 1
    t = t_grid(args.t_max, args.t_points)
    with threadpool_limits(limits=max(1, args.threads), user_api="blas"):
        X, mu, norm2, A = make_problem(n, m, args.dim, args.sigma, args.bumps, args.seed)
        design = theory.SpectralDesign.from_factor(A, mu)
        results = {"nystrom": compare(design, t, args.noise_var, gamma)}
        snr = float(theory.snr(norm2, args.noise_var))
        lam_star = float(theory.lambda_star(n, snr))
        record = {
            "what": "Theorem 4: E R(NYTRO_t) <= c_t E R(NKRLS_{1/(gamma t)}), exact fixed-design risks (Prop. 2)",
            "normalisation": "NYTRO step gamma/n with gamma = 1/max k(x,x) = 1; lambda = 1/(gamma t); "
                             "NKRLS Q = Z (Z + lambda n I)^-1; P = I",
            "parameters": {"n": n, "m": m, "rank_R": int(A.shape[1]), "dim": args.dim, "sigma": args.sigma,
                           "noise_var": args.noise_var, "bumps": args.bumps, "seed": args.seed, "gamma": gamma},
            "f_opt_norm2": norm2, "snr": snr, "lambda_star": lam_star,
            "t_star": float(theory.stopping_time(lam_star, gamma)),
            "norm_Z_over_n": float(design.s.max() / n),
            "mu_outside_nystrom_span": design.residual / n,
            "nystrom": summarize(results["nystrom"]),
        }
        if args.full:
            import nytro
            K = nytro.gaussian_kernel(X, X, args.sigma)
            full = theory.SpectralDesign.from_gram(K, mu)
            results["full"] = compare(full, t, args.noise_var, gamma)
            record["full"] = summarize(results["full"])
            v, b = full.nkrls(lam_star, args.noise_var)
            d_eff = float(theory.effective_dimension(K, lam_star))
            record["theorem2"] = {"risk_krls_lambda_star": float(v + b), "d_eff": d_eff,
                                  "d_tilde": float(theory.max_leverage_dimension(K, lam_star)),
                                  "bound_sigma2_d_eff_over_n": args.noise_var * d_eff / n,
                                  "holds": bool(v + b <= args.noise_var * d_eff / n * (1 + 1e-12))}
    record["curves"] = {key: _listed(result) for key, result in results.items()}
    os.makedirs(args.out, exist_ok=True)
    summary = record["nystrom"]
    png = _plot(results, os.path.join(args.out, PNG),
                f"n = {n}, m = {m}, Gaussian sigma = {args.sigma}, noise variance {args.noise_var}, "
                f"SNR = {snr:.3g}; max ratio / c_t = {summary['max_ratio_over_c_t']:.3f}")
    json_path = os.path.join(args.out, JSON)
    with open(json_path, "w") as handle:
        json.dump(record, handle)
    ok = summary["holds"]
    print(f"NYTRO vs NKRLS (n={n}, m={m}, rank {A.shape[1]}, {len(t)} values of t in [2, {t[-1]:.0f}]): "
          f"max ratio / c_t = {summary['max_ratio_over_c_t']:.4f} at t = {summary['at_t']:.0f} "
          f"(max ratio {summary['max_ratio']:.3f}; / proof constant {summary['max_ratio_over_c_t_proof']:.4f})"
          f" -> {'holds' if ok else 'VIOLATED'}")
    if args.full:
        full_summary, thm2 = record["full"], record["theorem2"]
        ok = ok and full_summary["holds"] and thm2["holds"]
        print(f"Early Stopping vs KRLS (m = n): max ratio / c_t = {full_summary['max_ratio_over_c_t']:.4f} -> "
              f"{'holds' if full_summary['holds'] else 'VIOLATED'}; Theorem 2: E R(KRLS_lambda*) = "
              f"{thm2['risk_krls_lambda_star']:.3g} <= sigma^2 d_eff/n = {thm2['bound_sigma2_d_eff_over_n']:.3g}"
              f" -> {'holds' if thm2['holds'] else 'VIOLATED'}")
    print(f"wrote {png} and {json_path} in {time.perf_counter() - start:.1f} s")
    return 0 if ok else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="theorem1", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
