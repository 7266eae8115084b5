"""Compatibility path (Caicloud ``dist_base``): ``from taas import dist_base``.

Kept for programs ported from ``caicloud.clever.tensorflow``: ``class Mnist(
dist_base.CaicloudDistTensorflowBase): ...`` runs unchanged. The class lives in
``taas.graph.trainer``; new code writes ``taas.DistributedTrainer``.
"""

from taas.graph.trainer import CaicloudDistTensorflowBase, DistributedTrainer

__all__ = ["CaicloudDistTensorflowBase", "DistributedTrainer"]
