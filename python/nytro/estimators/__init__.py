"""The paper's five estimators, two classifiers on their +-1 codes and the logistic one, with the
scikit-learn API."""
from .classifiers import NystromKRLSClassifier, NytroClassifier
from .kols import KOLSRegressor
from .landweber import LandweberRegressor
from .logistic import NytroLogisticClassifier
from .nytro import NytroRegressor
from .tikhonov import KRLSRegressor, NystromKRLSRegressor

__all__ = ["NytroRegressor", "NystromKRLSRegressor", "KRLSRegressor", "LandweberRegressor", "KOLSRegressor",
           "NytroClassifier", "NystromKRLSClassifier", "NytroLogisticClassifier"]
