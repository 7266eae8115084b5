"""A local Python program as a TFJob (`taas submit PROGRAM.py`, `TFJobClient.create_job`): the
manifests made (shapes, resources, GPUs, env, names, the ConfigMap and its owner), their bounds,
`--dry-run`'s output as `taas validate` reads it, and every bad flag: exit 2, one message naming
the flag and the fix, no traceback, nothing sent (no kubeconfig exists here to send it with)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from taas_operator.api import parse_tfjob
from taas_operator.apiserver.errors import Invalid
from taas_operator.cli import main
from taas_operator.client.programoptions import (
    CLI_NAMES,
    DEFAULT_IMAGE,
    PYTHON_NAMES,
    InvalidOptions,
    ProgramOptions,
    python_options,
)
from taas_operator.client.programs import (
    MAX_CONFIG_MAP_BYTES,
    PROGRAM_DIR,
    Program,
    command_job,
    dump_yaml,
    given_program,
    owned_config_map,
    program_job,
    read_program,
)
from taas_operator.documents import parse_tfjobs
from taas_operator.planner import desired_pods
from taas_operator.tfjob.cluster_spec import CLUSTER_ENV_NAMES, classic_env, service_hosts

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "linear_regression" / "linear_regression.py"
PROGRAM = Program("train.py", "import taas\nprint('hello')\n")


def _container(tfjob: dict[str, Any], rtype: str) -> dict[str, Any]:
    spec = tfjob["spec"]["tfReplicaSpecs"][rtype]["template"]["spec"]
    return dict(spec["containers"][0])


def test_the_shape_of_a_ps_job() -> None:
    made = program_job(PROGRAM, ProgramOptions(workers=2, ps=1))
    specs = made.tfjob["spec"]["tfReplicaSpecs"]
    assert {k: v["replicas"] for k, v in specs.items()} == {"PS": 1, "Worker": 2}
    assert made.tfjob["metadata"] == {"name": "train"}  # no namespace unless asked
    for rtype, spec in specs.items():
        assert spec["restartPolicy"] == "ExitCode"
        pod = spec["template"]["spec"]
        container = _container(made.tfjob, rtype)
        assert container["image"] == DEFAULT_IMAGE
        assert container["command"] == ["python", f"{PROGRAM_DIR}/train.py"]
        assert container["volumeMounts"] == [
            {"name": "program", "mountPath": PROGRAM_DIR, "readOnly": True}
        ]
        assert pod["volumes"] == [{"name": "program", "configMap": {"name": "train-program"}}]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert "resources" not in container
        # TensorFlow's INFO lines (device dumps, "Local rendezvous is aborting") stay off the
        # terminal `taas submit` follows, unless the user sets the level (below)
        assert container["env"] == [{"name": "TF_CPP_MIN_LOG_LEVEL", "value": "1"}]
    assert made.config_map == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "train-program",
            "labels": {"training.kubeflow.org/job-name": "train"},
        },
        "data": {"train.py": PROGRAM.text},
    }
    assert made.job.spec.tf_replica_specs["Worker"].replicas == 2


def test_a_chief_resources_gpus_env_arguments_and_a_namespace() -> None:
    options = ProgramOptions(
        name="mnist-dist",
        workers=3,
        ps=2,
        chief=True,
        gpus_per_worker=2,
        image="registry.example.com/team/trainer:1",
        cpu="2",
        memory="4Gi",
        env={"TF_MAX_STEPS": "400", "TAAS_BATCH_SIZE": "64", "TF_CPP_MIN_LOG_LEVEL": "0"},
        args=("--epochs", "3"),
    )
    made = program_job(PROGRAM, options, namespace="team-a")
    specs = made.tfjob["spec"]["tfReplicaSpecs"]
    assert {k: v["replicas"] for k, v in specs.items()} == {"Chief": 1, "PS": 2, "Worker": 3}
    assert made.tfjob["metadata"] == {"name": "mnist-dist", "namespace": "team-a"}
    assert made.config_map["metadata"]["namespace"] == "team-a"
    assert made.config_map["metadata"]["name"] == "mnist-dist-program"
    for rtype in specs:
        container = _container(made.tfjob, rtype)
        assert container["image"] == "registry.example.com/team/trainer:1"
        assert container["command"][2:] == ["--epochs", "3"]
        assert container["env"] == [
            {"name": "TF_MAX_STEPS", "value": "400"},
            {"name": "TAAS_BATCH_SIZE", "value": "64"},
            {"name": "TF_CPP_MIN_LOG_LEVEL", "value": "0"},  # the user's level, not TaaS's
        ]
        resources = container["resources"]
        assert resources["requests"] == {"cpu": "2", "memory": "4Gi"}
        gpus = {} if rtype == "PS" else {"nvidia.com/gpu": 2}
        assert resources["limits"] == {"cpu": "2", "memory": "4Gi", **gpus}


def test_gpus_alone_are_limits_of_workers_and_the_chief() -> None:
    made = program_job(PROGRAM, ProgramOptions(workers=2, ps=1, chief=True, gpus_per_worker=1))
    assert _container(made.tfjob, "Worker")["resources"] == {"limits": {"nvidia.com/gpu": 1}}
    assert _container(made.tfjob, "Chief")["resources"] == {"limits": {"nvidia.com/gpu": 1}}
    assert "resources" not in _container(made.tfjob, "PS")


def test_the_operator_builds_pods_that_mount_and_run_the_program() -> None:
    """The pod builder keeps the volume, the mount and the command, and puts the cluster
    (TF_CONFIG...) in front of the user's env: the program reads TF_CONFIG as in any job."""
    made = program_job(PROGRAM, ProgramOptions(workers=2, ps=1, env={"A": "1"}), namespace="ns")
    pods = desired_pods(made.job)
    assert len(pods) == 3
    for pod in pods:
        container = pod["spec"]["containers"][0]
        assert container["command"] == ["python", f"{PROGRAM_DIR}/train.py"]
        assert pod["spec"]["volumes"][0]["configMap"]["name"] == "train-program"
        names = [e["name"] for e in container["env"]]
        assert names[0] == "TF_CONFIG" and names[-2:] == ["A", "TF_CPP_MIN_LOG_LEVEL"]


