"""Stand-in for TF 1's ``read_data_sets`` (removed from TensorFlow): same object shape.

``read_data_sets(work_dir, one_hot=True)`` returns ``.train``, ``.validation``, ``.test`` with
``.images`` (n, 784) float32, ``.labels`` (one-hot) and ``.next_batch(n)``. It loads real MNIST
IDX/TFRecord files from ``work_dir`` when they are there, else scikit-learn's 8x8 digits scaled
up to 28x28 so the original 784-input model runs unchanged.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mnist"))
import data


@dataclass
class _Split:
    images: np.ndarray
    labels: np.ndarray
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))

    def next_batch(self, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
        index = self.rng.integers(0, len(self.images), batch_size)
        return self.images[index], self.labels[index]


@dataclass
class _DataSets:
    train: _Split
    validation: _Split
    test: _Split


def _to_28x28(images: np.ndarray) -> np.ndarray:
    side = int(np.sqrt(images.shape[1]))
    if side == 28:
        return images
    pick = np.arange(28) * side // 28  # nearest-neighbour upscale
    square = images.reshape(-1, side, side)[:, pick][:, :, pick]
    return square.reshape(-1, 784)


def read_data_sets(work_dir: str, one_hot: bool = True) -> _DataSets:
    """MNIST from ``work_dir`` (IDX/TFRecord) or the digits, in the TF 1 layout."""
    has_files = os.path.isdir(work_dir) and any(
        name.startswith(("train-images", "train.tfrecord")) for name in os.listdir(work_dir)
    )
    ds = data.load(work_dir if has_files else None)

    def labels(y: np.ndarray) -> np.ndarray:
        return np.eye(10, dtype=np.float32)[y] if one_hot else y

    train_x, train_y = _to_28x28(ds.train_images), labels(ds.train_labels)
    cut = len(train_x) * 9 // 10
    return _DataSets(
        train=_Split(train_x[:cut], train_y[:cut], np.random.default_rng()),
        validation=_Split(train_x[cut:], train_y[cut:]),
        test=_Split(_to_28x28(ds.test_images), labels(ds.test_labels)),
    )
