#!/usr/bin/env bash
# The engineering measurements for a CPU not yet measured (benchmarks/README.md, "A CPU
# not yet measured"), in one run: the native and the portable build, the variant cpuid
# chooses, and the dispatch, kernel and solver-choice benchmarks, into one folder named
# for the CPU. About 40 minutes on 2 cores; run it with nothing else on the machine.
#
#     NYTRO_DATA=../shared/data tools/measure_cpu.sh /tmp/cpu           # full run
#     NYTRO_DATA=../shared/data tools/measure_cpu.sh --quick /tmp/cpu   # smoke run, minutes
#
# Run from an environment with the build tools and nytro's test dependencies (cmake,
# ninja, pybind11, cmeel-eigen, numpy, scipy, scikit-learn). OUT/<cpu>/ receives
# machine.txt, show_config.txt and one folder per benchmark; OUT/builds the two builds.
# The README's two commands and the C++ quick start, on a clean clone, stay checks by hand.
set -euo pipefail

quick=0
if [[ ${1:-} == --quick ]]; then quick=1; shift; fi
if (( $# != 1 )); then
    echo "usage: $0 [--quick] OUT" >&2
    exit 2
fi
[[ -n ${NYTRO_DATA:-} ]] || { echo "NYTRO_DATA must name the paper's datasets (bench_dispatch reads them)" >&2; exit 2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
python=$(command -v python)
threads=$(nproc)

# The CPU's name for the folders: the vendor's family and the widest vector ISA it has.
flags=$(grep -m1 '^flags' /proc/cpuinfo)
isa=baseline
[[ $flags == *" avx2 "* && $flags == *" fma "* ]] && isa=avx2
[[ $flags == *" avx512f "* ]] && isa=avx512
vendor=$(grep -m1 '^vendor_id' /proc/cpuinfo | awk '{print $3}')
family=$(grep -m1 '^cpu family' /proc/cpuinfo | awk '{print $4}')
case $vendor in
    AuthenticAMD) cpu=amd_family${family}_$isa ;;
    GenuineIntel) cpu=intel_family${family}_$isa ;;
    *) cpu=${vendor,,}_$isa ;;
esac
results=$out/$cpu
mkdir -p "$results"
echo "measuring $cpu into $results ($threads threads)"

{
    echo "date: $(date -u +%FT%TZ)"
    echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"
    grep -m1 'model name' /proc/cpuinfo
    echo "cpu family: $family, vendor: $vendor, widest ISA: $isa, cores: $threads"
    echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
    limits=$root/../shared/tools/limits.py
    if [[ -f $limits ]]; then "$python" "$limits" || true; fi
} | tee "$results/machine.txt"

mkdir -p "$out/builds"
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
for arch in native portable; do
    build=$out/builds/$arch
    echo "--- building $arch in $build"
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNYTRO_BUILD_PYTHON=ON \
        -DNYTRO_ARCH="$arch" -DPython_EXECUTABLE="$python" "${launcher[@]}" > "$build.configure.log"
    cmake --build "$build" --parallel "$threads" > "$build.build.log"
    "$root/tools/package_tree.sh" "$build" "$out/package-$arch"
done

PYTHONPATH=$out/package-portable "$python" -m nytro --show-config | tee "$results/show_config.txt"

cd "$root"
if (( quick )); then
    dispatch=(--datasets insurance --rounds 1)
    kernels=(--quick)
    auto=(--quick)
else
    dispatch=(--rounds 5)
    kernels=()
    auto=(--n 10000,30000,100000 --m 300,1000,2000 --methods gd,cg,hybrid)
fi
echo "--- bench_dispatch: portable within 10% of native"
"$python" benchmarks/bench_dispatch.py "${dispatch[@]}" --threads "$threads" \
    --config native="$out/package-native" --config portable="$out/package-portable" \
    --out "$results/bench_dispatch" | tee "$results/bench_dispatch.log"
echo "--- bench_kernels: fractions of the machine's dgemm and bandwidth"
PYTHONPATH=$out/package-native "$python" benchmarks/bench_kernels.py "${kernels[@]}" \
    --out "$results/bench_kernels"
for arch in native portable; do
    echo "--- bench_auto ($arch): auto within 10% of the fastest solver"
    PYTHONPATH=$out/package-$arch "$python" benchmarks/bench_auto.py "${auto[@]}" \
        --threads "$threads" --out "$results/auto_$arch"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$results/machine.txt"
echo "done: $results (each result goes to its claim's folder in benchmarks/results, named for $cpu)"