def test_the_cluster_variables_are_the_ones_taas_sets() -> None:
    made = program_job(PROGRAM, ProgramOptions(workers=2, ps=1, chief=True))
    set_by_taas = {"TF_CONFIG", *classic_env(made.job, "Worker", 0, service_hosts(made.job))}
    assert set(CLUSTER_ENV_NAMES) == set_by_taas


def test_the_made_tfjob_is_what_taas_validate_accepts() -> None:
    made = program_job(
        PROGRAM, ProgramOptions(workers=2, ps=1, gpus_per_worker=1, cpu="500m", memory="1Gi")
    )
    [tfjob, config_map] = list(yaml.safe_load_all(dump_yaml(made)))
    assert tfjob == made.tfjob and config_map == made.config_map
    assert [job.name for job in parse_tfjobs(dump_yaml(made), "dry run")] == ["train"]
    assert parse_tfjob(tfjob).name == "train"


def test_the_program_is_a_literal_block_kept_byte_for_byte() -> None:
    text = EXAMPLE.read_text()
    made = program_job(Program("linear_regression.py", text), ProgramOptions())
    out = dump_yaml(made)
    assert "  linear_regression.py: |" in out
    assert list(yaml.safe_load_all(out))[1]["data"]["linear_regression.py"] == text


def test_the_config_map_is_owned_by_the_job_it_was_made_for() -> None:
    made = program_job(PROGRAM, ProgramOptions(), namespace="ns")
    job = made.job.model_copy(deep=True)
    job.metadata.uid = "0e6c8a52-1111-2222-3333-444455556666"
    owned = owned_config_map(made.config_map, job)
    assert owned["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "TFJob",
            "name": "train",
            "uid": "0e6c8a52-1111-2222-3333-444455556666",
        }
    ]
    assert owned["metadata"]["namespace"] == "ns"
    assert "ownerReferences" not in made.config_map["metadata"]  # the original is untouched


# -- names and bounds ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("file_name", "name"),
    [("train.py", "train"), ("My_Train.py", "my-train"), ("mnist.v2.py", "mnist-v2")],
)
def test_the_job_is_named_after_the_file(file_name: str, name: str) -> None:
    made = program_job(Program(file_name, ""), ProgramOptions())
    assert made.tfjob["metadata"]["name"] == name
    assert made.config_map["data"] == {file_name: ""}


@pytest.mark.parametrize(
    ("file_name", "options", "message"),
    [
        ("2d.py", ProgramOptions(), "the name '2d' made from '2d.py' cannot name the TFJob"),
        ("train.py", ProgramOptions(name="Bad_Name"), "--name 'Bad_Name' cannot name the TFJob"),
        ("train.py", ProgramOptions(name="a" * 60, workers=10), "too long for its replicas"),
    ],
)
def test_a_name_that_cannot_name_the_job(
    file_name: str, options: ProgramOptions, message: str
) -> None:
    with pytest.raises(Invalid, match="fix: --name NAME") as caught:
        program_job(Program(file_name, ""), options)
    assert message in str(caught.value)


