"""The paper's five estimators and two classifiers with the scikit-learn API."""
from .classifiers import NystromKRLSClassifier, NytroClassifier
from .kols import KOLSRegressor
from .landweber import LandweberRegressor
from .nytro import NytroRegressor
from .tikhonov import KRLSRegressor, NystromKRLSRegressor

__all__ = ["NytroRegressor", "NystromKRLSRegressor", "KRLSRegressor", "LandweberRegressor", "KOLSRegressor",
           "NytroClassifier", "NystromKRLSClassifier"]
