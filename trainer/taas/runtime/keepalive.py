"""gRPC keepalive on a coordinator's channels, so a peer that went silent fails its calls.

A peer whose node is powered off sends nothing back, not even a reset: a call in flight to it
waits until TCP gives up, minutes later, and a ParameterServerStrategy coordinator with work on
that worker stalls until the worker is made again elsewhere. With HTTP/2 keepalive pings on
the coordinator's channels such a call fails (UNAVAILABLE) once a ping goes unanswered, and the
coordinator treats the worker as lost: its work goes to the other workers until it is back.

TensorFlow reads its channels' options from ``TF_GRPC_DEFAULT_OPTIONS`` once, when it makes its
first channel: :func:`ensure_keepalive` must run before that. A value the user set stands.
Pings go only while a call is open, and gRPC's own limits (two pings until the client sends
data again) keep an idle open stream within what a server accepts.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

#: Where TensorFlow reads its default gRPC channel options ("name=value,...").
ENV = "TF_GRPC_DEFAULT_OPTIONS"
#: A ping after this long without a frame from the peer on a channel with a call open.
KEEPALIVE_TIME_MS = 10_000
#: The channel (and its calls) fails when the ping's answer has not come within this.
KEEPALIVE_TIMEOUT_MS = 10_000
OPTIONS = (
    f"grpc.keepalive_time_ms={KEEPALIVE_TIME_MS},grpc.keepalive_timeout_ms={KEEPALIVE_TIMEOUT_MS}"
)


def ensure_keepalive(environ: MutableMapping[str, str] | None = None) -> bool:
    """Set the keepalive options unless ``TF_GRPC_DEFAULT_OPTIONS`` is set; whether it did."""
    env = os.environ if environ is None else environ
    if env.get(ENV):
        return False
    env[ENV] = OPTIONS
    return True
