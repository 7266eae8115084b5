"""MNIST data: real IDX or TFRecord files from a path, else scikit-learn's digits.

- IDX (the files from yann.lecun.com): ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
  ``t10k-images-idx3-ubyte``, ``t10k-labels-idx1-ubyte``, each optionally ``.gz``.
- TFRecord: ``train.tfrecord`` and ``test.tfrecord`` with features ``image_raw`` (bytes, 784
  uint8) and ``label`` (int64), the layout of TensorFlow's ``convert_to_records.py``.
- No path: ``sklearn.datasets.load_digits`` (8x8 images, 1797 samples, shipped with the
  package, nothing to download), split 80/20 with a fixed seed.

Images come back as float32 in [0, 1], flattened; labels as int64 class ids.
"""

from __future__ import annotations

import gzip
import os
import struct
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DataSet:
    """Train and test arrays: images (n, pixels) float32, labels (n,) int64."""

    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray

    @property
    def pixels(self) -> int:
        return int(self.train_images.shape[1])


def load(path: str | None) -> DataSet:
    """Load from ``path`` (a directory of IDX or TFRecord files) or the digits default."""
    if not path:
        return load_digits()
    if os.path.exists(os.path.join(path, "train.tfrecord")):
        return load_tfrecords(path)
    return load_idx(path)


def load_digits(seed: int = 0) -> DataSet:
    """scikit-learn's 8x8 digits, split 80/20."""
    from sklearn.datasets import load_digits as sk_digits

    digits = sk_digits()
    images = (digits.data / 16.0).astype(np.float32)
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(labels))
    cut = int(len(order) * 0.8)
    train, test = order[:cut], order[cut:]
    return DataSet(images[train], labels[train], images[test], labels[test])


def read_idx(filename: str) -> np.ndarray:
    """Read one IDX file (optionally gzipped) into an array of its declared shape."""
    opener = gzip.open if filename.endswith(".gz") else open
    with opener(filename, "rb") as f:
        data = f.read()
    zero, dtype_code, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype_code != 0x08:
        raise ValueError(f"{filename}: not an unsigned-byte IDX file")
    shape = struct.unpack(f">{ndim}I", data[4 : 4 + 4 * ndim])
    body = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    if body.size != int(np.prod(shape)):
        raise ValueError(f"{filename}: expected {shape} values, found {body.size}")
    return body.reshape(shape)


def _find(path: str, stem: str) -> str:
    for name in (stem, stem + ".gz"):
        full = os.path.join(path, name)
        if os.path.exists(full):
            return full
    raise FileNotFoundError(f"{path}: neither {stem} nor {stem}.gz found")


def load_idx(path: str) -> DataSet:
    """The four MNIST IDX files in ``path``."""

    def images(stem: str) -> np.ndarray:
        raw = read_idx(_find(path, stem))
        return (raw.reshape(len(raw), -1) / 255.0).astype(np.float32)

    def labels(stem: str) -> np.ndarray:
        return read_idx(_find(path, stem)).astype(np.int64)

    return DataSet(
        images("train-images-idx3-ubyte"),
        labels("train-labels-idx1-ubyte"),
        images("t10k-images-idx3-ubyte"),
        labels("t10k-labels-idx1-ubyte"),
    )


def load_tfrecords(path: str) -> DataSet:
    """``train.tfrecord`` / ``test.tfrecord`` in ``path`` (read eagerly, before the graph)."""
    import tensorflow as tf

    def read(name: str) -> tuple[np.ndarray, np.ndarray]:
        images, labels = [], []
        for record in tf.compat.v1.io.tf_record_iterator(os.path.join(path, name)):
            example = tf.train.Example.FromString(record)
            feature = example.features.feature
            images.append(np.frombuffer(feature["image_raw"].bytes_list.value[0], np.uint8))
            labels.append(feature["label"].int64_list.value[0])
        return (np.stack(images) / 255.0).astype(np.float32), np.array(labels, np.int64)

    train_x, train_y = read("train.tfrecord")
    test_x, test_y = read("test.tfrecord")
    return DataSet(train_x, train_y, test_x, test_y)
