"""The `taas operator` flags, built from OperatorSettings, and how they become settings
(light: no kopf import).

    add_arguments(parser) -> parser        # the flags, for `taas operator` and `python -m`
    settings_from_args(args) -> OperatorSettings     # raises UsageError naming flag and env var
    UsageError(ValueError)

One flag per field of `taas_operator.settings.OperatorSettings`, written from the field: its
`flag` extra (name, metavar, short form), its type (a list: a repeatable flag; a bool: a switch,
`--no-...` for one that defaults to true; an int: a number), its description and its default,
so help text never repeats a default by hand. Flags override the environment
(`TAAS_NAMESPACES='["a","b"]'`, `TAAS_CLUSTER_DOMAIN=...`), which overrides the defaults.
`--kubeconfig` is not a setting: it only says where the credentials are.
"""

from __future__ import annotations

import argparse
import typing
from typing import Any

from pydantic import ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import SettingsError

from taas_operator.settings import OperatorSettings


class UsageError(ValueError):
    """A flag or TAAS_* variable has a bad value; the message names both and the fix."""


def _cli(field: FieldInfo) -> dict[str, Any]:
    """The field's `flag` extra (`taas_operator.settings._flag`)."""
    extra = field.json_schema_extra
    assert isinstance(extra, dict) and "flag" in extra, "every setting needs a _flag(...) extra"
    return extra


def _is_list(field: FieldInfo) -> bool:
    return typing.get_origin(field.annotation) is list


def _help(name: str, field: FieldInfo) -> str:
    """The description, then the default and the variable, all from the model."""
    text = (field.description or "").replace("%", "%%")
    value = field.get_default(call_default_factory=True)
    if field.annotation is bool:
        text = f"Turn {'off' if value else 'on'}: {text[:1].lower()}{text[1:]}"
        default = "on" if value else "off"
    else:
        default = "none" if value in ("", []) else str(value)
    repeat = " Repeatable." if _is_list(field) else ""
    return f"{text}{repeat} Default: {default}; env TAAS_{name.upper()}."


def flag_names() -> dict[str, str]:
    """Setting name -> its flags as help shows them, e.g. '--namespace / --all-namespaces'."""
    names = {}
    for name, field in OperatorSettings.model_fields.items():
        cli = _cli(field)
        names[name] = " / ".join([cli["flag"], *cli["every"][:1]])
    return names


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the operator's flags to `parser` (defaults come from env / OperatorSettings)."""
    for name, field in OperatorSettings.model_fields.items():
        cli = _cli(field)
        flags = [cli["flag"], *([cli["short"]] if cli["short"] else [])]
        options: dict[str, Any] = {"dest": name, "help": _help(name, field)}
        if field.annotation is bool:
            # A switch that turns the setting away from its default; absent: the env or the
            # default.
            on = field.default is True
            options.update(action="store_false" if on else "store_true", default=None)
        else:
            options["metavar"] = cli["metavar"] or None
            if _is_list(field):
                options["action"] = "append"
            elif field.annotation is int:
                options["type"] = int
        group: Any = parser.add_mutually_exclusive_group() if cli["every"] else parser
        group.add_argument(*flags, **options)
        if cli["every"]:
            group.add_argument(
                *cli["every"],
                dest=f"every_{name}",
                action="store_true",
                help=f"Set {name} to all (an empty list), whatever TAAS_{name.upper()} says.",
            )
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="kubeconfig file (default: in-cluster service account, else $KUBECONFIG)",
    )
    return parser


def settings_from_args(args: argparse.Namespace) -> OperatorSettings:
    """OperatorSettings from the flags given, the TAAS_* environment and the defaults."""
    overrides: dict[str, Any] = {}
    for name in OperatorSettings.model_fields:
        value = getattr(args, name, None)
        if value is not None:
            overrides[name] = value
        if getattr(args, f"every_{name}", False):
            overrides[name] = []
    if isinstance(overrides.get("log_level"), str):
        overrides["log_level"] = overrides["log_level"].upper()
    try:
        return OperatorSettings(**overrides)
    except ValidationError as err:
        flags = flag_names()
        problems = []
        for error in err.errors():
            field = str(error["loc"][0]) if error["loc"] else "?"
            where = f"{flags.get(field, '--' + field)} or TAAS_{field.upper()}"
            problems.append(f"{field} ({where}): {error['msg']} (got {error.get('input')!r})")
        raise UsageError("invalid operator setting: " + "; ".join(problems)) from None
    except SettingsError as err:
        raise UsageError(
            f"invalid TAAS_* environment variable: {err}; list settings such as "
            f'TAAS_NAMESPACES take JSON, e.g. \'["team-a","team-b"]\''
        ) from None