def test_a_program_as_large_as_a_config_map_holds(tmp_path: Path) -> None:
    path = tmp_path / "big.py"
    path.write_bytes(b"#" * (MAX_CONFIG_MAP_BYTES - len("big.py")))
    assert len(read_program(path).text) == MAX_CONFIG_MAP_BYTES - len("big.py")
    path.write_bytes(b"#" * (MAX_CONFIG_MAP_BYTES - len("big.py") + 1))
    with pytest.raises(Invalid, match=r"larger than a ConfigMap holds .*docs/deploy\.md"):
        read_program(path)


def test_an_endless_file_is_refused_after_one_mib(tmp_path: Path) -> None:
    endless = tmp_path / "zero.py"
    os.symlink("/dev/zero", endless)
    with pytest.raises(Invalid, match="larger than a ConfigMap holds"):
        read_program(endless)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("train.txt", b"", r"is not a Python program \(\.py\)"),
        ("my train.py", b"", "cannot be a ConfigMap key .* e.g. 'my_train.py'"),
        ("latin.py", b"caf\xe9 = 1\n", "is not UTF-8 text .*fix: save it as UTF-8"),
        ("missing.py", None, "does not exist"),
    ],
)
def test_files_that_cannot_be_shipped(
    tmp_path: Path, name: str, content: bytes | None, message: str
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(Invalid, match=message):
        read_program(path)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (ProgramOptions(workers=5001), "--workers 5001: must be a whole number from 0 to 5000"),
        (ProgramOptions(ps=-1), "--ps -1: must be a whole number"),
        (ProgramOptions(workers=0), "--workers: no replica would train"),
        (ProgramOptions(gpus_per_worker=65), "--gpus-per-worker 65: must be a whole number"),
        (ProgramOptions(image=""), "--image '': must be an image reference"),
        (ProgramOptions(image="a b"), "--image 'a b': must be an image reference"),
        (ProgramOptions(cpu="lots"), "--cpu 'lots': must be a CPU amount"),
        (ProgramOptions(cpu="0"), "--cpu '0': must be a CPU amount"),
        (ProgramOptions(memory="512m"), "--memory '512m': is less than 1Mi .* e.g. 512Mi"),
        (ProgramOptions(env={"1A": "x"}), "--env '1A': not a variable name"),
        (ProgramOptions(env={"TF_CONFIG": "{}"}), "--env TF_CONFIG: TaaS sets TF_CONFIG"),
        (ProgramOptions(env={"TASK_INDEX": "0"}), "--env TASK_INDEX: TaaS sets"),
    ],
)
def test_bad_options_name_the_flag(options: ProgramOptions, message: str) -> None:
    with pytest.raises(Invalid, match=message):
        program_job(PROGRAM, options, CLI_NAMES)


def test_a_job_of_only_a_chief_is_a_job() -> None:
    made = program_job(PROGRAM, ProgramOptions(workers=0, chief=True))
    assert list(made.tfjob["spec"]["tfReplicaSpecs"]) == ["Chief"]


# -- the Python client's arguments ---------------------------------------------------------------
def _python(**given: Any) -> ProgramOptions:
    arguments: dict[str, Any] = {
        "name": None,
        "num_workers": 1,
        "num_ps_replicas": 0,
        "num_chief_replicas": 0,
        "resources_per_worker": None,
        "base_image": None,
        "env": None,
        "args": (),
    }
    return python_options(**{**arguments, **given})


