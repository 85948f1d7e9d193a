// Eigen types shared by the whole core, and the progress callback.
#pragma once

#include <Eigen/Core>

#include <functional>

namespace nytro {

using Index = Eigen::Index;

// Row-major so that NumPy's C-ordered arrays map without a copy and a block of rows
// (the unit every streamed pass works on) is contiguous.
template <class T>
using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using Vector = Eigen::Matrix<T, Eigen::Dynamic, 1>;
// Any row-major block with unit inner stride: a whole matrix or a slice of rows.
template <class T>
using MatrixCRef = Eigen::Ref<const Matrix<T>>;
template <class T>
using MatrixRef = Eigen::Ref<Matrix<T>>;

// Reported between iterations and between blocks of long passes. A callback may throw
// to abort the computation (the Python bindings do so on Ctrl-C); it is always called
// from the calling thread: between parallel regions, or inside one as its thread 0
// between its own tasks (a whole kernel matrix, the pivoted factor's panels), where the
// other threads go on without waiting for it.
struct Progress {
    const char* stage;  // "kernel", "gram", "factor", "iterate", "lambda", ...
    Index done;         // units of work finished in this stage
    Index total;        // units of work in this stage
};
using Callback = std::function<void(const Progress&)>;

}  // namespace nytro
