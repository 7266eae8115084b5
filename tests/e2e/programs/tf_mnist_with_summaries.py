"""Stand-in for Katib's tf-mnist-with-summaries image program, which Kubeflow's TFJob guide runs.

That image (docker.io/kubeflowkatib/tf-mnist-with-summaries) cannot be pulled here and its
program downloads MNIST; this one keeps its command line (`--epochs`, `--log-path`,
`--batch-size`, `--learning-rate`) and its shape: a small Keras classifier trained per worker
on scikit-learn's 8x8 digits (shipped, no download), its per-epoch metrics written under
`--log-path` (as CSV: the trainer image has no TensorBoard, which tf.summary needs). It is
copied into the trainer image at the path the guide's TFJob names, so that TFJob runs unchanged
but for the image.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np
import tensorflow as tf
from sklearn.datasets import load_digits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--log-path", default="/tmp/tf-mnist-with-summaries/logs")
    args = parser.parse_args()
    task = json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {})
    print(f"task {task.get('type')}:{task.get('index')}", flush=True)
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    split = int(len(x) * 0.8)
    model = tf.keras.Sequential(
        [tf.keras.Input(shape=(64,)), tf.keras.layers.Dense(64, activation="relu"),
         tf.keras.layers.Dense(10)]
    )  # fmt: skip
    model.compile(
        optimizer=tf.keras.optimizers.SGD(args.learning_rate * 10),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    os.makedirs(args.log_path, exist_ok=True)
    summaries = tf.keras.callbacks.CSVLogger(os.path.join(args.log_path, "metrics.csv"))
    model.fit(
        x[:split], y[:split], epochs=args.epochs, batch_size=args.batch_size,
        callbacks=[summaries], verbose=2,
    )  # fmt: skip
    _, accuracy = model.evaluate(x[split:], y[split:], verbose=0)
    print(f"accuracy={accuracy:.4f}", flush=True)


if __name__ == "__main__":
    main()
