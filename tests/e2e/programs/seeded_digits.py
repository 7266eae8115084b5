"""examples/keras_digits with its random seeds fixed, printing the chief's final weights and
its loss on the test set ("test loss: <value>").

Run from the trainer image's working directory (it holds `examples/`); tests/e2e/
test_across_nodes.py mounts it from a ConfigMap and compares the weights of the same
MultiWorkerMirroredStrategy job with its workers on three nodes and on one.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.join(os.getcwd(), "examples", "keras_digits"))

import keras_digits


class SeededDigits(keras_digits.Digits):
    def build_model(self):
        import tf_keras as keras

        keras.utils.set_random_seed(31)
        return super().build_model()

    def after_train(self, model, is_chief):
        super().after_train(model, is_chief)
        if is_chief:
            import tf_keras as keras

            logits = model(self.data.test_images, training=False)
            entropy = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
            loss = float(entropy(self.data.test_labels, logits))
            print(f"[{self.cluster.task_name}] test loss: {loss:.4f}", flush=True)
            flat = [float(x) for w in model.weights for x in w.numpy().ravel()]
            print("final weights: " + json.dumps(flat), flush=True)


if __name__ == "__main__":
    SeededDigits.main()
