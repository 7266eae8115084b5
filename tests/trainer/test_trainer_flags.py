"""Command-line flags past the settings (near-miss typos, other flags, --help), the same check
for ``TAAS_*`` variables, and the generated settings table in the docs. No TensorFlow."""

from __future__ import annotations

import pytest

import taas
from taas.core.flags import (
    check_leftovers,
    check_taas_env,
    close_matches,
    flag_name,
    help_text,
    taas_flag_names,
    wants_help,
)
from taas.core.settings import SettingsError
from taas.settings_doc import table

pytestmark = pytest.mark.fast

KNOWN = taas_flag_names() | {"data_dir", "export_dir", "hidden_units", "nohidden_units"}


@pytest.mark.parametrize(
    ("typo", "match"),
    [
        ("max_step", "max_steps"),  # missing letter
        ("sycn", "sync"),  # swapped letters
        ("lerning_rate", "learning_rate"),
        ("batchsize", "batch_size"),
        ("no_sync", "nosync"),
        ("Max_Steps", "max_steps"),
        ("logdri", "logdir"),
        ("worker_host", "worker_hosts"),
        ("hiden_units", "hidden_units"),  # the program's own absl flag
    ],
)
def test_near_misses_are_found(typo: str, match: str) -> None:
    assert close_matches(typo, KNOWN)[0] == match


@pytest.mark.parametrize(
    "name", ["train_steps", "checkpoint_dir", "epochs", "data_path", "lr", "num_workers"]
)
def test_other_program_flags_are_not_near_misses(name: str) -> None:
    """Flags a program's own argparse parser commonly reads are not taken for typos."""
    assert close_matches(name, KNOWN) == []


def test_leftovers_near_miss_raises_naming_flag_match_and_help() -> None:
    with pytest.raises(SettingsError) as err:
        check_leftovers(["--max-step=5", "x", "--own_flag", "--sycn"], KNOWN)
    message = str(err.value)
    assert "unknown flag --max-step: did you mean --max_steps?" in message
    assert "unknown flag --sycn: did you mean --sync?" in message
    assert "--help" in message and "own_flag" not in message


def test_leftovers_other_flags_pass_and_after_separator_is_untouched() -> None:
    others = check_leftovers(["--own_flag=1", "value", "-1", "--", "--max_step"], KNOWN)
    assert others == ["--own_flag"]
    assert flag_name("-3.5") is None and flag_name("-") is None
    assert flag_name("-max-steps=2") == "max_steps"


def test_help_flag_and_text() -> None:
    assert wants_help(["--max_steps=3", "--help"]) and wants_help(["-h"])
    assert not wants_help(["--", "--help"])
    text = help_text("prog.py")
    assert "usage: prog.py" in text
    assert "--max_steps" in text and "TF_MAX_STEPS" in text and "--ps_hosts" in text


def test_taas_env_near_miss_raises_naming_variable_and_match() -> None:
    env = {"TAAS_MAX_STEP": "5", "taas_lerning_rate": "0.1", "TAAS_SYNC": "1", "HOME": "/root"}
    with pytest.raises(SettingsError) as caught:
        check_taas_env(env)
    message = str(caught.value)
    assert "unknown environment variable TAAS_MAX_STEP: did you mean TAAS_MAX_STEPS?" in message
    assert "taas_lerning_rate: did you mean TAAS_LEARNING_RATE?" in message
    assert "--help" in message and "TAAS_SYNC" not in message


def test_taas_env_known_and_unrelated_names_pass() -> None:
    env = {"TAAS_MAX_STEPS": "5", "taas_model_dir": "/m", "TAAS_NAMESPACES": "a", "TF_SYNC": "1"}
    assert check_taas_env(env) == ["TAAS_NAMESPACES"]  # the operator's: a note, not an error


def test_documented_settings_table_is_the_generated_one() -> None:
    """``taas``'s docstring carries the table ``python -m taas.settings_doc`` prints; every
    setting, env name and flag alias is in it (TF_MODEL_DIR and --train_dir were missing)."""
    generated = table()
    assert generated in (taas.__doc__ or ""), "regenerate: python -m taas.settings_doc"
    for name in ("TF_MODEL_DIR", "--train_dir", "--logdir", "checkpoint_path", "num_towers"):
        assert name in generated
