"""Compatibility path (Caicloud ``entry``): ``from taas import entry; entry.start(MyModel)``.

Kept for programs ported from ``caicloud.clever.tensorflow``; new code calls ``MyModel.main()``.
"""

from __future__ import annotations

from typing import NoReturn

from taas.graph.trainer import DistributedTrainer
from taas.program import run


def start(user_defined_type: type) -> NoReturn:
    """Run ``user_defined_type`` (a DistributedTrainer subclass) as this program."""
    if user_defined_type is None:
        raise ValueError("user_defined_type cannot be None.")
    if not issubclass(user_defined_type, DistributedTrainer):
        raise ValueError("user_defined_type must be subclass of CaicloudDistTensorflowBase.")
    run(user_defined_type)
