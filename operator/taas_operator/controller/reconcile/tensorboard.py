"""The TensorBoard the operator runs for a TFJob that asks for one (`tensorboard.objects`).

    boards = TensorBoards(kube, image, policy=True, allow_from=[])
    await boards.sync(job) -> (list[Event], list[NotOwned])  # a pass's TensorBoard work
    boards.forget(key)

A job annotated `taas.dev/tensorboard: "true"` gets the Deployment and Service
`<job>-tensorboard` (`tensorboard.objects.desired_tensorboard`), and with `policy` (the operator's
NetworkPolicies on) a NetworkPolicy of that name admitting no pod to it, only `allow_from`
(`tensorboard.policy`), all owned by the job, so Kubernetes' garbage
collector removes them with it; they outlive the job's pods (cleanPodPolicy), since a finished
job is when its summaries are read. Not watched, as the PodGroup is not: a pass sends nothing
once this incarnation's TensorBoard was made or found (remembered per job and uid), so the cost
is two POSTs per annotated job (and per operator start). A name still taken by an earlier
incarnation's TensorBoard (on its way out with that job) is tried again on a later pass; a
name held by an object no TFJob of the name controls is left alone and reported (`NotOwned`:
the pass fails the job naming it, `reconciler`). The operator never changes nor deletes a
TensorBoard object (the garbage collector removes them with the job).
What makes it impossible (the chief's model_dir on no volume another pod can mount, a name too
long) is a Warning `TensorBoardUnavailable` naming the fix, once per problem; the job runs on.
"""

from __future__ import annotations

import asyncio
from typing import Any

from taas_operator.api.constants import (
    REASON_TENSORBOARD_CREATED,
    REASON_TENSORBOARD_UNAVAILABLE,
)
from taas_operator.api.models import TFJob
from taas_operator.api.resources import DEPLOYMENT, POLICY, SERVICE, Kind
from taas_operator.apiserver.errors import ApiError
from taas_operator.apiserver.verbs import KubeClient
from taas_operator.controller.reconcile.owned import NotOwned, holder
from taas_operator.controller.reconcile.recorder import log_api_error
from taas_operator.controller.seen import Seen
from taas_operator.controller.watch.jobcache import JobKey
from taas_operator.planner import Event
from taas_operator.tensorboard.objects import (
    ModelDirError,
    desired_tensorboard,
    tensorboard_command,
    tensorboard_request,
)
from taas_operator.tensorboard.policy import desired_tensorboard_policy


class TensorBoards:
    """Makes each asking job's TensorBoard once per incarnation (see the module)."""

    def __init__(
        self, kube: KubeClient, image: str, policy: bool = True, allow_from: list[str] | None = None
    ) -> None:
        self.kube, self.image = kube, image
        self.policy, self.allow_from = policy, list(allow_from or [])
        self._made: dict[JobKey, str] = {}  # job -> the uid whose TensorBoard exists
        self._told: dict[JobKey, tuple[str, str]] = {}  # job -> (uid, problem) posted

    def forget(self, key: JobKey) -> None:
        self._made.pop(key, None)
        self._told.pop(key, None)

    async def sync(self, job: TFJob) -> tuple[list[Event], list[NotOwned]]:
        """Create the job's TensorBoard when it asks for one and it was not made yet: what to
        tell, and the objects holding its names that no TFJob of the name controls."""
        if tensorboard_request(job) != "run":
            return [], []
        key, uid = (job.namespace, job.name), job.metadata.uid or ""
        if self._made.get(key) == uid:
            return [], []
        try:
            deployment, service = desired_tensorboard(job, self.image)
        except ModelDirError as err:
            return self._tell(key, uid, f"no TensorBoard for this job: {err}"), []
        # the policy first: the TensorBoard's pod is never up without it
        first = (
            [await self._create(POLICY, job, desired_tensorboard_policy(job, self.allow_from))]
            if self.policy
            else []
        )
        if any(m is not True for m in first):
            made: list[bool | str | NotOwned] = first
        else:
            made = first + list(
                await asyncio.gather(
                    self._create(DEPLOYMENT, job, deployment), self._create(SERVICE, job, service)
                )
            )
        not_owned = [m for m in made if isinstance(m, NotOwned)]
        if not_owned:
            return [], not_owned
        problems = [m for m in made if isinstance(m, str)]
        if problems:
            return self._tell(key, uid, "; ".join(problems), retried=True), []
        if not all(made):
            return [], []  # an earlier incarnation's holds the name: a later pass makes it
        self._made[key] = uid
        name = deployment["metadata"]["name"]
        created = [
            Event(
                type="Normal",
                reason=REASON_TENSORBOARD_CREATED,
                message=f"TensorBoard {name} reads the chief's model_dir; serve it on your "
                f"machine with: {tensorboard_command(job.namespace, job.name)}",
            )
        ]
        return created, []

    def _tell(self, key: JobKey, uid: str, problem: str, retried: bool = False) -> list[Event]:
        if self._told.get(key) == (uid, problem):
            return []
        self._told[key] = (uid, problem)
        if retried:
            problem += " (tried again on the job's next change)"
        return [Event(type="Warning", reason=REASON_TENSORBOARD_UNAVAILABLE, message=problem)]

    async def _create(
        self, kind: Kind, job: TFJob, manifest: dict[str, Any]
    ) -> bool | str | NotOwned:
        """True when this incarnation's object exists now, False when an earlier one's holds
        the name, NotOwned when an object no TFJob of the name controls does, else the
        failure's message."""
        name = manifest["metadata"]["name"]
        try:
            if await self.kube.create(kind, job.namespace, manifest) is not None:
                return True
            found = await self.kube.get(kind, job.namespace, name)
        except ApiError as err:
            log_api_error(err)
            return f"cannot create {kind.plural} {name}: {err}"
        if found is None:
            return False  # gone since: made on a later pass
        seen = Seen.read(kind, found)
        whose = holder(seen, job.metadata.uid or "")
        return NotOwned(seen) if whose == "other" else whose == "job"
