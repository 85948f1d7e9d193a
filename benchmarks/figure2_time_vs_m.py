"""Figure 2 of the paper: NYTRO and NKRLS training + model-selection time against the
number of centres m (100..4000) on cpuSmall, with fitted growth exponents. Same as
`python -m nytro figure2`.

    python benchmarks/figure2_time_vs_m.py --out benchmarks/results/figure2 [--quick] [--reps N] [--m-max M] \
        [--threads N]
"""
from nytro.experiments.figure2 import main

if __name__ == "__main__":
    raise SystemExit(main())
