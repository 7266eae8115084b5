"""Trainer settings: one pydantic-settings model read from flags and the environment.

Precedence: command-line flags > ``TAAS_<NAME>`` env > TaaS 2.0 env names (``TF_MAX_STEPS``,
``TF_LOGDIR``, ``TF_SAVE_CHECKPOINTS_SECS``, ``TF_SAVE_SUMMARIES_STEPS``) > defaults.
Flags are ``--<name>=<value>`` or ``--<name> <value>`` (``-`` and ``_`` both accepted); flags this
model does not know are left alone for the user's own (absl) flags. A bad value raises
:class:`SettingsError` whose message names the setting and how to fix it (the runner exits 2).

This module does not import TensorFlow.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import AliasChoices, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

# Extra env names per field (besides TAAS_<FIELD>), first one wins.
LEGACY_ENV: dict[str, tuple[str, ...]] = {
    "max_steps": ("TF_MAX_STEPS",),
    "model_dir": ("TF_LOGDIR", "TF_MODEL_DIR"),
    "save_checkpoints_secs": ("TF_SAVE_CHECKPOINTS_SECS",),
    "save_checkpoints_steps": ("TF_SAVE_CHECKPOINTS_STEPS",),
    "save_summaries_steps": ("TF_SAVE_SUMMARIES_STEPS",),
    "batch_size": ("TF_BATCH_SIZE",),
    "sync": ("TF_SYNC",),
}
#: Where the chief writes checkpoints and summaries unless told (the operator's TensorBoard reads
#: the same default: taas_operator.tensorboard.objects, kept equal by a test).
DEFAULT_MODEL_DIR = "/tmp/taas-model"
# Extra flag names per field (the seeds' and Caicloud's flags).
FLAG_ALIASES: dict[str, str] = {"logdir": "model_dir", "train_dir": "model_dir"}


def _aliases(field: str) -> AliasChoices:
    return AliasChoices(*env_names(field))


def env_names(field: str) -> list[str]:
    """Environment variables a setting is read from, first one wins: ``TAAS_<NAME>``, legacy."""
    return [f"TAAS_{field.upper()}", *LEGACY_ENV.get(field, ())]


def flag_names(field: str) -> list[str]:
    """Flags a setting is read from: ``--<name>``, then its aliases (``--logdir``)."""
    return [f"--{field}", *(f"--{alias}" for alias, name in FLAG_ALIASES.items() if name == field)]


def sources(field: str) -> str:
    """Every flag and variable a setting is read from, for messages: ``--max_steps, ...``."""
    return ", ".join([*flag_names(field), *env_names(field)])


class SettingsError(ValueError):
    """A setting has a bad value; the message names it and says how to fix it."""


class TrainerSettings(BaseSettings):
    """Everything the base class needs besides the cluster (see ``taas.core.placement``)."""

    model_config = SettingsConfigDict(
        populate_by_name=True, extra="ignore", case_sensitive=False, frozen=True
    )

    max_steps: int = Field(
        1000, ge=1, description="global steps to train", validation_alias=_aliases("max_steps")
    )
    max_epochs: int | None = Field(
        None,
        ge=1,
        description="...or this many epochs of steps_per_epoch: max_steps = max_epochs x "
        "steps_per_epoch (unset)",
        validation_alias=_aliases("max_epochs"),
    )
    steps_per_epoch: int | None = Field(
        None,
        ge=1,
        description="KerasTrainer fit: steps per epoch; validation and epoch callbacks at "
        "each end (unset: one epoch of max_steps)",
        validation_alias=_aliases("steps_per_epoch"),
    )
    validation_steps: int | None = Field(
        None,
        ge=1,
        description="KerasTrainer fit: batches each validation reads from "
        "create_validation_dataset (needed with it; unset)",
        validation_alias=_aliases("validation_steps"),
    )
    model_dir: str = Field(
        DEFAULT_MODEL_DIR,
        min_length=1,
        description="checkpoints and summaries (chief writes)",
        validation_alias=_aliases("model_dir"),
    )
    checkpoint_path: str | None = Field(
        None,
        description="warm start for get_init_fn (none)",
        validation_alias=_aliases("checkpoint_path"),
    )
    save_checkpoints_secs: float | None = Field(
        60.0,
        gt=0,
        description="chief checkpoint period, 0 = off",
        validation_alias=_aliases("save_checkpoints_secs"),
    )
    save_checkpoints_steps: int | None = Field(
        None,
        ge=1,
        description="...or every N steps (wins if set; unset)",
        validation_alias=_aliases("save_checkpoints_steps"),
    )
    save_summaries_steps: int = Field(
        100,
        ge=0,
        description="chief summaries every N steps, 0 = off",
        validation_alias=_aliases("save_summaries_steps"),
    )
    sync: bool = Field(
        False,
        description="synchronous updates",
        validation_alias=_aliases("sync"),
    )
    replicas_to_aggregate: int | None = Field(
        None,
        ge=1,
        description="sync: gradients per step (workers - backup_workers)",
        validation_alias=_aliases("replicas_to_aggregate"),
    )
    backup_workers: int = Field(
        0,
        ge=0,
        description="sync only: steps need not wait for the slowest N",
        validation_alias=_aliases("backup_workers"),
    )
    batch_size: int = Field(
        100,
        ge=1,
        description="examples per step, for examples/s",
        validation_alias=_aliases("batch_size"),
    )
    learning_rate: float = Field(
        0.01,
        gt=0,
        description="the default optimizer's",
        validation_alias=_aliases("learning_rate"),
    )
    log_every_steps: int = Field(
        100,
        ge=0,
        description="progress every N local steps, 0 = off",
        validation_alias=_aliases("log_every_steps"),
    )
    log_every_secs: float = Field(
        0.0,
        ge=0,
        description="...or every N seconds, 0 = off",
        validation_alias=_aliases("log_every_secs"),
    )
    progress_port: int | None = Field(
        None,
        ge=0,
        le=65535,
        description="chief serves GET /progress on this TCP port, 0 = off (2223 in a "
        "Kubernetes pod, where the operator reads it; else off)",
        validation_alias=_aliases("progress_port"),
    )
    progress_file: str | None = Field(
        None,
        description="chief also writes its progress (JSON) to this file; taas run sets it (unset)",
        validation_alias=_aliases("progress_file"),
    )
    startup_timeout_secs: float = Field(
        300.0,
        gt=0,
        description="wait for PS, chief, new checkpoints",
        validation_alias=_aliases("startup_timeout_secs"),
    )
    log_device_placement: bool = Field(
        False,
        description="log the device of every op",
        validation_alias=_aliases("log_device_placement"),
    )
    allow_soft_placement: bool = Field(
        True,
        description="fall back to a device that exists",
        validation_alias=_aliases("allow_soft_placement"),
    )
    gpu_memory_growth: bool = Field(
        True,
        description="allocate GPU memory as needed",
        validation_alias=_aliases("gpu_memory_growth"),
    )
    gpu_memory_fraction: float | None = Field(
        None,
        gt=0,
        le=1,
        description="0 < f <= 1 of each GPU (unset)",
        validation_alias=_aliases("gpu_memory_fraction"),
    )
    visible_devices: str | None = Field(
        None,
        description='sets CUDA_VISIBLE_DEVICES, e.g. "0,1" (unset)',
        validation_alias=_aliases("visible_devices"),
    )
    num_towers: int | None = Field(
        None,
        ge=1,
        description="GPUs to use (all); CPU towers if none (unset)",
        validation_alias=_aliases("num_towers"),
    )

    @field_validator("save_checkpoints_secs", mode="before")
    @classmethod
    def _zero_is_off(cls, value: Any) -> Any:
        """``0`` (or empty) turns time-based checkpoints off."""
        if value in (0, "0", "", "0.0", None):
            return None
        return value

    @field_validator("visible_devices")
    @classmethod
    def _device_list(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return value
        parts = [p.strip() for p in value.split(",")]
        if not all(p.isdigit() for p in parts):
            raise ValueError("must be a comma-separated list of GPU indices, e.g. '0,1'")
        return ",".join(parts)

    @model_validator(mode="after")
    def _epochs_set_max_steps(self) -> TrainerSettings:
        if self.max_epochs is None:
            return self
        if self.steps_per_epoch is None:
            raise ValueError(
                "max_epochs needs steps_per_epoch (the dataset repeats, so an epoch has no end of "
                "its own): set TAAS_STEPS_PER_EPOCH or --steps_per_epoch, or give max_steps "
                "instead of max_epochs"
            )
        total = self.max_epochs * self.steps_per_epoch
        if "max_steps" in self.model_fields_set and self.max_steps != total:
            raise ValueError(
                f"max_steps {self.max_steps} and max_epochs {self.max_epochs} x steps_per_epoch "
                f"{self.steps_per_epoch} = {total} disagree: give one of max_steps and max_epochs"
            )
        object.__setattr__(self, "max_steps", total)  # frozen: set once, while validating
        return self

    @model_validator(mode="after")
    def _backup_needs_sync(self) -> TrainerSettings:
        if self.backup_workers and not self.sync:
            raise ValueError("backup_workers needs sync mode: set TAAS_SYNC=true or --sync")
        return self


_FIELDS = set(TrainerSettings.model_fields)


def refuse_fit_only(settings: TrainerSettings, where: str) -> None:
    """Raise :class:`SettingsError` when a setting only Keras ``fit`` reads is set for a loop
    that is not ``fit`` (``where`` names it): ``validation_steps``, ``steps_per_epoch`` without
    ``max_epochs`` (with it, it only sets ``max_steps``)."""
    names = [name for name in ("validation_steps",) if getattr(settings, name) is not None]
    if settings.steps_per_epoch is not None and settings.max_epochs is None:
        names.append("steps_per_epoch")
    if names:
        raise SettingsError(
            f"{', '.join(names)} mean(s) something only to KerasTrainer's fit, not to {where}: "
            f"unset {' and '.join(sources(name) for name in names)}"
        )


def parse_flags(argv: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """Split ``argv`` (without the program name) into our flags and the rest.

    A bare ``--sync`` means ``true``; ``--nosync`` means ``false`` (absl style).
    """
    ours: dict[str, str] = {}
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if not arg.startswith("--") or arg == "--":
            rest.append(arg)
            continue
        key, eq, value = arg[2:].partition("=")
        key = key.replace("-", "_")
        negated = key.startswith("no") and key[2:] in _FIELDS and _is_bool(key[2:])
        name = FLAG_ALIASES.get(key, key[2:] if negated else key)
        if name not in _FIELDS:
            rest.append(arg)
            continue
        if negated:
            ours[name] = "false"
        elif eq:
            ours[name] = value
        elif _is_bool(name) and (i >= len(argv) or argv[i].startswith("--")):
            ours[name] = "true"
        elif i < len(argv):
            ours[name] = argv[i]
            i += 1
        else:
            raise SettingsError(f"flag --{key} needs a value, e.g. --{key}=VALUE")
    return ours, rest


def _is_bool(name: str) -> bool:
    return TrainerSettings.model_fields[name].annotation is bool


def load_settings(argv: Sequence[str] = ()) -> tuple[TrainerSettings, list[str]]:
    """Read settings from ``argv`` flags and the environment; return them and unused args."""
    flags, rest = parse_flags(argv)
    try:
        return TrainerSettings(**flags), rest  # type: ignore[arg-type]
    except ValidationError as exc:
        raise SettingsError(_describe(exc, flags)) from None


def _describe(exc: ValidationError, flags: dict[str, str]) -> str:
    lines = ["invalid trainer settings:"]
    for err in exc.errors():
        loc = [str(p) for p in err["loc"]]
        field = _field_of(loc[0]) if loc else ""
        if field:
            source = f"--{field}" if field in flags else " / ".join(env_names(field))
            lines.append(
                f"  setting '{field}' ({source}): {err['msg']} (got {err.get('input')!r}); "
                f"fix the value or unset it to use the default"
            )
        else:
            lines.append(f"  {err['msg']}")
    return "\n".join(lines)


def _field_of(loc: str) -> str:
    if loc in _FIELDS:
        return loc
    upper = loc.upper()
    for field in _FIELDS:
        if upper in env_names(field):
            return field
    return ""
