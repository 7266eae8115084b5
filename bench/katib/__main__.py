"""`python -m bench.katib`: Katib's trials, TaaS against training-operator v1.8.1.

    python -m bench.katib [--rounds 2] [--trials 4] [--json FILE]

Needs root (the one-node cluster, as `taas-controlplane cluster up --katib` runs it: Katib
v0.19.0 beside it, TaaS's TFJob CRD applied before Katib starts). The Experiment is
examples/hyperparameter_search/experiment.yaml (a learning-rate search over a trainer-library
program; each trial a TFJob of 1 PS + 1 worker), cut to `--trials` trials, 2 at a time. Each
round runs it once under each controller, alternating who goes first; each controller runs
out of cluster as bench.operator's e2e starts it, its own TFJob CRD applied over the last one:
the CRD object is never deleted, because katib-controller sets up its TFJob watch only at its
start and only if the CRD is there. Per trial, from its creation (as a watch shows it):

- pods Running: every pod of the trial's TFJob Running;
- first step: the chief's "first step done" line (the kubelet's stamp, via Katib's collector);
- metric collected: the trial's status.observation carries the objective metric.

The table gives the median of each over all trials per controller and the ratio TaaS /
training-operator (below 1.00x: TaaS is faster). Exit 0 when every trial was measured, 1 when
one was not (or a part of the cluster died), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import yaml

from bench.harness.contest import REPO, contest, contest_table
from bench.harness.controllers import TAAS_CRD
from bench.katib.experiments import run_experiment
from bench.katib.trials import TrialRun, experiment
from taas_controlplane.cluster.cluster import Cluster
from taas_controlplane.cluster.katib import KatibOptions

EXAMPLE = REPO / "examples" / "hyperparameter_search" / "experiment.yaml"
PARALLEL = 2
FIGURES = [
    ("running_s", "pods Running"),
    ("first_step_s", "first training step"),
    ("collected_s", "metric collected"),
]


def report(runs: list[TrialRun]) -> str:
    """Medians per controller over their trials, and the ratio TaaS / training-operator."""
    table = contest_table(runs, FIGURES, "figure (median s from the trial's creation)")
    measured = sum(1 for r in runs if r.trial != "-")
    return f"{table}\ntrials: {measured}, failed: {sum(1 for r in runs if r.error)}"


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {number}")
    return number


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.katib",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--rounds", type=_positive, default=2, help="Experiments per controller")
    parser.add_argument("--trials", type=_positive, default=4, help="trials per Experiment")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per Experiment")
    parser.add_argument("--json", metavar="FILE", help="also write every trial as JSON")
    args = parser.parse_args(argv)
    search = experiment(yaml.safe_load(EXAMPLE.read_text()), args.trials, PARALLEL)
    workdir = Path(tempfile.mkdtemp(prefix="taas-bench-katib-"))
    print(f"[bench katib] work dir {workdir}", file=sys.stderr, flush=True)
    cluster = Cluster(workdir / "node", katib=KatibOptions(enabled=True, job_crds=[TAAS_CRD]))
    return contest(
        cluster,
        workdir,
        args.rounds,
        "bench katib",
        lambda name, round_: run_experiment(cluster, name, round_, search, args.timeout),
        report,
        args.json,
    )


if __name__ == "__main__":
    sys.exit(main())
