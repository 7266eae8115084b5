"""`taas validate --server`: the cluster's own answer, changing nothing.

    problems = server_checks(client, job) -> list[str]     # empty: the cluster would take it

Asks the apiserver with `dryRun=All` (every admission step runs, nothing is stored) for the
TFJob itself (the CRD's schema and CEL rules, admission webhooks such as Kueue's) and, for each
replica type, the pod the operator would create from its template (`planner.desired_pod`: pod
validation, Pod Security Admission, LimitRanges, quotas): what `kubectl apply` accepts but the
operator's pods would then fail on is said before anything is applied. A name already taken is
no problem (`kubectl apply` would update the TFJob; the operator names its own pods).
"""

from __future__ import annotations

from taas_operator.api import TFJob
from taas_operator.api.constants import PLURAL
from taas_operator.api.resources import POD, TFJOB
from taas_operator.apiserver.errors import AlreadyExists, ApiError, Request
from taas_operator.client.jobs import TFJobClient
from taas_operator.planner import desired_pod

DRY_RUN = {"dryRun": "All"}


def server_checks(client: TFJobClient, job: TFJob) -> list[str]:
    """What the cluster refuses of `job` and of each replica type's pod (dry runs)."""
    conn, ns = client.conn, job.namespace
    manifest = job.to_dict()
    manifest.pop("status", None)
    problems: list[str] = []
    try:
        what = Request("create", PLURAL, ns, job.name)
        conn.call(what, "POST", TFJOB.path(ns), query=DRY_RUN, body=manifest)
    except AlreadyExists:
        pass
    except ApiError as err:
        problems.append(f"the TFJob: {err}")
    for rtype in job.replica_types():
        if job.spec.tf_replica_specs[rtype].replicas < 1:
            continue
        pod = desired_pod(job, rtype, 0)
        try:
            what = Request("create", "pods", ns, pod["metadata"]["name"])
            conn.call(what, "POST", POD.path(ns), query=DRY_RUN, body=pod)
        except AlreadyExists:
            pass
        except ApiError as err:
            problems.append(
                f"the {rtype} pods (from spec.tfReplicaSpecs.{rtype}.template): "
                f"{str(err).split('; fix: ')[0]}; fix: spec.tfReplicaSpecs.{rtype}.template"
            )
    return problems
