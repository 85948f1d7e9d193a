"""Figure 1 of the paper: which method (KRLS, Early Stopping, NKRLS, NYTRO) reaches KRLS's
accuracy at lambda* fastest, over (SNR, d~). Same as `python -m nytro figure1`.

    python benchmarks/figure1_regimes.py --out results/ [--quick] [--n 1e4 1e6 1e9]
"""
from nytro.experiments.figure1 import main

if __name__ == "__main__":
    raise SystemExit(main())
