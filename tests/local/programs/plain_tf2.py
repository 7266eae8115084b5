"""A plain TensorFlow 2 program, no TaaS import: it reads TF_CONFIG itself (through
``tf.distribute.MultiWorkerMirroredStrategy``'s default cluster resolver) and trains
``y = 2x + 1`` with a custom GradientTape loop on Keras 3 layers. Worker 0 prints
``learned w=<w> b=<b> taas imported: <bool>``.

For the fault tests: with ``PLAIN_FIRST_RUN_DIR`` set, a worker's first run (no marker of its
own in that directory yet) trains until it is killed, printing ``training`` once; a later run
trains the usual 200 steps.
"""

import json
import os
import sys
import time

import numpy as np
import tensorflow as tf

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
strategy = tf.distribute.MultiWorkerMirroredStrategy()
task = json.loads(os.environ["TF_CONFIG"])["task"]
GLOBAL_BATCH = 64

with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Input((1,)), tf.keras.layers.Dense(1)])
    optimizer = tf.keras.optimizers.SGD(0.1)


def dataset_fn(context):
    rng = np.random.default_rng(context.input_pipeline_id)
    xs = rng.uniform(-1, 1, (2048, 1)).astype(np.float32)
    batch = context.get_per_replica_batch_size(GLOBAL_BATCH)
    return tf.data.Dataset.from_tensor_slices((xs, 2 * xs + 1)).repeat().batch(batch)


@tf.function
def step(iterator):
    def replica_step(batch):
        xs, ys = batch
        with tf.GradientTape() as tape:
            per_example = tf.reshape(tf.square(model(xs, training=True) - ys), [-1])
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    losses = strategy.run(replica_step, args=(next(iterator),))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)


iterator = iter(strategy.distribute_datasets_from_function(dataset_fn))
steps = 200
first_runs = os.environ.get("PLAIN_FIRST_RUN_DIR")
if first_runs:
    marker = os.path.join(first_runs, f"worker-{task['index']}")
    if not os.path.exists(marker):
        open(marker, "w").close()
        steps = 10**9
for done in range(steps):
    loss = step(iterator)
    if done == 10:
        print(f"worker {task['index']} training", flush=True)
# A last all-reduce so no worker leaves while another still needs it.
strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(lambda: tf.constant(1.0)), axis=None)
if task["index"] == 0:
    kernel, bias = model.layers[-1].get_weights()
    print(
        f"learned w={kernel[0][0]:.3f} b={bias[0]:.3f} taas imported: {'taas' in sys.modules}",
        flush=True,
    )
    time.sleep(2)  # worker 0 hosts the coordination service: let the others finish first
