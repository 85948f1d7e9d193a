"""The main theorem (Theorem 4: E R(NYTRO_t) <= c_t E R(NKRLS_{1/(gamma t)})) checked with
exact fixed-design risks over a grid of t. Same as `python -m nytro theorem1`.

    python benchmarks/theorem1.py --out results/ [--quick]
"""
from nytro.experiments.theorem1 import main

if __name__ == "__main__":
    raise SystemExit(main())
