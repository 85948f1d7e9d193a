"""NytroRegressor: NYTRO with hold-out selection of the iteration count."""
from __future__ import annotations



from .. import options as opt
from .._api import nytro_path
from ..centers import choose_centers
from ._base import KernelRegressorBase


class NytroRegressor(KernelRegressorBase):
    """NYTRO (Nystrom iterative regularisation): gradient descent on the Nystrom-restricted
    least-squares problem, stopped at the iteration with the best hold-out RMSE.

    Parameters
    ----------
    n_centers : int, default=1000
        Nystrom centres m, drawn without replacement from the training rows (see
        center_selection); ignored when `centers` is given.
    sigma : float or array-like of shape (n_features,), default=1.0
        Bandwidth of the kernel (scikit-learn's length_scale); an array gives each
        feature its own (ARD). Unused by kernel="linear".
    kernel : {"gaussian", "laplacian", "matern", "linear"}, default="gaussian"
        With r = ||(x - x') / sigma||: "gaussian" exp(-r^2 / 2) (scikit-learn's RBF);
        "laplacian" exp(-r) (Euclidean r; scikit-learn's laplacian_kernel uses the L1
        distance); "matern" scikit-learn's Matern(length_scale=sigma, nu=matern_nu),
        u = sqrt(2 matern_nu) r; "linear" x . x'. See nytro.kernel_matrix.
    matern_nu : {0.5, 1.5, 2.5}, default=1.5
        Order of the Matern kernel (scikit-learn's nu; named apart from `nu`, the
        nu-method's order); read by kernel="matern" only.
    method : {"hybrid", "cg", "gd", "nu"}, default="hybrid"
        The iterative regulariser. "gd" is the paper's gradient descent: use
        method="gd", max_iter=500 for the paper's protocol. Its path is often still
        improving at 500 iterations (Adult, cpuSmall). "cg" (conjugate gradients on the
        same normal equations, its iterates taken from the reorthogonalised Lanczos basis
        of the Krylov space; once that space is invariant, the minimum-norm
        least-squares solution on it) reaches its path's best hold-out error in tens to
        hundreds of iterations; "nu" (Brakhage's nu-method) follows GD's path in about sqrt(t)
        iterations. The default, "hybrid", grows the Krylov space CG searches and, at
        each of its sizes t, solves Tikhonov's problem projected onto it for every lambda
        of the paper's grid (O(t) each), selecting (t, lambda) on the hold-out set
        (lambda_): NKRLS's hold-out accuracy without its eigendecomposition, also where
        the best model is nearly unregularised and every polynomial filter stops short.
        Without a hold-out set it runs max_iter steps with the grid's smallest lambda
        (CG's iterate, up to rounding). Each iteration costs one product with A^T A for
        all four.
    nu : float, default=1.0
        Order of the nu-method.
    max_iter : int, default=500
        Iterations t_max (the paper's protocol uses 500). When the hold-out selection
        picks t = max_iter, the path may have been cut before its best model, and fit
        emits a ConvergenceWarning (scikit-learn's).
    step_size : {"auto", "paper"} or float, default="auto"
        Step of "gd" and "nu" ("cg" needs none): "auto" is 1 / lambda_max(A^T A), the
        largest stable step (authors' code); "paper" is gamma / n with gamma = 1 /
        max_i k(x_i, x_i) (1, or max ||x_i||^2 for kernel="linear"; paper's text); or a float (refused when unstable).
    stopping : {"best", "relative", "window"}, default="best"
        How t is picked from the validation path: "best" is the argmin over all
        iterations; "relative" (paper's text) stops once the RMSE has not improved by more
        than `tol` (default 0.05, relative) over the last `window` iterations; "window"
        (authors' code) stops when a line fitted to the last `window` RMSEs falls by less
        than `tol` (default 1e-4, absolute) over the window.
    tol : float or None, default=None
        Threshold of the early stopping rules (see `stopping`).
    window : int, default=10
        Iterations the early stopping rules look back.
    n_iter_no_change : int or None, default=50
        With stopping="best", end the path this many iterations after its last
        improvement (the best of "hybrid" and "cg" comes within tens to hundreds of
        iterations); None runs all max_iter iterations, as the paper's protocol does.
    options : NytroOptions or None, default=None
        How the path is computed (solver, storage, iterates, factor, rank_tol, jitter,
        n_threads): time, memory and rounding. See :class:`~nytro.NytroOptions`, where
        each is described; None is its defaults.
    iterates, factor, solver, storage, n_threads : as in NytroOptions, default as there
        Shortcuts for the fields of `options` of the same name (searchable with
        set_params / GridSearchCV). A shortcut left at its default takes the value in
        `options`; a shortcut and a field both set to different values are refused.
    centers : array of shape (m, d), 1-D integer array, or None, default=None
        Your own centres: the points themselves, or indices of rows of the X given to fit
        (taken before the hold-out split, so they may be hold-out rows). None draws
        n_centers of them (center_selection).
    center_selection : {"uniform", "leverage"}, default="uniform"
        How the centres are drawn from the training rows: uniformly, or by approximate
        ridge leverage scores (BLESS-style, nytro.centers), which put them where the
        kernel's feature space needs them: fewer in dense, redundant clusters, more on
        rows in regions of their own. Its cost, O(m^3 + m^2 d) a level whatever n, is
        measured against the fit's in benchmarks/bench_centers.py. Seeded by
        random_state, independent of n_threads; it does not use sample_weight.
    validation_fraction : float in (0, 1) or None, default=0.2
        Hold-out share used to select t; None runs exactly `max_iter` iterations on all rows.
    refit : bool, default=False
        After the hold-out selection, fit again on all rows given to fit (training and
        hold-out parts together) at the selected t (n_iter_; for method "hybrid", t and
        lambda_), without a hold-out set: the authors' "recompute". The centres stay
        those drawn from the training part; the step rule (step_size "auto" or "paper")
        is evaluated on all rows. The validation path and the selection are those of
        the hold-out fit; coef_ is the refitted model's. Ignored without a hold-out set
        (validation_fraction=None).
    random_state : int, RandomState or None
        Seeds the hold-out split and the centres.
    verbose : int, default=0
        Print progress to stderr.
    dtype : {None, "float32", "float64"}, default=None
        Compute precision; None computes in float32 for float32 X, float64 otherwise.
        NumPy's spellings (np.float32, np.dtype("float64"), "f4", float) are accepted.

    Attributes
    ----------
    centers_ : (m, d) the Nystrom centres.
    coef_ : (m,) or (m, q) alpha at the selected t; predict(X) = k(X, centers_) @ coef_.
    n_iter_ : int, the selected t.
    validation_rmse_ : (t_run,) hold-out RMSE after each iteration (empty without hold-out);
        "hybrid" and "cg" take no products past t = rank_ (their Krylov space spans the
        whole space there), and their path ends there.
    step_size_ : float, the step used (0 for "cg").
    rank_ : int, columns of the Nystrom factor R.
    solver_ : str, the solver that ran.
    products_ : int, products with A^T A taken (fewer than the iterations with Lanczos
        iterates).
    lambda_ : float or None, method "hybrid": the lambda selected with t (before the
        factor n); None for the other methods.
    """

    def __init__(self, n_centers=1000, sigma=1.0, *, kernel="gaussian", matern_nu=1.5, method="hybrid", nu=1.0,
                 max_iter=500, step_size="auto",
                 stopping="best", tol=None, window=10, n_iter_no_change=50, iterates="auto", factor="pivoted",
                 solver="auto", storage=None, centers=None, center_selection="uniform",
                 validation_fraction=0.2, refit=False, random_state=None, n_threads=None, verbose=0, dtype=None,
                 options=None):
        self.n_centers = n_centers
        self.centers = centers
        self.center_selection = center_selection
        self.sigma = sigma
        self.kernel = kernel
        self.matern_nu = matern_nu
        self.method = method
        self.nu = nu
        self.max_iter = max_iter
        self.step_size = step_size
        self.stopping = stopping
        self.tol = tol
        self.window = window
        self.n_iter_no_change = n_iter_no_change
        self.iterates = iterates
        self.factor = factor
        self.solver = solver
        self.storage = storage
        self.validation_fraction = validation_fraction
        self.refit = refit
        self.random_state = random_state
        self.n_threads = n_threads
        self.verbose = verbose
        self.dtype = dtype
        self.options = options

    _family = opt.NYTRO

    def _fit_path(self, X, Y, rng):
        X_train, Y_train, X_val, Y_val = self._split(X, Y, rng)
        w_train, w_val = self._split_weights()
        centers = self._centers(X, X_train, rng)
        held_out = X_val.shape[0] > 0
        refit = self._refits(held_out)
        shared = dict(kernel=self.kernel, matern_nu=self.matern_nu, method=self.method, nu=self.nu,
                      step_size=self.step_size, options=self._options(), progress=self._progress())
        result = nytro_path(
            X_train, Y_train, centers, self.sigma, X_val=X_val if held_out else None,
            y_val=Y_val if held_out else None, sample_weight=w_train, sample_weight_val=w_val,
            max_iter=self.max_iter,
            stopping=self.stopping, tol=self.tol, window=self.window, n_iter_no_change=self.n_iter_no_change,
            metric=self._selection_metric(), **shared)
        self.centers_ = centers
        self.rank_ = result.rank
        self.solver_ = result.solver
        coef = self._take_path(result)
        if refit:  # all rows, the selected t (and lambda), no hold-out set
            again = nytro_path(X, Y, centers, self.sigma, max_iter=self.n_iter_, hybrid_lambda=self.lambda_,
                               sample_weight=self._fit_sample_weight, **shared)
            self.step_size_, self.solver_, coef = again.step_size, again.solver, again.coef
        return coef

    def _centers(self, X, X_train, rng):
        """The fit's centres: `centers`, or n_centers drawn by center_selection."""
        return choose_centers(X, X_train, n_centers=self.n_centers, centers=self.centers,
                              center_selection=self.center_selection, sigma=self.sigma, rng=rng,
                              n_threads=self._n_threads(), kernel=self.kernel, matern_nu=self.matern_nu)
