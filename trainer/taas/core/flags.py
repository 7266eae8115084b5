"""The command line past the settings: ``--help``, the program's absl flags, typo detection.

Also the environment: a ``TAAS_*`` variable that is not a setting's but a near miss of one
(``TAAS_MAX_STEP``) is refused like a misspelt flag (:func:`check_taas_env`); any other unknown
``TAAS_*`` variable only gets a note.

After :func:`taas.core.settings.load_settings` and the cluster flags took theirs, the rest goes to
the absl flags the program defined itself (``tf.compat.v1.app.flags.DEFINE_*`` at import, as the
Caicloud and TaaS 2.0 programs do). A flag left over after that is either a typo or a flag for
a parser TaaS cannot see (the program's own ``argparse`` reading ``sys.argv``). TaaS cannot tell
those apart in general, so it rejects only a *near miss* of a flag it knows (a TaaS setting, a
cluster flag, an absl flag; one edit away or very similar, e.g. ``--max_step``, ``--sycn``): a
:class:`~taas.core.settings.SettingsError` naming it and the close matches (exit 2). Any other
unknown flag is left alone with a one-line note. Arguments after ``--`` are never looked at.
A program whose own parser needs a flag that close to a TaaS name passes TaaS only its part:
``MyTrainer.main(argv=[...])``.

Nothing here imports TensorFlow; absl is imported only when the program uses it.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterable, Mapping, Sequence

from taas.core.placement import CLUSTER_FLAGS
from taas.core.settings import FLAG_ALIASES, SettingsError, TrainerSettings, env_names, parse_flags

HELP_FLAGS = ("--help", "-h", "-help", "--helpfull", "--helpshort")
_SIMILARITY = 0.85  # difflib ratio at or above which an unknown flag is a near miss
_THIRD_PARTY = ("absl", "tensorflow", "keras", "tf_keras")


def before_separator(args: Sequence[str]) -> list[str]:
    """``args`` up to (without) the first ``--``."""
    args = list(args)
    return args[: args.index("--")] if "--" in args else args


def wants_help(args: Sequence[str]) -> bool:
    """True when ``--help`` (or ``-h``) is on the command line before ``--``."""
    return any(arg in HELP_FLAGS for arg in before_separator(args))


def taas_flag_names() -> set[str]:
    """Every flag name TaaS reads: settings (and ``no<bool>``), aliases, cluster flags."""
    names = set(TrainerSettings.model_fields) | set(FLAG_ALIASES) | set(CLUSTER_FLAGS)
    names |= {
        f"no{name}" for name, f in TrainerSettings.model_fields.items() if f.annotation is bool
    }
    return names


def close_matches(name: str, known: Iterable[str]) -> list[str]:
    """Known flag names ``name`` is a near miss of (best first; empty when none)."""
    name = name.lower()
    scored = []
    for candidate in set(known):
        ratio = difflib.SequenceMatcher(None, name, candidate).ratio()
        if ratio >= _SIMILARITY or _one_edit(name, candidate):
            scored.append((-ratio, candidate))
    return [candidate for _, candidate in sorted(scored)[:3]]


def _one_edit(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` differ by at most one insert, delete, change or swap."""
    if abs(len(a) - len(b)) > 1 or min(len(a), len(b)) < 3:
        return a == b
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        if len(diff) <= 1:
            return True
        i, j = diff[0], diff[-1]
        return len(diff) == 2 and j == i + 1 and a[i] == b[j] and a[j] == b[i]
    short, long = sorted((a, b), key=len)
    i = next((k for k in range(len(short)) if short[k] != long[k]), len(short))
    return short[i:] == long[i + 1 :]


def flag_name(arg: str) -> str | None:
    """``max_steps`` for ``--max-steps=3``; None for a value (``x``, ``-1``, ``-``)."""
    if not arg.startswith("-") or arg in ("-", "--"):
        return None
    name = arg.lstrip("-").partition("=")[0].replace("-", "_")
    try:
        float(name)
        return None
    except ValueError:
        return name or None


def check_leftovers(leftovers: Sequence[str], known: Iterable[str]) -> list[str]:
    """Raise :class:`SettingsError` for near misses of ``known``; return the other flags."""
    known = set(known)
    errors: list[str] = []
    others: list[str] = []
    for arg in before_separator(leftovers):
        name = flag_name(arg)
        if name is None:
            continue
        matches = close_matches(name, known)
        if matches:
            hint = " or ".join(f"--{m}" for m in matches)
            errors.append(f"unknown flag {arg.partition('=')[0]}: did you mean {hint}?")
        else:
            others.append(arg.partition("=")[0])
    if errors:
        errors.append(
            "fix the flag name (run the program with --help to list the TaaS settings and its "
            "own flags)"
        )
        raise SettingsError("\n".join(errors))
    return others


