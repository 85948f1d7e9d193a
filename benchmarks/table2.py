"""Table 2 of the paper: time, test RMSE and selected parameter of KOLS, KRLS, Early
Stopping, NKRLS and NYTRO on InsuranceCompany, Adult, Ijcnn, CovertypeBinary and a
SYNTHETIC YearPrediction stand-in, with nytro.reference and scikit-learn peers on the same
splits and centres. Same as `python -m nytro table2`.

    NYTRO_DATA=/path/to/data python benchmarks/table2.py --datasets insurance,adult --reps 5 \
        --out benchmarks/results/table2 [--quick] [--threads N] [--methods ...] [--no-peers]
"""
from nytro.experiments.table2 import main

if __name__ == "__main__":
    raise SystemExit(main())
