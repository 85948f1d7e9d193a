#!/usr/bin/env bash
# A `nytro` package made of this checkout's Python sources and the Python module of one
# CMake build, for running the tests or the benchmarks against that build without
# installing it or touching python/nytro:
#
#     tools/package_tree.sh build-portable /tmp/portable
#     PYTHONPATH=/tmp/portable python -m nytro --show-config
#
# FOLDER/nytro is made afresh: a symlink to each entry of python/nytro (except a
# development build's _core module there) and one to BUILD's _core module. The build
# must have been configured with -DNYTRO_BUILD_PYTHON=ON for the same Python. Used by
# .ci/run (the native stage) and tools/sanitize.sh; benchmarks/bench_dispatch.py takes
# such folders.
set -euo pipefail

if (( $# != 2 )); then
    echo "usage: $0 BUILD_DIR FOLDER" >&2
    exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "$1" && pwd)
mkdir -p "$2"
folder=$(cd "$2" && pwd)

shopt -s nullglob
modules=("$build"/_core*.so)
shopt -u nullglob
if (( ${#modules[@]} != 1 )); then
    echo "expected one _core module in $build, found ${#modules[@]}: configure it with -DNYTRO_BUILD_PYTHON=ON" >&2
    exit 1
fi

rm -rf "$folder/nytro"
mkdir "$folder/nytro"
for entry in "$root"/python/nytro/*; do
    case $(basename "$entry") in _core*.so | __pycache__) continue ;; esac
    ln -s "$entry" "$folder/nytro/"
done
ln -s "${modules[0]}" "$folder/nytro/"
echo "$folder/nytro: python/nytro with $(basename "${modules[0]}") of $build"
