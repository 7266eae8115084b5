"""In-process TensorFlow checks: tower gradient averaging and the MNIST file loaders.

Towers run on two logical CPU devices (``device_count={"CPU": 2}``); no GPU exists here, and the
code path is the same one a multi-GPU worker takes.
"""

from __future__ import annotations

import gzip
import importlib.util
import struct
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

MNIST = Path(__file__).resolve().parents[2] / "examples" / "mnist"

pytestmark = pytest.mark.tensorflow


def example_data() -> ModuleType:
    """examples/mnist/data.py, loaded from its file (the example is a program, not a package)."""
    spec = importlib.util.spec_from_file_location("mnist_example_data", MNIST / "data.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.timeout(60)
def test_towers_share_variables_and_average_gradients() -> None:
    import tensorflow as tf

    from taas.graph.towers import build_towers

    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        step = v1.train.get_or_create_global_step()
        scales = iter([1.0, 2.0])

        def loss_fn():  # tower 0: d/dw = 1, tower 1: d/dw = 2
            w = v1.get_variable("w", [], initializer=v1.zeros_initializer())
            return w * next(scales)

        train_op, loss = build_towers(
            loss_fn,
            v1.train.GradientDescentOptimizer(1.0),
            ["/device:CPU:0", "/device:CPU:1"],
            step,
            lambda device: device,
        )
        names = [v.op.name for v in v1.global_variables()]
        assert names.count("w") == 1, names  # shared, not one copy per tower
        config = v1.ConfigProto(device_count={"CPU": 2}, allow_soft_placement=False)
        with v1.Session(graph=graph, config=config) as session:
            session.run(v1.global_variables_initializer())
            session.run(train_op)
            (w,) = [v for v in v1.global_variables() if v.op.name == "w"]
            assert session.run(w) == pytest.approx(-1.5)  # mean of 1 and 2, lr 1
            assert session.run(step) == 1
            assert session.run(loss) == pytest.approx((-1.5 * 1 + -1.5 * 2) / 2)  # tower mean


def _idx(path: Path, array: np.ndarray) -> None:
    header = struct.pack(">HBB", 0, 8, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


def test_idx_loader_reads_mnist_files(tmp_path: Path) -> None:
    data = example_data()

    rng = np.random.default_rng(0)
    for prefix, n in (("train", 6), ("t10k", 4)):
        _idx(tmp_path / f"{prefix}-images-idx3-ubyte.gz", rng.integers(0, 256, (n, 28, 28)))
        _idx(tmp_path / f"{prefix}-labels-idx1-ubyte.gz", np.arange(n) % 10)
    ds = data.load(str(tmp_path))
    assert ds.train_images.shape == (6, 784) and ds.test_images.shape == (4, 784)
    assert ds.train_images.min() >= 0.0 and ds.train_images.max() <= 1.0
    assert list(ds.test_labels) == [0, 1, 2, 3]


@pytest.mark.timeout(60)
def test_tfrecord_loader_reads_mnist_records(tmp_path: Path) -> None:
    data = example_data()
    import tensorflow as tf

    for name, n in (("train", 3), ("test", 2)):
        with tf.io.TFRecordWriter(str(tmp_path / f"{name}.tfrecord")) as writer:
            for i in range(n):
                feature = {
                    "image_raw": tf.train.Feature(
                        bytes_list=tf.train.BytesList(value=[bytes([i]) * 784])
                    ),
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
                }
                example = tf.train.Example(features=tf.train.Features(feature=feature))
                writer.write(example.SerializeToString())
    ds = data.load(str(tmp_path))
    assert ds.train_images.shape == (3, 784) and list(ds.train_labels) == [0, 1, 2]
    assert ds.test_images[1, 0] == pytest.approx(1 / 255)


def test_digits_default_without_a_path() -> None:
    data = example_data()

    ds = data.load(None)
    assert ds.pixels == 64 and len(ds.train_labels) + len(ds.test_labels) == 1797
