"""Caicloud compatibility: ``from taas import dist_base`` for ``caicloud.clever.tensorflow``.

Old code: ``class Mnist(dist_base.CaicloudDistTensorflowBase): ...`` runs unchanged.
"""

from taas.base import CaicloudDistTensorflowBase, DistributedTrainer

__all__ = ["CaicloudDistTensorflowBase", "DistributedTrainer"]
