"""Run a trainer class as a program: settings, cluster, user flags, engine, exit code.

    run(trainer_cls, argv, choose_engine) -> NoReturn   # MyTrainer.main(), taas.program.run

Order: ``--help`` (prints the settings and the program's flags, exit 0); settings and cluster
read; ``TAAS_*`` variables and leftover flags checked for near misses of a setting (exit 2, see
``taas.core.flags``); ``visible_devices`` applied (before TensorFlow starts); the engine for the
class chosen (``choose_engine``: each hook class's ``main()`` names its own, ``taas.run`` asks
:func:`taas.program.engine_for`) and run.

Always ends the process with ``os._exit`` after flushing output, so lingering gRPC server
threads can never hang the shutdown. See ``taas.core.exit_codes`` for the codes.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from taas.core import flags, stopping
from taas.core.engine import EngineChoice
from taas.core.exit_codes import ExitCode, classify, loss_not_finite
from taas.core.placement import ClusterInfo, resolve_cluster, strip_cluster_flags
from taas.core.settings import TrainerSettings, load_settings


def run(trainer_cls: type, argv: Sequence[str] | None, choose_engine: EngineChoice) -> NoReturn:
    """Build ``trainer_cls()``, run this task's part with the engine ``choose_engine`` gives,
    and exit with the table's code (``argv`` None: ``sys.argv[1:]``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    stopping.install()  # before TensorFlow starts a thread: SIGTERM always ends the task
    cluster = ClusterInfo()
    code: int = ExitCode.OK
    try:
        if flags.wants_help(args):
            print(flags.help_text(sys.argv[0] if sys.argv else trainer_cls.__name__))
            raise SystemExit(ExitCode.OK)
        settings, _ = load_settings(args)
        cluster = resolve_cluster(os.environ, args)
        stopping.install(cluster.task_name)
        for name in flags.check_taas_env(os.environ):
            print(
                f"[{cluster.task_name}] note: {name} is not a TaaS trainer setting; ignored "
                "(run with --help to list them)",
                flush=True,
            )
        _apply_visible_devices(settings)
        _quiet_tensorflow()
        _quiet_closing_queue_runners()
        flags.parse_program_flags(strip_cluster_flags(args), cluster.task_name)
        engine = choose_engine(trainer_cls)(trainer_cls(), settings, cluster)
        engine.run()
        print(f"[{cluster.task_name}] exit 0", flush=True)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else ExitCode.USER_ERROR
    except BaseException as exc:
        code = classify(exc)
        if code == ExitCode.PEER_LOST and stopping.requested():
            # Asked to stop, and its peers stopped with it (the whole job deleted): a stop.
            code = ExitCode.TERMINATED
            exc = RuntimeError(f"stopped (SIGTERM); its peers went with it: {_first_line(exc)}")
        _report(cluster.task_name, code, exc)
    finally:
        _flush()
    os._exit(int(code))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


def _apply_visible_devices(settings: TrainerSettings) -> None:
    """Restrict the GPUs this process sees: before TensorFlow initialises its GPUs."""
    if settings.visible_devices is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = settings.visible_devices


def _report(task: str, code: int, exc: BaseException) -> None:
    if code == ExitCode.BAD_SETTINGS:
        print(f"[{task}] taas: {exc}", file=sys.stderr)
        print(f"[{task}] exit 2: bad settings (permanent)", file=sys.stderr)
    elif code == ExitCode.LOSS_NOT_FINITE:
        print(f"[{task}] {loss_not_finite(exc)}", file=sys.stderr)
        print(f"[{task}] exit 3: loss not finite (permanent)", file=sys.stderr)
    elif code == ExitCode.TERMINATED:
        print(f"[{task}] {exc}", file=sys.stderr)
        print(
            f"[{task}] exit 143: terminated (retryable: resumes from the latest checkpoint)",
            file=sys.stderr,
        )
    elif code == ExitCode.USER_ERROR:
        traceback.print_exc()
        print(f"[{task}] exit 1: error in the model or user code (permanent)", file=sys.stderr)
    else:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        print(
            f"[{task}] exit {code}: {type(exc).__name__}: {message} (retryable: restart resumes "
            "from the latest checkpoint)",
            file=sys.stderr,
        )


def _quiet_tensorflow() -> None:
    """Hide TensorFlow's Python deprecation warnings (graph mode uses many old APIs)."""
    import logging

    logging.getLogger("tensorflow").setLevel(logging.ERROR)


def _quiet_closing_queue_runners() -> None:
    """Closing the session cancels the sync queue runner's pending step: not an error."""
    import threading

    default = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        name = args.thread.name if args.thread else ""
        if name.startswith("QueueRunnerThread") and type(args.exc_value).__name__ in (
            "CancelledError",
            "AbortedError",
        ):
            return
        default(args)

    threading.excepthook = hook


def _flush() -> None:
    """Flush graph mode's summary writers (if TensorFlow was loaded at all), then the streams."""
    tf = sys.modules.get("tensorflow")
    try:
        if tf is not None:
            tf.compat.v1.summary.FileWriterCache.clear()
    except Exception:
        pass
    sys.stdout.flush()
    sys.stderr.flush()
