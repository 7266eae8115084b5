"""TensorFlow 2: the custom step loop, and what it shares with ``fit`` (``taas.keras.fit``).

    run_custom_steps(step_fn, trainer, strategy, coordinator, loop, keeper)   your train_batch
    report(loop, keeper, loss, metrics)                              one finished step
    finished_steps(step, iterator, coordinator, todo)   each step's result, fetched, in order

Each finished step goes to :class:`taas.core.loop.TrainLoop` (progress lines, the NaN check, the
stop at ``max_steps``), then to the :class:`~taas.keras.checkpoints.CheckpointKeeper`
(summaries, checkpoints, SIGTERM), so a NaN loss never reaches a checkpoint.

Under ParameterServerStrategy steps are closures the coordinator schedules on the workers; the
result of one is known only when fetched. Up to ``window`` steps are kept in flight (so workers
never wait for the coordinator) and each is reported when fetched, in order: the global step a
line shows is the number of steps finished, never merely scheduled.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import tensorflow as tf

from taas.core.engine import StepResult
from taas.core.loop import TrainLoop
from taas.keras.checkpoints import CheckpointKeeper
from taas.keras.hooks import KerasHooks


def window(coordinator: Any, workers: int) -> int:
    """Steps kept in flight beyond the one being fetched (0 without a coordinator)."""
    return 0 if coordinator is None else max(4, 2 * workers)


def report(
    loop: TrainLoop,
    keeper: CheckpointKeeper,
    loss: float | None,
    metrics: Mapping[str, float] | None = None,
    hold: bool = False,
) -> bool:
    """One more finished step; False when the loop should end. ``hold``: its progress line
    waits for the epoch's end (``TrainLoop.epoch_end``)."""
    step = loop.global_step + 1
    more = loop.step(StepResult(step, loss, metrics=metrics), hold=hold)
    keeper.after_step(step, loss, metrics)
    return more


def fetch(value: Any) -> Any:
    """``value``, fetched when it is a ParameterServerStrategy RemoteValue; None when the worker
    that ran the step has gone since.

    A step whose closure finished has updated the variables on the PS, but its results stay on
    the worker until fetched, and TensorFlow fetches them from there (the coordinator retries
    closures on a lost worker, never a fetch). A worker stopped in between (SIGTERM, a node
    lost) leaves the step done and its loss unknown: the step still counts, without a loss. A
    lost PS is not hidden by this: the coordinator raises it at the next schedule."""
    if not hasattr(value, "fetch"):
        return value
    try:
        return value.fetch()
    except tf.errors.UnavailableError:
        return None


def distributed_iterator(strategy: Any, coordinator: Any, create: Callable[[Any], Any]) -> Any:
    """An iterator over the strategy's distributed dataset made by ``create(input_context)``:
    one per worker under ParameterServerStrategy (``coordinator``), else this process's."""
    if coordinator is None:
        return iter(strategy.distribute_datasets_from_function(create))

    @tf.function
    def per_worker_dataset() -> Any:
        return strategy.distribute_datasets_from_function(create)

    return iter(coordinator.create_per_worker_dataset(per_worker_dataset))


def finished_steps(
    step: Callable[[Any], Any],
    iterator: Any,
    coordinator: Any,
    todo: int,
    workers: int = 1,
    before: Callable[[int], Any] | None = None,
) -> Iterator[Any]:
    """Run ``step(iterator)`` up to ``todo`` times (``before(i)`` just before the i-th runs or
    is scheduled); yield each result, fetched, in order (None: its worker has gone, see
    :func:`fetch`). Under ParameterServerStrategy steps are scheduled up to :func:`window`
    ahead; a caller that stops early leaves those in flight (the coordinator's ``join`` waits
    for them)."""
    if coordinator is None:
        for index in range(todo):
            if before is not None:
                before(index)
            yield step(iterator)
        return
    pending: deque[Any] = deque()
    scheduled, limit = 0, window(coordinator, workers)
    while scheduled < todo or pending:
        while scheduled < todo and len(pending) <= limit:
            if before is not None:
                before(scheduled)
            pending.append(coordinator.schedule(step, args=(iterator,)))
            scheduled += 1
        yield fetch(pending.popleft())


def run_custom_steps(
    step_fn: Callable[[Any], Any],
    trainer: KerasHooks,
    strategy: Any,
    coordinator: Any,
    loop: TrainLoop,
    keeper: CheckpointKeeper,
    workers: int = 1,
) -> None:
    """Run ``step_fn`` (the trainer's ``train_batch``) under ``strategy.run`` until the loop
    ends."""

    @tf.function
    def step(iterator: Any) -> Any:
        losses = strategy.run(step_fn, args=(next(iterator),))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

    iterator = distributed_iterator(strategy, coordinator, trainer.create_dataset)
    todo = loop.max_steps - loop.global_step
    for loss in finished_steps(step, iterator, coordinator, todo, workers):
        if not report(loop, keeper, None if loss is None else float(loss)):
            return
