"""
The logistic loss, early stopped: the hold-out log-loss path on digits
======================================================================

``NytroLogisticClassifier`` fits the multinomial logistic loss on NYTRO's Nystrom
features without any penalty: its iterations start from the zero model (every class
equally likely), and the iteration count is the regulariser. The fit records the
hold-out log loss and error of every iterate and keeps the one with the smallest
hold-out log loss; its probabilities are the softmax of the model itself, with no
calibration step. This example draws that path on scikit-learn's digits (1797 images of
8 x 8 pixels, ten classes), the training risk beside it, and the most probable classes
of a few test images.
"""
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from nytro import NytroLogisticClassifier

X, y = load_digits(return_X_y=True)
images = X.reshape(-1, 8, 8)
X = StandardScaler().fit_transform(X)
train, test = train_test_split(np.arange(len(y)), test_size=0.3, stratify=y, random_state=0)
model = NytroLogisticClassifier(n_centers=300, sigma=np.sqrt(X.shape[1]), random_state=0, n_threads=2)
model.fit(X[train], y[train])
proba = model.predict_proba(X[test])
print(f"selected t = {model.n_iter_} of {len(model.train_loss_)} iterations; test log loss "
      f"{log_loss(y[test], proba):.3f}, test error {np.mean(model.predict(X[test]) != y[test]):.3f}")

fig, (path, risk) = plt.subplots(1, 2, figsize=(10, 4))
t = np.arange(1, len(model.train_loss_) + 1)
path.plot(t, model.validation_log_loss_, label="hold-out log loss")
path.plot(t, model.validation_error_, label="hold-out error")
path.axvline(model.n_iter_, color="gray", ls="--", label=f"selected t = {model.n_iter_}")
path.set(xlabel="iteration t", yscale="log", title="The path, selected on the hold-out rows")
path.legend()
risk.plot(t, model.train_loss_, color="tab:green")
risk.set(xlabel="iteration t", ylabel="training risk", yscale="log",
         title="The unregularised risk keeps falling")

fig2, axes = plt.subplots(2, 6, figsize=(10, 4))
for k, (image_ax, bar_ax) in enumerate(zip(axes[0], axes[1])):
    image_ax.imshow(images[test[k]], cmap="gray_r")
    image_ax.set(xticks=[], yticks=[], title=f"label {y[test[k]]}")
    bar_ax.bar(model.classes_, proba[k], color="tab:blue")
    bar_ax.set(ylim=(0, 1), xticks=model.classes_[::3])
axes[1, 0].set_ylabel("predict_proba")
fig2.suptitle("Probabilities of a few test images")
plt.show()
