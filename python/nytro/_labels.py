"""A classifier's labels: their checks, their +-1 coding and the labels of decision values.

The classifiers' fit codes its labels through a backend (nytro._backends): in memory all
at once (encode_labels), on Dask chunk by chunk (nytro.dask); both check and code them
with these helpers, so that the same labels give the same errors and codes.
"""
from __future__ import annotations

import numpy as np
from sklearn.utils.multiclass import check_classification_targets


def _label_kind(value) -> str:
    """"string", "number" or "bool": labels of more than one kind are refused."""
    if isinstance(value, (str, bytes)):
        return "string"
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    return "number"


def label_kinds(y) -> set:
    """The kinds ("string", "number", "bool") of an object array's labels, which may mix
    them; empty for any other dtype (one kind)."""
    y = np.asarray(y)
    return {_label_kind(v) for v in y.ravel()} if y.dtype == object else set()


def check_label_kinds(kinds):
    if len(kinds) > 1:
        raise ValueError(f"y has labels of mixed types ({' and '.join(sorted(kinds))}); use labels of one type")


def plain_label(label):
    """A label as an error message shows it: 'a' or 0, not np.str_('a') or np.int64(0)."""
    return label.item() if isinstance(label, np.generic) else label


def check_classes(classes):
    if len(classes) < 2:
        raise ValueError(f"y has one class ({plain_label(classes[0])!r} for every sample); a classifier needs at "
                         "least 2 classes")


def check_weighted_classes(kept):
    """Refuse sample weights whose positive entries are all in one class (`kept`: the
    distinct labels of the rows of positive weight): its model would have nothing to
    separate."""
    if len(kept) == 1:
        raise ValueError(f"sample_weight is zero on every row outside class {plain_label(kept[0])!r}: a "
                         "classifier needs at least 2 classes of positive weight")


def coded_labels(index, n_classes: int, dtype=np.float64):
    """The +-1 coding of class indices (into the sorted classes): (n, 1) with +1 for class 1
    and -1 for class 0 (two classes), or (n, K) with +1 in the column of a row's class and
    -1 elsewhere (K > 2: one-vs-all)."""
    index = np.asarray(index)
    if n_classes == 2:
        return np.where(index == 1, 1.0, -1.0).astype(dtype)[:, None]
    Y = -np.ones((len(index), n_classes), dtype=dtype)
    Y[np.arange(len(index)), index] = 1.0
    return Y


def encode_labels(y):
    """(classes_, Y): the sorted distinct labels, and Y (n, 1) with +1 for classes_[1] and
    -1 for classes_[0] (two classes), or (n, K) with +1 in the column of a row's class and
    -1 elsewhere (K > 2: one-vs-all)."""
    y = np.asarray(y)
    check_label_kinds(label_kinds(y))
    check_classification_targets(y)
    classes, index = np.unique(y, return_inverse=True)
    check_classes(classes)
    return classes, coded_labels(index, len(classes))


def class_index(scores):
    """The class index of each row of decision values, as the core's ErrorTally reads
    them: a 1-D or one-column array by its sign (1 where f > 0, the positive class), more
    columns by the column of the row's largest entry (the first on a tie)."""
    scores = np.asarray(scores)
    if scores.ndim == 2 and scores.shape[1] == 1:
        scores = scores[:, 0]
    return (scores > 0).astype(int) if scores.ndim == 1 else np.argmax(scores, axis=1)


def predicted_labels(scores, classes):
    """The class of the largest decision value (two classes: classes[1] where scores > 0)."""
    return classes[class_index(scores)]