def check_taas_env(env: Mapping[str, str]) -> list[str]:
    """Raise :class:`SettingsError` for ``TAAS_*`` near misses; return the other unknown ones.

    Settings read ``TAAS_<NAME>`` case-insensitively, so the check does too.
    """
    fields = list(TrainerSettings.model_fields)
    known = {f"TAAS_{name.upper()}" for name in fields}
    errors: list[str] = []
    others: list[str] = []
    for name in sorted(env):
        upper = name.upper()
        if not upper.startswith("TAAS_") or upper in known:
            continue
        matches = close_matches(upper.removeprefix("TAAS_").lower(), fields)
        if matches:
            hint = " or ".join(f"TAAS_{m.upper()}" for m in matches)
            errors.append(f"unknown environment variable {name}: did you mean {hint}?")
        else:
            others.append(name)
    if errors:
        errors.append(
            "rename the variable (run the program with --help to list the TaaS settings and "
            "their environment variables)"
        )
        raise SettingsError("\n".join(errors))
    return others


def parse_program_flags(args: Sequence[str], task: str) -> None:
    """Give the program's absl flags their values; reject near-miss typos; note other flags.

    ``args``: the command line without the cluster flags. The program's absl flags see every
    flag they define, a TaaS setting of the same name included (``--batch_size``).
    """
    absl_names: set[str] = set()
    leftovers = before_separator(args)
    if "absl.flags" in sys.modules:
        from absl import flags

        if flags.FLAGS.is_parsed():
            return  # absl.app.run parsed the whole command line already
        argv0 = sys.argv[0] if sys.argv else "trainer"
        try:
            leftovers = flags.FLAGS([argv0, *leftovers], known_only=True)[1:]
        except flags.Error as exc:
            raise SettingsError(f"flag error: {exc}; fix the flag's value") from None
        absl_names = _absl_names(flags.FLAGS)
    _, unclaimed = parse_flags(leftovers)
    for flag in check_leftovers(unclaimed, taas_flag_names() | absl_names):
        print(
            f"[{task}] note: {flag} is neither a TaaS setting nor an absl flag of this program; "
            "TaaS ignores it (run with --help to list both)",
            flush=True,
        )


def _absl_names(flag_values: object) -> set[str]:
    names: set[str] = set()
    for name in flag_values:  # type: ignore[attr-defined]
        names.add(name)
        if flag_values[name].boolean:  # type: ignore[index]
            names.add(f"no{name}")
    return names


def help_text(program: str) -> str:
    """What ``--help`` prints: the TaaS settings, the cluster flags, the program's flags."""
    lines = [
        f"usage: {program} [--<setting>=<value> ...] [program flags]",
        "",
        "TaaS settings (flag > env TAAS_<NAME> > TaaS 2.0 env > default; meanings: pydoc taas):",
    ]
    fields = TrainerSettings.model_fields
    envs = {n: " / ".join(env_names(n)) for n in fields}
    width = max(len(e) for e in envs.values())
    for name, field in fields.items():
        default = "unset" if field.default is None else repr(field.default)
        lines.append(f"  --{name:<24} {envs[name]:<{width}}  default {default}")
    aliases = ", ".join(f"--{a} = --{n}" for a, n in FLAG_ALIASES.items())
    lines += [
        f"  aliases: {aliases}",
        "",
        "Cluster (TF_CONFIG wins; else env, else these): "
        + " ".join(f"--{f}" for f in CLUSTER_FLAGS),
    ]
    program_flags = _program_absl_flags()
    if program_flags:
        lines += ["", "Flags of this program:", *program_flags]
    return "\n".join(lines)


def _program_absl_flags() -> list[str]:
    if "absl.flags" not in sys.modules:
        return []
    from absl import flags

    out = []
    for module, module_flags in flags.FLAGS.flags_by_module_dict().items():
        if module.split(".")[0] in _THIRD_PARTY:
            continue
        for flag in sorted(module_flags, key=lambda f: f.name):
            out.append(f"  --{flag.name:<24} {flag.help} (default {flag.default!r})")
    return out