def test_kubeflow_style_arguments() -> None:
    options = _python(
        num_workers=2,
        num_ps_replicas=1,
        num_chief_replicas=1,
        resources_per_worker={"cpu": 1, "memory": "2Gi", "gpu": "1"},
        env={"A": "1"},
        args=["--epochs", "2"],
    )
    assert options == ProgramOptions(
        workers=2,
        ps=1,
        chief=True,
        gpus_per_worker=1,
        cpu="1",
        memory="2Gi",
        env={"A": "1"},
        args=("--epochs", "2"),
    )
    made = program_job(PROGRAM, options, PYTHON_NAMES)
    assert _container(made.tfjob, "Worker")["resources"]["limits"]["nvidia.com/gpu"] == 1


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"num_workers": -1}, "num_workers -1: must be a whole number"),
        ({"num_chief_replicas": 2}, "num_chief_replicas 2: must be 0 or 1"),
        ({"resources_per_worker": {"gpus": 1}}, "resources_per_worker: unknown key.* gpus"),
        ({"resources_per_worker": {"memory": "1m"}}, r'resources_per_worker\["memory"\]'),
        ({"resources_per_worker": {"gpu": "x"}}, r'resources_per_worker\["gpu"\]'),
        ({"env": ["A=1"]}, "env: must map variable names to values"),
        ({"args": "--epochs 3"}, "args '--epochs 3': must be a list of strings"),
        ({"name": "Bad"}, "name 'Bad' cannot name the TFJob: .*; fix: name=\"train\"$"),
    ],
)
def test_bad_python_arguments_name_the_argument(given: dict[str, Any], message: str) -> None:
    with pytest.raises(Invalid, match=message):
        program_job(PROGRAM, _python(**given), PYTHON_NAMES)


