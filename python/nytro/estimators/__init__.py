"""The paper's five estimators with the scikit-learn API."""
from .kols import KOLSRegressor
from .landweber import LandweberRegressor
from .nytro import NytroRegressor
from .tikhonov import KRLSRegressor, NystromKRLSRegressor

__all__ = ["NytroRegressor", "NystromKRLSRegressor", "KRLSRegressor", "LandweberRegressor", "KOLSRegressor"]
