// The LAPACK backend: the few LAPACK routines the core uses when a caller registers them.
// Without them the core runs Eigen's own solvers, which give the same results more slowly:
// Eigen's LLT runs its rank updates on one thread, its dense eigensolver is several times
// slower than LAPACK's divide and conquer, and its ColPivHouseholderQR is unblocked and
// single-threaded. The Python bindings register SciPy's LAPACK at import; a C++ program can
// register any LAPACK with 32-bit integers and the Fortran calling convention.
//
// The registry is process-wide and read by every later call: set it once at start-up,
// before any fit runs, and never while one runs.
#pragma once

namespace nytro {

// LAPACK's dsyevd_/ssyevd_ (Fortran calling convention, 32-bit integers).
using dsyevd_fn = void (*)(char* jobz, char* uplo, int* n, double* a, int* lda, double* w,
                           double* work, int* lwork, int* iwork, int* liwork, int* info);
using ssyevd_fn = void (*)(char* jobz, char* uplo, int* n, float* a, int* lda, float* w,
                           float* work, int* lwork, int* iwork, int* liwork, int* info);

// Register (or, with nullptrs, unregister) the LAPACK routines. Set once at start-up:
// the registry is read by every later call and is not meant to change under them.
void set_lapack_syevd(dsyevd_fn dsyevd, ssyevd_fn ssyevd);
bool has_lapack_syevd();

// LAPACK's dpotrf_/spotrf_ (Fortran calling convention, 32-bit integers).
using dpotrf_fn = void (*)(char* uplo, int* n, double* a, int* lda, int* info);
using spotrf_fn = void (*)(char* uplo, int* n, float* a, int* lda, int* info);

// Register (or, with nullptrs, unregister) the LAPACK routines; set once at start-up.
void set_lapack_potrf(dpotrf_fn dpotrf, spotrf_fn spotrf);
bool has_lapack_potrf();

// LAPACK's ?geqp3_ and ?orgqr_ (Fortran calling convention, 32-bit integers).
using dgeqp3_fn = void (*)(int* m, int* n, double* a, int* lda, int* jpvt, double* tau, double* work, int* lwork,
                           int* info);
using sgeqp3_fn = void (*)(int* m, int* n, float* a, int* lda, int* jpvt, float* tau, float* work, int* lwork,
                           int* info);
using dorgqr_fn = void (*)(int* m, int* n, int* k, double* a, int* lda, double* tau, double* work, int* lwork,
                           int* info);
using sorgqr_fn = void (*)(int* m, int* n, int* k, float* a, int* lda, float* tau, float* work, int* lwork,
                           int* info);

// Register (or, with nullptrs, unregister) the LAPACK routines; set once at start-up,
// like the others.
void set_lapack_qr(dgeqp3_fn dgeqp3, sgeqp3_fn sgeqp3, dorgqr_fn dorgqr, sorgqr_fn sorgqr);
bool has_lapack_qr();

}  // namespace nytro
