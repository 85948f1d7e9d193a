// The only pybind11 file: NumPy in, NumPy out. The Python layer (nytro/_api.py) checks
// arguments and hands over C-contiguous float32/float64 arrays, which are mapped
// without copies; results are moved into NumPy arrays. The GIL is released around all
// C++ work and re-acquired only in the progress callback, which also turns Ctrl-C into
// KeyboardInterrupt between iterations.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nytro/nytro.hpp>

#include "bench/timing.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

namespace py = pybind11;
using nytro::Index;
using nytro::Matrix;

namespace {

template <class T>
using Array = py::array_t<T, py::array::c_style>;

template <class T>
Eigen::Map<const Matrix<T>> view(const Array<T>& a) {
    if (a.ndim() != 2) throw std::invalid_argument("expected a 2-D array, got " + std::to_string(a.ndim()) + "-D");
    return {a.data(), a.shape(0), a.shape(1)};
}

template <class T>
py::array_t<T> to_numpy(Matrix<T>&& m) {
    auto* owned = new Matrix<T>(std::move(m));
    py::capsule owner(owned, [](void* p) { delete static_cast<Matrix<T>*>(p); });
    return py::array_t<T>({owned->rows(), owned->cols()},
                          {owned->cols() * Index(sizeof(T)), Index(sizeof(T))}, owned->data(), owner);
}

// Progress callback seen by the core: every 20 ms at most it takes the GIL, lets Python
// run pending signal handlers (Ctrl-C raises here) and calls the user's progress
// function, if any, with (stage, done, total).
// The core copies its options, and the callback in them, with the GIL released: the
// Python function is held through a shared_ptr, so that copying the callback touches no
// Python reference count (a py::object copied there would be an unguarded inc_ref, a data
// race with every other thread). The options given to the core outlive all its copies
// and are destroyed with the GIL held, which releases the function.
nytro::Callback make_callback(py::object progress) {
    using Clock = std::chrono::steady_clock;
    auto last = std::make_shared<Clock::time_point>(Clock::now());
    auto function = std::make_shared<py::object>(std::move(progress));
    return [function, last](const nytro::Progress& p) {
        const auto now = Clock::now();
        if (now - *last < std::chrono::milliseconds(20) && p.done != p.total) return;
        *last = now;
        py::gil_scoped_acquire gil;
        if (PyErr_CheckSignals() != 0) throw py::error_already_set();
        if (!function->is_none()) (*function)(p.stage, p.done, p.total);
    };
}

template <class T>
py::dict path_dict(nytro::PathResult<T>&& r) {
    py::dict d;
    d["coef"] = to_numpy<T>(std::move(r.coef));
    d["validation_rmse"] = py::array_t<double>(r.validation_rmse.size(), r.validation_rmse.data());
    d["n_iter"] = r.n_iter;
    d["iterations_run"] = r.iterations_run;
    d["lambda"] = r.lambda;
    d["products"] = r.products;
    d["step_size"] = r.step_size;
    d["rank"] = r.rank;
    d["solver"] = std::string(nytro::to_string(r.solver));
    return d;
}

template <class T>
py::dict tikhonov_dict(nytro::TikhonovResult<T>&& r) {
    py::dict d;
    d["coef"] = to_numpy<T>(std::move(r.coef));
    d["validation_rmse"] = py::array_t<double>(r.validation_rmse.size(), r.validation_rmse.data());
    d["selected"] = r.selected;
    d["rank"] = r.rank;
    return d;
}

// An enum field of an options struct, seen from Python as the names of options.cpp.
template <class Class, class S, class E>
void enum_field(Class& cls, const char* name, E S::*field, E (*parse)(const std::string&)) {
    cls.def_property(
        name, [field](const S& o) { return std::string(nytro::to_string(o.*field)); },
        [field, parse](S& o, const std::string& value) { o.*field = parse(value); });
}

// The options structs of options.hpp, bound field by field under their C++ names:
// nytro/options.py builds them by name (setattr), so a misspelt or removed field is an
// AttributeError rather than a value landing in the wrong slot, and tests/api/test_options.py
// compares every default with the Python layers. The callback is not a field here: the
// path functions take `progress` and wrap it (make_callback).
void bind_options(py::module_& m) {
    py::class_<nytro::FactorOptions> factor(m, "FactorOptions");
    factor.def(py::init<>())
        .def_readwrite("rank_tol", &nytro::FactorOptions::rank_tol)
        .def_readwrite("jitter", &nytro::FactorOptions::jitter);
    enum_field(factor, "method", &nytro::FactorOptions::method, &nytro::parse_factor_method);

    py::class_<nytro::IterativeOptions> iterative(m, "IterativeOptions");
    iterative.def(py::init<>())
        .def_readwrite("nu", &nytro::IterativeOptions::nu)
        .def_readwrite("max_iter", &nytro::IterativeOptions::max_iter)
        .def_readwrite("step_size", &nytro::IterativeOptions::step_size)
        .def_readwrite("tol", &nytro::IterativeOptions::tol)
        .def_readwrite("window", &nytro::IterativeOptions::window)
        .def_readwrite("patience", &nytro::IterativeOptions::patience)
        .def_readwrite("validation_weights", &nytro::IterativeOptions::validation_weights)
        .def_readwrite("sample_weights", &nytro::IterativeOptions::sample_weights)
        .def_readwrite("validation_sample_weights", &nytro::IterativeOptions::validation_sample_weights)
        .def_readwrite("hybrid_lambda", &nytro::IterativeOptions::hybrid_lambda)
        .def_readwrite("n_threads", &nytro::IterativeOptions::n_threads);
    enum_field(iterative, "metric", &nytro::IterativeOptions::metric, &nytro::parse_metric);
    enum_field(iterative, "method", &nytro::IterativeOptions::method, &nytro::parse_method);
    enum_field(iterative, "stopping", &nytro::IterativeOptions::stopping, &nytro::parse_stopping);
    enum_field(iterative, "iterates", &nytro::IterativeOptions::iterates, &nytro::parse_iterates);
    // "fixed" is settable here (a numeric step_size in Python), unlike in parse_step_rule
    enum_field(iterative, "step_rule", &nytro::IterativeOptions::step_rule,
               +[](const std::string& value) {
                   return value == "fixed" ? nytro::StepRule::fixed : nytro::parse_step_rule(value);
               });

    py::class_<nytro::NytroOptions, nytro::IterativeOptions> nystrom(m, "NytroOptions");
    nystrom.def(py::init<>()).def_readwrite("factor", &nytro::NytroOptions::factor);
    enum_field(nystrom, "solver", &nytro::NytroOptions::solver, &nytro::parse_solver);
    enum_field(nystrom, "storage", &nytro::NytroOptions::storage, &nytro::parse_storage);

    py::class_<nytro::TikhonovOptions> tikhonov(m, "TikhonovOptions");
    tikhonov.def(py::init<>())
        .def_readwrite("factor", &nytro::TikhonovOptions::factor)
        .def_readwrite("validation_weights", &nytro::TikhonovOptions::validation_weights)
        .def_readwrite("sample_weights", &nytro::TikhonovOptions::sample_weights)
        .def_readwrite("validation_sample_weights", &nytro::TikhonovOptions::validation_sample_weights)
        .def_readwrite("n_threads", &nytro::TikhonovOptions::n_threads);
    enum_field(tikhonov, "metric", &nytro::TikhonovOptions::metric, &nytro::parse_metric);
    enum_field(tikhonov, "solver", &nytro::TikhonovOptions::solver, &nytro::parse_tikhonov_solver);
    enum_field(tikhonov, "storage", &nytro::TikhonovOptions::storage, &nytro::parse_storage);
}

template <class T>
void define(py::module_& m, const std::string& suffix) {
    // The kernel (nytro/kernel.hpp; a float is the Gaussian's sigma, nytro.gaussian_kernel).
    // Both forms take `progress` (make_callback): Ctrl-C reaches them while they run.
    m.def(("kernel_matrix_" + suffix).c_str(),
          [](const Array<T>& X, const Array<T>& Z, const nytro::KernelSpec& kernel, int n_threads,
             py::object progress) {
              auto x = view(X), z = view(Z);
              auto callback = make_callback(std::move(progress));
              Matrix<T> K;
              {
                  py::gil_scoped_release release;
                  K = nytro::kernel_matrix<T>(x, z, kernel, n_threads, callback);
              }
              return to_numpy<T>(std::move(K));
          },
          py::kw_only(), py::arg("X"), py::arg("Z"), py::arg("kernel"), py::arg("n_threads"),
          py::arg("progress") = py::none());

    // Into a caller's C-contiguous, writable (n, m) array (checked in Python): no fresh
    // n x m allocation, whose first-touch page faults cost as much as the kernel itself.
    m.def(("kernel_matrix_into_" + suffix).c_str(),
          [](const Array<T>& X, const Array<T>& Z, const nytro::KernelSpec& kernel, py::array out, int n_threads,
             py::object progress) {
              auto x = view(X), z = view(Z);
              auto callback = make_callback(std::move(progress));
              // A plain py::array: an array_t parameter would convert a mismatched array
              // into a temporary copy and the result would silently not reach the caller.
              if (!out.dtype().is(py::dtype::of<T>()) || out.ndim() != 2 || out.shape(0) != X.shape(0) ||
                  out.shape(1) != Z.shape(0) || !(out.flags() & py::array::c_style) || !out.writeable())
                  throw std::invalid_argument("out must be a writable C-contiguous array of the computation's "
                                              "dtype and shape (n_X, n_Z)");
              Eigen::Map<Matrix<T>> target(static_cast<T*>(out.mutable_data()), out.shape(0), out.shape(1));
              {
                  py::gil_scoped_release release;
                  nytro::kernel_matrix_into<T>(x, z, kernel, target, n_threads, callback);
              }
          },
          py::kw_only(), py::arg("X"), py::arg("Z"), py::arg("kernel"), py::arg("out"), py::arg("n_threads"),
          py::arg("progress") = py::none());

    m.def(("kernel_predict_" + suffix).c_str(),
          [](const Array<T>& X, const Array<T>& centers, const Array<T>& coef, const nytro::KernelSpec& kernel, int n_threads,
             py::object progress) {
              auto x = view(X), c = view(centers), a = view(coef);
              auto callback = make_callback(std::move(progress));
              Matrix<T> out;
              {
                  py::gil_scoped_release release;
                  out = nytro::kernel_predict<T>(x, c, a, kernel, n_threads, callback);
              }
              return to_numpy<T>(std::move(out));
          },
          py::kw_only(), py::arg("X"), py::arg("centers"), py::arg("coef"), py::arg("kernel"),
          py::arg("n_threads"), py::arg("progress") = py::none());

    // nytro/normal_equations.hpp, for nytro.dask's gram mode: (H, C) = (A^T A, A^T Y) over
    // these rows, A = diag(row_scale) k(X, centers[support]) R, R (len(support) x k) upper
    // triangular when upper_triangular (its strict lower part then unread); support None:
    // every centre, in order. R None: (K^T K, K^T Y) on all the centres, no factor.
    // row_scale None: no row scales.
    m.def(("_normal_equations_" + suffix).c_str(),
          [](const Array<T>& X, const Array<T>& Y, const Array<T>& centers, std::optional<Array<T>> R,
             std::optional<Array<Index>> support, bool upper_triangular, const nytro::KernelSpec& kernel,
             std::optional<Array<T>> row_scale, bool kernel_first, bool low_precision, int n_threads,
             py::object progress) {
              auto x = view(X), y = view(Y), c = view(centers);
              nytro::NormalEquationsOptions options;
              options.kernel_first = kernel_first;
              options.low_precision = low_precision;
              options.n_threads = n_threads;
              options.callback = make_callback(std::move(progress));
              std::optional<nytro::NystromFactor<T>> factor;
              if (!R && (support || upper_triangular))
                  throw std::invalid_argument("support and upper_triangular describe a factor R, but R is None");
              if (R) {
                  factor.emplace();
                  factor->R = view(*R);
                  factor->upper_triangular = upper_triangular;
                  if (support) {
                      if (support->ndim() != 1)
                          throw std::invalid_argument("support must be 1-D, got " + std::to_string(support->ndim()) +
                                                      "-D");
                      factor->support.assign(support->data(), support->data() + support->shape(0));
                  } else {
                      for (Index i = 0; i < factor->R.rows(); ++i) factor->support.push_back(i);
                  }
              }
              nytro::Vector<T> scale;
              if (row_scale) {
                  if (row_scale->ndim() != 1) throw std::invalid_argument("row_scale must be 1-D");
                  scale = Eigen::Map<const nytro::Vector<T>>(row_scale->data(), row_scale->shape(0));
              }
              nytro::NormalEquationsResult<T> out;
              {
                  py::gil_scoped_release release;
                  out = nytro::normal_equations<T>(x, y, c, factor ? &*factor : nullptr, kernel, scale, options);
              }
              return py::make_tuple(to_numpy<T>(std::move(out.H)), to_numpy<T>(std::move(out.C)));
          },
          py::kw_only(), py::arg("X"), py::arg("Y"), py::arg("centers"), py::arg("R"), py::arg("support"),
          py::arg("upper_triangular"), py::arg("kernel"), py::arg("row_scale"), py::arg("kernel_first"), py::arg("low_precision"), py::arg("n_threads"),
          py::arg("progress") = py::none());

    // nytro/normal_equations.hpp, for nytro.dask's "direct" mode: K^T (K B) over a kernel
    // block a worker keeps, read in place (K may be float32 for a float64 computation).
    auto block_product = [](const auto& K, const Array<T>& B, int n_threads) {
        using S = typename std::decay_t<decltype(K)>::value_type;
        auto k = view(K);
        auto b = view(B);
        Matrix<T> out;
        {
            py::gil_scoped_release release;
            out = nytro::block_normal_product<T, S>(k, b, n_threads);
        }
        return to_numpy<T>(std::move(out));
    };
    m.def(("_block_normal_product_" + suffix).c_str(),
          [block_product](const Array<T>& K, const Array<T>& B, int n_threads) { return block_product(K, B, n_threads); },
          py::kw_only(), py::arg("K").noconvert(), py::arg("B"), py::arg("n_threads"));
    if constexpr (std::is_same_v<T, double>)
        m.def("_block_normal_product_float64_from_float32",
              [block_product](const Array<float>& K, const Array<T>& B, int n_threads) {
                  return block_product(K, B, n_threads);
              },
              py::kw_only(), py::arg("K").noconvert(), py::arg("B"), py::arg("n_threads"));

    // Benchmark hook (benchmarks/bench_kernels.py): median seconds of `repeats` fused passes
    // K^T (K a - y) over a stored kernel, the inner loop of the direct solver; K may be
    // float32 for a float64 computation (storage="float32").
    auto fused_pass = [](const auto& K, const Array<T>& a, const Array<T>& y, int n_threads, int repeats) {
        using S = typename std::decay_t<decltype(K)>::value_type;
        const Matrix<S> stored = view(K);
        auto av = view(a), yv = view(y);
        py::gil_scoped_release release;
        return nytro::fused_pass_seconds<T, S>(stored, av, yv, n_threads, repeats);
    };
    m.def(("_fused_pass_seconds_" + suffix).c_str(),
          [fused_pass](const Array<T>& K, const Array<T>& a, const Array<T>& y, int n_threads, int repeats) {
              return fused_pass(K, a, y, n_threads, repeats);
          });
    if constexpr (std::is_same_v<T, double>)
        m.def("_fused_pass_seconds_float64_from_float32",
              [fused_pass](const Array<float>& K, const Array<T>& a, const Array<T>& y, int n_threads, int repeats) {
                  return fused_pass(K, a, y, n_threads, repeats);
              });

    // Benchmark hook: median seconds of `repeats` products H b over the lower triangle of
    // H, the inner loop of the Gram solver; H may be float32 for a float64 computation.
    auto symmetric_pass = [](const auto& H, const Array<T>& b, int n_threads, int repeats) {
        using S = typename std::decay_t<decltype(H)>::value_type;
        const Matrix<S> stored = view(H);
        auto bv = view(b);
        py::gil_scoped_release release;
        return nytro::symmetric_pass_seconds<T, S>(stored, bv, n_threads, repeats);
    };
    m.def(("_symmetric_pass_seconds_" + suffix).c_str(),
          [symmetric_pass](const Array<T>& H, const Array<T>& b, int n_threads, int repeats) {
              return symmetric_pass(H, b, n_threads, repeats);
          });
    if constexpr (std::is_same_v<T, double>)
        m.def("_symmetric_pass_seconds_float64_from_float32",
              [symmetric_pass](const Array<float>& H, const Array<T>& b, int n_threads, int repeats) {
                  return symmetric_pass(H, b, n_threads, repeats);
              });

    // Benchmark hook (benchmarks/bench_scaling.py): median seconds of `repeats` pivoted
    // factors of K_mm as a fit makes them (U, not inverted).
    m.def(("_factor_seconds_" + suffix).c_str(), [](const Array<T>& K_mm, int n_threads, int repeats) {
        auto k = view(K_mm);
        py::gil_scoped_release release;
        return nytro::factor_seconds<T>(k, n_threads, repeats);
    });
    // Benchmark hook: median seconds of `repeats` updates G -= B^T B of an upper triangle,
    // the factor's update after each panel.
    m.def(("_rank_update_seconds_" + suffix).c_str(), [](const Array<T>& B, int n_threads, int repeats) {
        auto b = view(B);
        py::gil_scoped_release release;
        return nytro::rank_update_seconds<T>(b, n_threads, repeats);
    });

    m.def(("nystrom_factor_" + suffix).c_str(),
          [](const Array<T>& K_mm, const nytro::FactorOptions& options, int n_threads, py::object progress) {
              auto k = view(K_mm);
              const auto interrupt = make_callback(std::move(progress));
              Matrix<T> R;
              {
                  py::gil_scoped_release release;
                  const auto f = nytro::nystrom_factor<T>(k, options, n_threads, interrupt);
                  R = f.dense(k.rows());
              }
              return to_numpy<T>(std::move(R));
          },
          py::kw_only(), py::arg("K_mm"), py::arg("options"), py::arg("n_threads"), py::arg("progress") = py::none());

    // The factor as the core holds it (nytro/nystrom.hpp), for nytro.dask's gram mode:
    // (support, R, upper_triangular), R (len(support) x k) the rows of nystrom_factor's R
    // at the centres in support (its other rows are zero), its strict lower part zero when
    // upper_triangular.
    m.def(("_nystrom_factor_parts_" + suffix).c_str(),
          [](const Array<T>& K_mm, const nytro::FactorOptions& options, int n_threads, py::object progress) {
              auto k = view(K_mm);
              const auto interrupt = make_callback(std::move(progress));
              nytro::NystromFactor<T> f;
              {
                  py::gil_scoped_release release;
                  f = nytro::nystrom_factor<T>(k, options, n_threads, interrupt);
                  if (f.upper_triangular) f.R.template triangularView<Eigen::StrictlyLower>().setZero();
              }
              Array<Index> support(py::ssize_t(f.support.size()));
              std::copy(f.support.begin(), f.support.end(), support.mutable_data());
              return py::make_tuple(support, to_numpy<T>(std::move(f.R)), f.upper_triangular);
          },
          py::kw_only(), py::arg("K_mm"), py::arg("options"), py::arg("n_threads"), py::arg("progress") = py::none());

    // The path functions take their options struct whole and every argument by keyword
    // (nytro/_api.py), so that two arguments of one type cannot be swapped unnoticed.
    m.def(("nytro_path_" + suffix).c_str(),
          [](const Array<T>& X, const Array<T>& Y, const Array<T>& centers, const nytro::KernelSpec& kernel, const Array<T>& X_val,
             const Array<T>& Y_val, nytro::NytroOptions options, py::object progress) {
              options.callback = make_callback(std::move(progress));
              auto x = view(X), y = view(Y), c = view(centers), xv = view(X_val), yv = view(Y_val);
              nytro::PathResult<T> r;
              {
                  py::gil_scoped_release release;
                  r = nytro::nytro_path<T>(x, y, c, kernel, xv, yv, options);
              }
              return path_dict<T>(std::move(r));
          },
          py::kw_only(), py::arg("X"), py::arg("Y"), py::arg("centers"), py::arg("kernel"), py::arg("X_val"),
          py::arg("Y_val"), py::arg("options"), py::arg("progress") = py::none());

    // The path engine over Python's operators (nytro.dask): apply(P) -> H P and
    // holdout(alphas, q) -> one value per coefficient set, both called with the GIL taken
    // (the engine runs with it released); None for no hold-out set. The callables are held
    // through shared_ptrs, as make_callback holds progress, so that the engine's copies of
    // them touch no Python reference count.
    m.def(("operator_path_" + suffix).c_str(),
          [](py::object apply, const Array<T>& rhs, const Array<T>& lift, py::object holdout, double holdout_bytes,
             Index holdout_most, py::object holdout_factors, double holdout_rows, double iteration_bytes,
             double storage_epsilon, Index n, double kernel_bound, nytro::IterativeOptions options,
             py::object progress) {
              options.callback = make_callback(std::move(progress));
              nytro::OperatorProblem<T> problem;
              problem.rhs = view(rhs);
              problem.lift = view(lift);
              problem.dim = problem.rhs.rows();
              problem.q = problem.rhs.cols();
              problem.apply = [function = std::make_shared<py::object>(std::move(apply))](const Matrix<T>& P,
                                                                                            Matrix<T>& out) {
                  py::gil_scoped_acquire gil;
                  Array<T> result = py::cast<Array<T>>((*function)(to_numpy<T>(Matrix<T>(P))));
                  if (result.ndim() != 2 || result.shape(0) != P.rows() || result.shape(1) != P.cols())
                      throw std::invalid_argument("apply must return an array of the shape of its argument, (" +
                                                  std::to_string(P.rows()) + ", " + std::to_string(P.cols()) + ")");
                  out = view(result);
              };
              if (!holdout.is_none())
                  problem.holdout = [function = std::make_shared<py::object>(std::move(holdout))](
                                        const Matrix<T>& alphas, Index q) {
                      py::gil_scoped_acquire gil;
                      return py::cast<std::vector<double>>((*function)(to_numpy<T>(Matrix<T>(alphas)), q));
                  };
              if (!holdout_factors.is_none())
                  problem.holdout_factors = [function = std::make_shared<py::object>(std::move(holdout_factors))](
                                                const std::vector<Matrix<T>>& bases) {
                      py::gil_scoped_acquire gil;
                      py::list arrays;
                      for (const Matrix<T>& B : bases) arrays.append(to_numpy<T>(Matrix<T>(B)));
                      std::vector<Eigen::MatrixXd> factors;
                      for (py::handle factor : (*function)(arrays))
                          factors.emplace_back(view(py::cast<Array<double>>(factor)));
                      return factors;
                  };
              problem.holdout_rows = holdout_rows;
              problem.holdout_bytes = holdout_bytes;
              problem.holdout_most = holdout_most;
              problem.iteration_bytes = iteration_bytes;
              problem.storage_epsilon = storage_epsilon;
              problem.n = n;
              problem.kernel_bound = kernel_bound;
              nytro::PathResult<T> r;
              {
                  py::gil_scoped_release release;
                  r = nytro::operator_path<T>(problem, options);
              }
              return path_dict<T>(std::move(r));
          },
          py::kw_only(), py::arg("apply"), py::arg("rhs"), py::arg("lift"), py::arg("holdout"),
          py::arg("holdout_bytes") = 0.0, py::arg("holdout_most") = 0, py::arg("holdout_factors") = py::none(),
          py::arg("holdout_rows") = 0.0, py::arg("iteration_bytes") = 0.0,
          py::arg("storage_epsilon") = 0.0, py::arg("n"), py::arg("kernel_bound") = 1.0, py::arg("options"),
          py::arg("progress") = py::none());

    // solver="auto"'s price of a path before it runs (nytro.dask's choice of its mode).
    m.def(("expected_path_length_" + suffix).c_str(),
          [](const nytro::IterativeOptions& options, Index k, bool validated) {
              const nytro::PathLength length = nytro::expected_path_length<T>(options, k, validated);
              py::dict priced;
              priced["products"] = length.products;
              priced["iterations"] = length.iterations;
              priced["planned"] = length.planned;
              return priced;
          },
          py::kw_only(), py::arg("options"), py::arg("k"), py::arg("validated"));

    m.def(("landweber_path_" + suffix).c_str(),
          [](const Array<T>& X, const Array<T>& Y, const nytro::KernelSpec& kernel, const Array<T>& X_val, const Array<T>& Y_val,
             nytro::IterativeOptions options, py::object progress) {
              options.callback = make_callback(std::move(progress));
              auto x = view(X), y = view(Y), xv = view(X_val), yv = view(Y_val);
              nytro::PathResult<T> r;
              {
                  py::gil_scoped_release release;
                  r = nytro::landweber_path<T>(x, y, kernel, xv, yv, options);
              }
              return path_dict<T>(std::move(r));
          },
          py::kw_only(), py::arg("X"), py::arg("Y"), py::arg("kernel"), py::arg("X_val"), py::arg("Y_val"),
          py::arg("options"), py::arg("progress") = py::none());

    m.def(("nkrls_path_" + suffix).c_str(),
          [](const Array<T>& X, const Array<T>& Y, const Array<T>& centers, const nytro::KernelSpec& kernel,
             const std::vector<double>& lambdas, const Array<T>& X_val, const Array<T>& Y_val,
             nytro::TikhonovOptions options, py::object progress) {
              options.callback = make_callback(std::move(progress));
              auto x = view(X), y = view(Y), c = view(centers), xv = view(X_val), yv = view(Y_val);
              nytro::TikhonovResult<T> r;
              {
                  py::gil_scoped_release release;
                  r = nytro::nkrls_path<T>(x, y, c, kernel, lambdas, xv, yv, options);
              }
              return tikhonov_dict<T>(std::move(r));
          },
          py::kw_only(), py::arg("X"), py::arg("Y"), py::arg("centers"), py::arg("kernel"), py::arg("lambdas"),
          py::arg("X_val"), py::arg("Y_val"), py::arg("options"), py::arg("progress") = py::none());

    m.def(("krls_path_" + suffix).c_str(),
          [](const Array<T>& X, const Array<T>& Y, const nytro::KernelSpec& kernel, const std::vector<double>& lambdas,
             const Array<T>& X_val, const Array<T>& Y_val, nytro::TikhonovOptions options, py::object progress) {
              options.callback = make_callback(std::move(progress));
              auto x = view(X), y = view(Y), xv = view(X_val), yv = view(Y_val);
              nytro::TikhonovResult<T> r;
              {
                  py::gil_scoped_release release;
                  r = nytro::krls_path<T>(x, y, kernel, lambdas, xv, yv, options);
              }
              return tikhonov_dict<T>(std::move(r));
          },
          py::kw_only(), py::arg("X"), py::arg("Y"), py::arg("kernel"), py::arg("lambdas"), py::arg("X_val"),
          py::arg("Y_val"), py::arg("options"), py::arg("progress") = py::none());

    m.def(("kols_" + suffix).c_str(),
          [](const Array<T>& X, const Array<T>& Y, const nytro::KernelSpec& kernel, double rcond, int n_threads,
             const std::vector<double>& sample_weights) {
              auto x = view(X), y = view(Y);
              const auto interrupt = make_callback(py::none());  // Ctrl-C only: no progress argument
              Matrix<T> coef;
              {
                  py::gil_scoped_release release;
                  coef = nytro::kols<T>(x, y, kernel, rcond, n_threads, interrupt, sample_weights);
              }
              return to_numpy<T>(std::move(coef));
          },
          py::kw_only(), py::arg("X"), py::arg("Y"), py::arg("kernel"), py::arg("rcond"), py::arg("n_threads"),
          py::arg("sample_weights") = std::vector<double>{});
}

// SciPy exports its LAPACK to Cython as PyCapsules; taking ?syevd, ?potrf, ?geqp3 and
// ?orgqr from there gives the core a fast eigensolver, Cholesky and pivoted QR without
// linking any LAPACK at build time.
void register_scipy_lapack() {
    try {
        py::dict capi = py::module_::import("scipy.linalg.cython_lapack").attr("__pyx_capi__");
        auto pointer = [&](const char* name) {
            py::object capsule = capi[name];
            return PyCapsule_GetPointer(capsule.ptr(), PyCapsule_GetName(capsule.ptr()));
        };
        nytro::set_lapack_syevd(reinterpret_cast<nytro::dsyevd_fn>(pointer("dsyevd")),
                                reinterpret_cast<nytro::ssyevd_fn>(pointer("ssyevd")));
        nytro::set_lapack_potrf(reinterpret_cast<nytro::dpotrf_fn>(pointer("dpotrf")),
                                reinterpret_cast<nytro::spotrf_fn>(pointer("spotrf")));
        nytro::set_lapack_qr(reinterpret_cast<nytro::dgeqp3_fn>(pointer("dgeqp3")),
                             reinterpret_cast<nytro::sgeqp3_fn>(pointer("sgeqp3")),
                             reinterpret_cast<nytro::dorgqr_fn>(pointer("dorgqr")),
                             reinterpret_cast<nytro::sorgqr_fn>(pointer("sorgqr")));
    } catch (const py::error_already_set&) {
        PyErr_Clear();  // no SciPy: Eigen's eigensolver, Cholesky and QR are used
    }
}

}  // namespace

