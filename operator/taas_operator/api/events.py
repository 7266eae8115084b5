"""A Kubernetes Event about a TFJob, as TaaS shows it: one model for the client (`taas get`'s
events, `TFJobClient.events`) and the dashboard's job page.

    KubeEvent.from_object(event) -> KubeEvent     # a core/v1 or events.k8s.io/v1 Event dict

The fields `kubectl describe` shows: type, reason, message, count, first and last time, the
component that reported it, and the Event's own name.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel


class KubeEvent(BaseModel):
    """One Kubernetes Event recorded on a TFJob."""

    type: str = "Normal"
    reason: str = ""
    message: str = ""
    count: int = 1
    first_time: datetime | None = None
    last_time: datetime | None = None
    source: str = ""
    name: str = ""

    @classmethod
    def from_object(cls, event: dict[str, Any]) -> KubeEvent:
        """Read from a core/v1 Event (or an events.k8s.io/v1 one: note, eventTime)."""
        source = event.get("source") or {}
        first = event.get("firstTimestamp") or event.get("eventTime")
        return cls(
            type=str(event.get("type") or "Normal"),
            reason=str(event.get("reason") or ""),
            message=str(event.get("message") or event.get("note") or ""),
            count=int(event.get("count") or 1),
            first_time=first,
            last_time=event.get("lastTimestamp") or event.get("eventTime") or first,
            source=str(event.get("reportingComponent") or source.get("component") or ""),
            name=str((event.get("metadata") or {}).get("name") or ""),
        )
