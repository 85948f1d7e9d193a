"""
Probabilities from one fit: a reliability diagram on breast cancer data
=======================================================================

``NytroClassifier.predict_proba`` turns the decision function into probabilities with
one temperature, fitted on the hold-out predictions that the fit already made to select
its iterate, so it costs no extra fit. scikit-learn's ``CalibratedClassifierCV`` instead
refits the classifier on every fold of its own split. This example draws both reliability
diagrams on scikit-learn's breast cancer data (569 rows, 30 features) and gives each
method's test log loss and fit time.
"""
import time

import matplotlib.pyplot as plt
from sklearn.calibration import CalibratedClassifierCV, CalibrationDisplay
from sklearn.datasets import load_breast_cancer
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from nytro import NytroClassifier

X, y = load_breast_cancer(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)


def classifier():
    return make_pipeline(StandardScaler(), NytroClassifier(n_centers=200, random_state=0, n_threads=2))


models = {
    "predict_proba (one fit)": classifier(),
    "CalibratedClassifierCV (sigmoid, 5 folds)": CalibratedClassifierCV(classifier(), method="sigmoid", cv=5),
}
fig, ax = plt.subplots(figsize=(6, 6))
for (name, model), color in zip(models.items(), ["tab:orange", "tab:blue"]):
    start = time.perf_counter()
    model.fit(X_train, y_train)
    seconds = time.perf_counter() - start
    proba = model.predict_proba(X_test)[:, 1]
    label = f"{name}: log loss {log_loss(y_test, proba):.3f}, fit {seconds:.2f} s"
    CalibrationDisplay.from_predictions(y_test, proba, n_bins=8, name=label, ax=ax, color=color)
ax.set(title="Reliability on the test rows (171 of 569)")
ax.legend(loc="lower right", fontsize="small")
plt.show()
