"""NytroRegressor: NYTRO with hold-out selection of the iteration count."""
from __future__ import annotations


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
    sigma : float, default=1.0
        Bandwidth of the Gaussian kernel exp(-||x - x'||^2 / (2 sigma^2)).
    method : {"hybrid", "cg", "gd", "nu"}, default="hybrid"
        The iterative regulariser. "gd" is the paper's gradient descent: use
        method="gd", max_iter=500 for the paper's protocol. Its path is often still
        improving at 500 iterations (Adult, cpuSmall). "cg" (conjugate gradients on the
        same normal equations) reaches its path's best hold-out error in tens to hundreds
        of iterations; "nu" (Brakhage's nu-method) follows GD's path in about sqrt(t)
        iterations. The default, "hybrid", grows the Krylov space CG searches and, at
        each of its sizes t, solves Tikhonov's problem projected onto it for every lambda
        of the paper's grid (O(t) each), selecting (t, lambda) on the hold-out set
        (lambda_): NKRLS's hold-out accuracy without its eigendecomposition, also where
        the best model is nearly unregularised and every polynomial filter stops short
        (Ijcnn: CG's best is 3.6% worse). Without a hold-out set it runs max_iter steps
        with the grid's smallest lambda (CG's iterate, up to rounding). Each iteration
        costs one product with A^T A for all four.
    nu : float, default=1.0
        Order of the nu-method.
    max_iter : int, default=500
        Iterations t_max (the paper's protocol uses 500). When the hold-out selection
        picks t = max_iter, the path may have been cut before its best model, and fit
        emits a ConvergenceWarning (scikit-learn's).
    step_size : {"auto", "paper"} or float, default="auto"
        Step of "gd" and "nu" ("cg" needs none): "auto" is 1 / lambda_max(A^T A), the
        largest stable step (authors' code); "paper" is gamma / n with gamma = 1 /
        max_i k(x_i, x_i) (paper's text); or a float (refused when unstable).
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
    iterates : {"auto", "lanczos", "stepwise"}, default="auto"
        How "gd"'s iterates are computed ("nu" and "cg" always step). "lanczos" takes
        them from a Lanczos basis of the Krylov space of (A^T A, A^T y), grown until a
        computed bound puts every iterate up to max_iter within 64 machine epsilons of the
        stepwise one (64 float32 epsilons with storage="float32", the rounding of the
        stored operator): tens of products with A^T A instead of one per iteration.
        Where the bound is not met within the basis' size limit, the path is stepped
        instead.
        "auto" uses it in float64 compute except with the "spectral" solver (whose
        iterations already cost O(m)); float32 compute steps, as the basis would amplify
        its rounding.
    factor : {"pivoted", "qr", "cholesky"}, default="pivoted"
        How R with R R^T = K_mm^+ is computed: rank-revealing pivoted Cholesky (fast),
        the paper's pivoted QR + Cholesky, or the authors' Cholesky of K_mm + 1e-10 I.
        "qr" costs far more than the others (its column-pivoted QR, LAPACK's ?geqp3, is
        half matrix-vector work).
    solver : {"auto", "direct", "gram", "spectral"}, default="auto"
        "direct" stores K_nm and reads it once per product with A^T A; "gram" forms A^T A
        once from streamed blocks (K_nm never stored) and iterates in m dimensions;
        "spectral" also eigendecomposes A^T A, after which an iteration costs O(m) (long
        "nu" or "cg" paths, e.g. max_iter=1e5); "auto" picks by a cost model (with
        Lanczos iterates, a few dozen passes over K_nm often cost less than forming
        A^T A). All give the same iterates up to rounding.
    storage : {None, "float32", "float16"}, default=None
        "float32" keeps K_nm (direct) or A^T A (gram) and the hold-out kernel in float32
        while computing in float64: half the memory and the bytes read per iteration.
        "float16" keeps K_nm in half precision (solver "direct" or "auto", which then
        stores K_nm) and the hold-out kernel in float32. It changes the model slightly:
        half precision rounds K_nm by up to 2^-11, which R would amplify along centres
        that K_mm barely separates, so the factor's rank_tol defaults to 1e-4 instead of
        m * machine epsilon and the centres within that Schur residual of the others are
        dropped (with factor "pivoted" or "qr"; "cholesky" is refused). K_nm then has
        rank_ columns at 2 bytes each (on Covertype, m = 10000, about two thirds of the
        centres are kept). Check the hold-out path against "float32" before relying on it
        for long paths.
        np.float32 / np.float16 and their dtypes mean the same.
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
    random_state : int, RandomState or None
        Seeds the hold-out split and the centres.
    n_threads : int or None, default=None
        Threads of the C++ core (None: ``nytro.default_n_threads()``, which honours
        OMP_NUM_THREADS, threadpoolctl limits, CPU affinity and the cgroup CPU quota).
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
        "hybrid" takes no products past t = rank_ (its Krylov space spans the whole
        space there), and its path stays at the last value.
    step_size_ : float, the step used (0 for "cg").
    rank_ : int, columns of the Nystrom factor R.
    solver_ : str, the solver that ran.
    products_ : int, products with A^T A taken (fewer than the iterations with Lanczos
        iterates).
    lambda_ : float or None, method "hybrid": the lambda selected with t (before the
        factor n); None for the other methods.
    """

    def __init__(self, n_centers=1000, sigma=1.0, *, method="hybrid", nu=1.0, max_iter=500, step_size="auto",
                 stopping="best", tol=None, window=10, n_iter_no_change=50, iterates="auto", factor="pivoted",
                 solver="auto", storage=None, centers=None, center_selection="uniform",
                 validation_fraction=0.2, random_state=None, n_threads=None, verbose=0, dtype=None):
        self.n_centers = n_centers
        self.centers = centers
        self.center_selection = center_selection
        self.sigma = sigma
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
        self.random_state = random_state
        self.n_threads = n_threads
        self.verbose = verbose
        self.dtype = dtype

    def _fit_path(self, X, Y, rng):
        X_train, Y_train, X_val, Y_val = self._split(X, Y, rng)
        w_train, w_val = self._split_weights()
        centers = self._centers(X, X_train, rng)
        held_out = X_val.shape[0] > 0
        result = nytro_path(
            X_train, Y_train, centers, self.sigma, X_val=X_val if held_out else None,
            y_val=Y_val if held_out else None, sample_weight=w_train, sample_weight_val=w_val,
            method=self.method, nu=self.nu, max_iter=self.max_iter,
            step_size=self.step_size,
            stopping=self.stopping, tol=self.tol, window=self.window, n_iter_no_change=self.n_iter_no_change,
            iterates=self.iterates, factor=self.factor, solver=self.solver,
            storage=self.storage,
            n_threads=self.n_threads, progress=self._progress())
        self.centers_ = centers
        self.rank_ = result.rank
        self.solver_ = result.solver
        return self._take_path(result)

    def _centers(self, X, X_train, rng):
        """The fit's centres: `centers`, or n_centers drawn by center_selection."""
        return choose_centers(X, X_train, n_centers=self.n_centers, centers=self.centers,
                              center_selection=self.center_selection, sigma=self.sigma, rng=rng,
                              n_threads=self.n_threads)
