"""Issue 29, point 3: each write the operator makes is conditional on the uid it read, so an
object that took a child's name since it was read survives (the deletion of a job, a stale
watch cache). What the apiserver does with the uid (a DELETE's precondition, a patch setting
an immutable field) is the point, so this runs on the real one; the operator's choices of what
to leave alone: test_owned.

Real: kube-apiserver + etcd, scheduler-plugins' PodGroup CRD. No garbage collector runs here.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_operator.api.resources import POD, POD_GROUP, POLICY, SERVICE, Kind
from taas_operator.apiserver.verbs import KubeClient
from taas_operator.controller.reconcile.owned import NotOwned, Owned
from taas_operator.controller.seen import ADOPTION, Seen
from tests.harness.operator_run import (
    Api,
    new_namespace,
    unchanged,
    unique,
)
from tests.harness.waiting import wait

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(180)]

_GROUP_TYPE = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup"}
_POD_SPEC = {"containers": [{"name": "tensorflow", "image": "example.com/trainer:1"}]}


def test_every_write_applies_only_to_the_object_read(
    admin: Api, control_plane: ControlPlane, podgroup_crd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the job's deletion (its children from the watch cache) and every pass rely on: an
    object read as the job's, then deleted and made again under its name by someone else, even
    with the same owner reference, is not deleted, patched nor replaced by a write of the one
    read; the object read itself is; and an object another controls is refused before any
    request."""
    # No operator runs passes here: the pods made below (without its token) count as the
    # owner's, as for a process before its first pass, whatever in-process operators of earlier
    # tests left in the process-wide `seen.ADOPTION` (CI met this test after them)
    monkeypatch.setattr(ADOPTION, "since", None)
    monkeypatch.setattr(ADOPTION, "before", set())
    ns = new_namespace(admin, "ownedw")
    owner = "00000000-0000-0000-0000-0000000000aa"
    ref = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "job", "uid": owner,
           "controller": True}  # fmt: skip
    bodies: dict[Kind, dict[str, Any]] = {
        POD: {"spec": _POD_SPEC},
        SERVICE: {"spec": {"clusterIP": "None", "ports": [{"port": 2222}]}},
        POLICY: {"spec": {"podSelector": {}}},
        POD_GROUP: {**_GROUP_TYPE, "spec": {"minMember": 1}},
    }
    new_spec = {
        POD: None,
        SERVICE: None,
        POLICY: {"podSelector": {"matchLabels": {"a": "b"}}},
        POD_GROUP: {"minMember": 2},
    }

    def make(kind: Kind, name: str) -> dict[str, Any]:
        meta = {"name": name, "ownerReferences": [ref], "labels": {"x": "y"}}
        return admin.create(kind.path(ns), {"metadata": meta, **bodies[kind]})

    async def writes(kind: Kind, stale: Seen) -> list[bool]:
        kube = KubeClient.load(control_plane.kubeconfig)
        owned = Owned(kube)
        try:
            done = [await owned.annotate(stale, owner, {"taas.dev/x": "1"})]
            if kind is not POD_GROUP:  # a custom resource takes no strategic-merge patch
                done.append(await owned.patch_metadata(stale, owner, {"labels": {"x": "z"}}))
            spec = new_spec[kind]
            if spec is not None:
                done.append(await owned.replace_spec(stale, owner, spec))
            done.append(await owned.delete(stale, owner))
            with pytest.raises(NotOwned, match="controlled by TFJob uid"):
                await owned.delete(stale, "another-job-uid")
            return done
        finally:
            await kube.close()

    for kind in bodies:
        name = unique(kind.plural[:5])
        stale = Seen.read(kind, make(kind, name))
        admin.call("DELETE", kind.path(ns, name), {"gracePeriodSeconds": 0})
        wait(lambda k=kind, n=name: admin.find(k.path(ns, n)) is None, f"{name} gone")
        taken = make(kind, name)  # someone else's, under the same name and owner reference
        assert not any(asyncio.run(writes(kind, stale))), kind
        unchanged(admin, kind.path(ns, name), taken)
        # the object read itself is written, then deleted
        current = Seen.read(kind, taken)
        assert all(asyncio.run(writes(kind, current))), kind
        wait(lambda k=kind, n=name: admin.find(k.path(ns, n)) is None, f"{name} deleted")
