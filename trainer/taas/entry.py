"""Caicloud compatibility: ``from taas import entry; entry.start(MyModel)`` (old ``entry``)."""

from __future__ import annotations

from typing import NoReturn

from taas.base import DistributedTrainer


def start(user_defined_type: type) -> NoReturn:
    """Run ``user_defined_type`` (a DistributedTrainer subclass) as this program."""
    if user_defined_type is None:
        raise ValueError("user_defined_type cannot be None.")
    if not issubclass(user_defined_type, DistributedTrainer):
        raise ValueError("user_defined_type must be subclass of CaicloudDistTensorflowBase.")
    from taas.program import run

    run(user_defined_type)
