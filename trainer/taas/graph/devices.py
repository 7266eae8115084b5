"""Graph mode: session configuration and tower devices from the device settings.

    session_config(settings, cluster)    placement logging, soft placement, GPU memory, filters
    tower_devices(settings, cluster)     the local devices ``loss_fn`` towers are built on

(``visible_devices`` is applied earlier, by ``taas.core.launch``, before TensorFlow starts.)
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from taas.core.placement import ClusterInfo
from taas.core.settings import TrainerSettings


def session_config(settings: TrainerSettings, cluster: ClusterInfo) -> Any:
    """A ``tf.compat.v1.ConfigProto`` for this task's sessions.

    ``device_filters`` keep a task from waiting for peers it never talks to: a trainer sees the
    PS tasks and itself, a PS sees itself.
    """
    config = tf.compat.v1.ConfigProto(
        allow_soft_placement=settings.allow_soft_placement,
        log_device_placement=settings.log_device_placement,
    )
    config.gpu_options.allow_growth = settings.gpu_memory_growth
    if settings.gpu_memory_fraction is not None:
        config.gpu_options.per_process_gpu_memory_fraction = settings.gpu_memory_fraction
    if settings.num_towers and not tf.config.list_physical_devices("GPU"):
        config.device_count["CPU"] = settings.num_towers
    if cluster.distributed:
        config.device_filters.append(cluster.device)
        if cluster.task_type != "ps":
            config.device_filters.append("/job:ps")
    return config


def tower_devices(settings: TrainerSettings, cluster: ClusterInfo) -> list[str]:
    """Local devices to build towers on: every visible GPU, else one CPU tower.

    ``num_towers`` caps the GPU count; without GPUs it makes that many CPU towers (for tests
    and to check a multi-GPU model on a laptop).
    """
    gpus = len(tf.config.list_physical_devices("GPU"))
    prefix = cluster.device
    if gpus:
        count = min(gpus, settings.num_towers or gpus)
        return [f"{prefix}/device:GPU:{i}" for i in range(count)]
    return [f"{prefix}/device:CPU:{i}" for i in range(settings.num_towers or 1)]