# -- the command line ----------------------------------------------------------------------------
@pytest.fixture
def program(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """linear_regression.py in an empty directory, with no kubeconfig to be found."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    path = tmp_path / "linear_regression.py"
    path.write_text(EXAMPLE.read_text())
    return path


def test_dry_run_prints_both_manifests_that_taas_validate_accepts(
    program: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["submit", program.name, "--workers", "2", "--ps", "1", "--gpus-per-worker", "1"]
    argv += ["--env", "TF_MAX_STEPS=400", "--memory", "2Gi", "--dry-run", "--", "--lr", "0.1"]
    assert main(argv) == 0
    out = capsys.readouterr()
    [tfjob, config_map] = list(yaml.safe_load_all(out.out))
    assert tfjob["metadata"] == {"name": "linear-regression"}
    worker = _container(tfjob, "Worker")
    assert worker["command"] == ["python", f"{PROGRAM_DIR}/linear_regression.py", "--lr", "0.1"]
    assert worker["resources"]["limits"] == {"memory": "2Gi", "nvidia.com/gpu": 1}
    assert config_map["data"] == {"linear_regression.py": program.read_text()}
    assert "ownerReference" in out.err  # said once: kubectl apply of it leaves the ConfigMap
    Path("job.yaml").write_text(out.out)
    assert main(["validate", "job.yaml"]) == 0
    assert "tfjob.kubeflow.org/linear-regression valid" in capsys.readouterr().out


def test_dry_run_with_a_namespace_and_of_a_manifest(
    program: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["submit", program.name, "-n", "team-a", "--dry-run=client"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["metadata"]["namespace"] for d in docs] == ["team-a", "team-a"]
    manifest = REPO / "examples" / "linear_regression" / "tfjob.yaml"
    assert main(["submit", str(manifest), "--dry-run"]) == 0
    [tfjob] = list(yaml.safe_load_all(capsys.readouterr().out))
    assert tfjob["metadata"]["name"] == "linear-regression"
    assert "namespace" not in tfjob["metadata"]  # none given, none asked of a cluster


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--workers", "x"], "argument --workers: 'x' is not a whole number; fix: e.g. 2"),
        (["--workers", "-1"], "argument --workers: '-1' is not a whole number"),
        (["--workers", "5001"], "error: --workers 5001: must be a whole number from 0 to 5000"),
        (["--workers", "0"], "error: --workers: no replica would train"),
        (["--gpus-per-worker", "100"], "error: --gpus-per-worker 100: must be a whole number"),
        (["--memory", "512m"], "error: --memory '512m': is less than 1Mi"),
        (["--cpu", "lots"], "error: --cpu 'lots': must be a CPU amount"),
        (["--env", "FOO"], "argument --env: 'FOO' is not NAME=VALUE; fix: e.g. TF_MAX_STEPS=400"),
        (["--env", "A=1", "--env", "A=2"], "error: --env A: given twice; fix: give each"),
        (["--env", "TF_CONFIG={}"], "error: --env TF_CONFIG: TaaS sets TF_CONFIG"),
        (["--image", "a b"], "error: --image 'a b': must be an image reference"),
        (["--name", "Bad_Name"], "error: --name 'Bad_Name' cannot name the TFJob"),
        (["--dry-run=server"], "argument --dry-run: ignored explicit argument 'server'"),
    ],
)
def test_bad_flags_exit_2_naming_the_flag(
    program: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    """Checked before any cluster is asked: no kubeconfig exists, and the flag is the message."""
    try:
        code = main(["submit", program.name, *flags])
    except SystemExit as exit_:  # argparse's own usage errors
        code = int(exit_.code or 0)
    err = capsys.readouterr().err
    assert code == 2, err
    assert message in err and "kubeconfig" not in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("path", "flags", "message"),
    [
        ("job.txt", [], "'job.txt' is neither a TFJob manifest (.yaml, .yml, .json; '-' reads"),
        ("job.yaml", ["--workers", "2", "--env", "A=1"], "--workers, --env: for a program"),
        ("missing.py", [], "PROGRAM.py 'missing.py' does not exist"),
    ],
)
def test_what_is_neither_a_program_nor_a_manifest(
    program: Path,
    capsys: pytest.CaptureFixture[str],
    path: str,
    flags: list[str],
    message: str,
) -> None:
    Path("job.txt").write_text("")
    assert main(["submit", path, *flags]) == 2
    assert message in capsys.readouterr().err


def test_dry_run_before_the_file(program: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["submit", "--dry-run", program.name]) == 0
    assert next(yaml.safe_load_all(capsys.readouterr().out))["kind"] == "TFJob"


def test_arguments_after_the_separator_belong_to_the_program(
    program: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["submit", program.name, "--dry-run", "--", "--workers", "7"]) == 0
    tfjob = next(yaml.safe_load_all(capsys.readouterr().out))
    assert tfjob["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == 1
    assert _container(tfjob, "Worker")["command"][2:] == ["--workers", "7"]


# -- a program's text given as it is, a command (the dashboard's form) --------------------------
FORM = {**CLI_NAMES, "program": "Program", "name": "Name", "command": "Command"}


def test_a_given_program_is_checked_as_a_file_is() -> None:
    room = MAX_CONFIG_MAP_BYTES - len("big.py")
    assert given_program("big.py", "#" * room, FORM).text == "#" * room
    with pytest.raises(InvalidOptions, match="larger than a ConfigMap holds") as caught:
        given_program("big.py", "é" * (room // 2 + 1), FORM)  # two bytes each in UTF-8
    assert [option for option, _ in caught.value.problems] == ["program"]
    for name, message in [("train.txt", r"not a Python program"), ("a b.py", "ConfigMap key")]:
        with pytest.raises(InvalidOptions, match=f"Program '{name}'.*{message}"):
            given_program(name, "", FORM)


def test_a_command_of_the_image_is_the_same_job_without_a_config_map() -> None:
    options = ProgramOptions(name="linreg", workers=2, ps=1, env={"A": "1"}, cpu="1")
    tfjob, job = command_job(["python", "run.py", "--x"], options, FORM, "ns")
    made = program_job(PROGRAM, options, FORM, "ns").tfjob
    for rtype in ("PS", "Worker"):
        container, program = _container(tfjob, rtype), _container(made, rtype)
        assert container["command"] == ["python", "run.py", "--x"]
        assert "volumeMounts" not in container
        assert {k: v for k, v in program.items() if k not in ("command", "volumeMounts")} == {
            k: v for k, v in container.items() if k != "command"
        }
        assert "volumes" not in tfjob["spec"]["tfReplicaSpecs"][rtype]["template"]["spec"]
    assert job.name == "linreg" and job.namespace == "ns"


def test_a_command_needs_a_name_and_words() -> None:
    with pytest.raises(InvalidOptions) as caught:
        command_job([], ProgramOptions(workers=-1), FORM)
    assert [option for option, _ in caught.value.problems] == ["workers"]  # the options first
    with pytest.raises(InvalidOptions) as caught:
        command_job([], ProgramOptions(), FORM)
    assert caught.value.problems == [
        ("command", "Command: empty; fix: the command every replica runs"),
        ("name", "Name: needed for a command; fix: e.g. train"),
    ]


def test_each_option_problem_says_its_option() -> None:
    with pytest.raises(InvalidOptions) as caught:
        program_job(PROGRAM, ProgramOptions(workers=-1, memory="512m", env={"TF_CONFIG": "x"}))
    assert [option for option, _ in caught.value.problems] == ["workers", "memory", "env"]
    assert str(caught.value).startswith("--workers -1: must be a whole number")
    with pytest.raises(InvalidOptions) as caught:
        program_job(PROGRAM, ProgramOptions(name="Bad_Name"), FORM)
    [(option, message)] = caught.value.problems
    assert option == "name" and message.endswith("fix: a Name such as train")
