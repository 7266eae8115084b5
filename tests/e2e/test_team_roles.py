"""The chart's aggregated ClusterRoles on a real cluster (its controller-manager aggregates them):
a user bound to Kubernetes' namespace `edit` role applies, follows and deletes a TFJob with no
rule written for TaaS, and one bound to `view` reads it and can do nothing else, as with
Kubeflow's training-operator."""

from __future__ import annotations

import json
import uuid

import pytest

from taas_controlplane.cluster.cluster import Cluster
from tests.harness.real_cluster import toolbox_tfjob
from tests.harness.waiting import wait

pytestmark = [pytest.mark.node]


def _grants_tfjobs(cluster: Cluster, role: str, verb: str) -> bool:
    found = json.loads(cluster.kubectl("get", "clusterrole", role, "-o", "json").stdout)
    return any(
        "kubeflow.org" in rule.get("apiGroups", []) and "tfjobs" in rule.get("resources", [])
        and verb in rule.get("verbs", [])
        for rule in found.get("rules") or []
    )  # fmt: skip


def test_a_namespace_edit_user_runs_tfjobs_and_a_view_user_only_reads_them(
    cluster: Cluster, operator: str, ns: str
) -> None:
    for user, role in (("alice", "edit"), ("bob", "view")):
        cluster.kubectl("create", "rolebinding", f"{user}-{role}", f"--clusterrole={role}",
                        f"--user={user}", "-n", ns)  # fmt: skip
    wait(
        lambda: (
            _grants_tfjobs(cluster, "edit", "create")
            and _grants_tfjobs(cluster, "view", "list")
            and _grants_tfjobs(cluster, "admin", "delete")
        ),
        "edit and view aggregating the chart's TFJob rules",
        timeout=60,
        every=1.0,
    )
    alice = cluster.plane.kubeconfig_for("alice")
    bob = cluster.plane.kubeconfig_for("bob")
    name = f"team-{uuid.uuid4().hex[:6]}"
    job = toolbox_tfjob(name, "sleep 1", {"Worker": 1})

    def as_user(kubeconfig: str, *args: str, input: str | None = None) -> tuple[int, str]:
        done = cluster.plane.kubectl(*args, "-n", ns, kubeconfig=kubeconfig, check=False,
                                     input=input)  # fmt: skip
        return done.returncode, done.stdout + done.stderr

    code, said = as_user(bob, "create", "-f", "-", input=job)
    assert code != 0 and "forbidden" in said.lower(), said
    code, said = as_user(alice, "create", "-f", "-", input=job)
    assert code == 0, said
    code, said = as_user(bob, "get", "tfjob", name, "-o", "json")
    assert code == 0 and json.loads(said)["metadata"]["name"] == name, said
    code, said = as_user(bob, "get", "tfjobs", "--watch-only", "--request-timeout=1s")
    assert "forbidden" not in said.lower(), said  # a watch is reading too
    for verb_args in (("delete", "tfjob", name), ("label", "tfjob", name, "team=b")):
        code, said = as_user(bob, *verb_args)
        assert code != 0 and "forbidden" in said.lower(), (verb_args, said)
    code, said = as_user(alice, "label", "tfjob", name, "team=a")
    assert code == 0, said
    code, said = as_user(alice, "delete", "tfjob", name, "--wait=false")
    assert code == 0, said
    code, said = as_user(alice, "get", "pods")  # edit is still edit: nothing more, nothing less
    assert code == 0, said
