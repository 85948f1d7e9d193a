"""The datasets of the NYTRO paper, preprocessed as its authors did.

``load_dataset(name, data_dir=None, *, download=True)`` reads the original public files
(UCI text, LIBSVM svmlight; optionally .xz/.bz2/.gz compressed, or in the NYTRO data kit's
layout) from ``data_dir``, else ``$NYTRO_DATA``, else ``~/nytro_data``. Missing files are
downloaded from their public address and verified first (pinned sha256, or row and label
counts where the original's checksum is unknown). Scaling uses min/max over train and test
together, as the authors did (see docs/protocol.md, "Kernel and preprocessing"):

=================  ====================================  ===============  ==============
name               features                              target           train / test
=================  ====================================  ===============  ==============
insurance          per column to [-1, 1]                 +-1 (CARAVAN)    5822 / 4000
adult              binary 0/1 to -1/+1                   +-1              32561 / 16281
ijcnn1             as stored                             +-1              49990 / 91701
covtype            per column to [0, 1], then 2x-1       +-1 (label 2)    522910 / 58102
cpusmall           per column to [0, 1]                  raw (%usr)       6554 / 1638
yearprediction     per column to [0, 1]                  (year-1922)/89   463715 / 51630
=================  ====================================  ===============  ==============

``load_cpusmall()`` reads the copy of cpuSmall shipped with the package.
``make_yearprediction_like()`` makes a SYNTHETIC stand-in with YearPredictionMSD's shape.
"""
from ._files import ENV_VAR, ChecksumError
from ._loaders import DATASETS, Dataset, load_cpusmall, load_dataset
from ._synthetic import make_yearprediction_like

__all__ = ["load_dataset", "load_cpusmall", "make_yearprediction_like", "DATASETS", "Dataset",
           "ChecksumError", "ENV_VAR"]