PYBIND11_MODULE(_core, m) {
    m.doc() = "nytro C++ core (use the functions in nytro, which check their arguments)";
    py::register_exception<nytro::out_of_memory>(m, "OutOfMemory", PyExc_MemoryError);
    // A std::bad_alloc that no memory plan caught (pybind11 would say only "std::bad_alloc"):
    // MemoryError with the limit that binds and what takes less memory.
    py::register_exception_translator([](std::exception_ptr error) {
        try {
            if (error) std::rethrow_exception(error);
        } catch (const std::bad_alloc&) {
            const std::string text = "nytro ran out of memory (std::bad_alloc), " + nytro::memory_limit_text() +
                                     ". Fewer centres (n_centers), solver='gram' (K_nm never stored) or "
                                     "storage='float32' take less.";
            PyErr_SetString(PyExc_MemoryError, text.c_str());
        }
    });
    bind_options(m);
    // The kernel (nytro/kernel.hpp): checked in full (bandwidths against the data's
    // features) by the functions it is passed to; a float is the Gaussian's sigma.
    py::class_<nytro::KernelSpec>(m, "KernelSpec")
        .def(py::init([](const std::string& kind, double nu, const std::vector<double>& sigma) {
                 nytro::KernelSpec kernel(nytro::parse_kernel_type(kind), nu, sigma);
                 nytro::check_kernel(kernel);
                 return kernel;
             }),
             py::arg("kind"), py::arg("nu"), py::arg("sigma"))
        .def(py::init<double>(), py::arg("sigma"))
        .def_property_readonly("nu", [](const nytro::KernelSpec& k) { return k.nu; })
        .def_property_readonly("sigma", [](const nytro::KernelSpec& k) { return k.sigma; });
    py::implicitly_convertible<double, nytro::KernelSpec>();
    define<float>(m, "float32");
    define<double>(m, "float64");
    m.def(
        "sample_centers",
        [](Index n, Index m_centers, std::uint64_t seed) {
            const auto idx = nytro::sample_centers(n, m_centers, seed);
            return py::array_t<std::int64_t>(idx.size(), reinterpret_cast<const std::int64_t*>(idx.data()));
        },
        py::kw_only(), py::arg("n"), py::arg("m_centers"), py::arg("seed"));
    m.def("has_lapack", &nytro::has_lapack_syevd);
    m.def("has_lapack_qr", &nytro::has_lapack_qr);
    m.def("physical_memory_bytes", &nytro::physical_memory_bytes);
    m.def("default_threads", &nytro::default_threads);
    m.def("isa_info", [] {
        const nytro::IsaInfo info = nytro::isa_info();
        py::dict d;
        d["selected"] = info.selected;
        d["reason"] = info.reason;
        d["requested"] = info.requested;
        d["dispatch"] = info.dispatch;
        d["compiled"] = info.compiled;
        d["runnable"] = info.runnable;
        d["cpu_features"] = info.cpu_features;
        return d;
    });
    m.def("select_isa", &nytro::select_isa, py::arg("name"));
    m.def(
        "machine_rates",
        [](int n_threads, bool refresh) {
            nytro::MachineRates r;
            {
                py::gil_scoped_release release;  // a probe takes a fraction of a second
                r = nytro::machine_rates(n_threads, refresh);
            }
            py::dict d;
            d["flops"] = r.flops;
            d["flops32"] = r.flops32;
            d["bytes"] = r.bytes;
            d["fresh_bytes"] = r.fresh_bytes;
            d["threads"] = r.threads;
            d["source"] = r.source;
            d["key"] = r.key;
            return d;
        },
        py::arg("n_threads"), py::arg("refresh"));
    m.def(
        "set_machine_rates",
        [](double flops, double flops32, double bytes, double fresh_bytes) {
            nytro::MachineRates r;
            r.flops = flops;
            r.flops32 = flops32;
            r.bytes = bytes;
            r.fresh_bytes = fresh_bytes;
            nytro::set_machine_rates(r);
        },
        py::arg("flops"), py::arg("flops32"), py::arg("bytes"), py::arg("fresh_bytes"));
    register_scipy_lapack();
}
