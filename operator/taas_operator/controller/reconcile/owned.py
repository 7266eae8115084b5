"""The one check before the operator changes or deletes an object: the TFJob controls it.

    owned = Owned(kube)
    await owned.delete(seen, owner, grace_seconds=None) -> bool   # False: gone, or replaced
    await owned.replace_spec(seen, owner, spec) -> bool
    await owned.patch_metadata(seen, owner, metadata) -> bool
    await owned.annotate(seen, owner, annotations) -> bool
    holder(seen, uid) -> "job" | "earlier" | "other"   # whose is an object holding a name
    NotOwned(seen)                                     # what the job says about such an object

Every delete and update the operator makes of a job's pods, services, NetworkPolicy and
PodGroup goes through here (the TFJob's own status is written with its uid and
resourceVersion: `status`). `seen` is the object as the operator read it (the watch cache, a
LIST, a GET); it is written only if its controller ownerReference is the TFJob whose uid is
`owner`, and the write carries `seen.uid` as its precondition (`kube`), so an object that took
the name since it was read is never touched: the call returns False, as for one already gone.

An object under a name the job needs that no incarnation of the job controls (an
administrator's NetworkPolicy `default-deny` beside a TFJob `default-deny`, a Service made by
hand, an orphan) is left alone; `NotOwned` names it and the fix, and the pass fails the job
with it (`reconciler`). One that an earlier TFJob of the same name controls is on its way out with
that job (the garbage collector): the name is waited for.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

from taas_operator.apiserver.errors import Conflict
from taas_operator.apiserver.verbs import KubeClient
from taas_operator.controller.seen import Seen


class NotOwned(Exception):
    """An object holds a name the job needs and no incarnation of the job controls it."""

    def __init__(self, seen: Seen) -> None:
        self.seen = seen
        whose = {
            None: "nothing controls it: made by hand, or orphaned",
            "": "it is controlled by an object that is not a TFJob",
        }.get(seen.owner, f"it is controlled by TFJob uid {seen.owner}")
        super().__init__(
            f"{seen} already exists and is not this TFJob's ({whose}); TaaS changes and deletes "
            f"only what a TFJob controls, so it is left alone. Fix: rename the TFJob, or have "
            f"{seen}'s owner rename or delete it"
        )


def holder(seen: Seen, uid: str) -> Literal["job", "earlier", "other"]:
    """Whose an object holding a name of the job is: the job's (incarnation `uid`), an earlier
    TFJob's of the same name (on its way out), or someone else's."""
    if seen.owner and seen.owner == uid:
        return "job"
    return "earlier" if seen.owner else "other"


class Owned:
    """Writes to objects a TFJob controls, made conditional on the object read."""

    def __init__(self, kube: KubeClient) -> None:
        self.kube = kube

    @staticmethod
    def check(seen: Seen, owner: str) -> None:
        """Raise NotOwned unless the TFJob of uid `owner` controls `seen`."""
        if not owner or seen.owner != owner:
            raise NotOwned(seen)

    async def delete(self, seen: Seen, owner: str, grace_seconds: int | None = None) -> bool:
        """Delete `seen`; False when it is gone or another object took its name."""
        return await self._write(seen, owner, self.kube.delete, grace_seconds)

    async def replace_spec(self, seen: Seen, owner: str, spec: dict[str, Any]) -> bool:
        """Set `seen`'s spec; False when it is gone or another object took its name."""
        return await self._write(seen, owner, self.kube.replace_spec, spec)

    async def patch_metadata(self, seen: Seen, owner: str, metadata: dict[str, Any]) -> bool:
        """Strategic-merge patch `seen`'s metadata; False when it is gone or replaced."""
        return await self._write(seen, owner, self.kube.patch_metadata, metadata)

    async def annotate(self, seen: Seen, owner: str, annotations: dict[str, str]) -> bool:
        """Set annotations of `seen`; False when it is gone or replaced."""
        return await self._write(seen, owner, self.kube.annotate, annotations)

    async def _write(
        self, seen: Seen, owner: str, write: Callable[..., Awaitable[bool]], *args: Any
    ) -> bool:
        """`write(kind, namespace, name, *args, uid=...)` once `seen` is checked as owned; its
        uid precondition failing (the object gone or replaced) is False, not an error."""
        self.check(seen, owner)
        try:
            return await write(seen.kind, seen.namespace, seen.name, *args, uid=seen.uid)
        except Conflict:
            return False
