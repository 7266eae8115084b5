"""gRPC keepalive on a coordinator's channels, so a peer that went silent fails its calls.

A peer whose node is powered off sends nothing back, not even a reset: a call in flight to it
waits until TCP gives up, minutes later, and a ParameterServerStrategy coordinator with work on
that worker stalls until the worker is made again elsewhere. With HTTP/2 keepalive pings on
the coordinator's channels such a call fails (UNAVAILABLE) once a ping goes unanswered, and the
coordinator treats the worker as lost: its work goes to the other workers until it is back.

TensorFlow reads its channels' options from ``TF_GRPC_DEFAULT_OPTIONS`` once, when it makes its
first channel: :func:`ensure_keepalive` must run before that. A value the user set stands.
Pings go only while a call is open, and gRPC's own limits (two pings until the client sends
data again) keep an idle open stream within what a server accepts. A peer too busy to answer
a ping for 20 s counts as lost as well: the coordinator gives its work to the others and takes
it back when it answers again (a PS counts as lost only after the same).
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

#: Where TensorFlow reads its default gRPC channel options ("name=value,...").
ENV = "TF_GRPC_DEFAULT_OPTIONS"
#: Channel options (gRPC core's names), milliseconds.
CHANNEL_OPTIONS = {
    # A ping after this long without a frame from the peer, while a call is open...
    "grpc.keepalive_time_ms": 10_000,
    # ...and the channel (with its calls) fails when no answer came within this. Any ping:
    # gRPC's own flow-control pings, sent while data flows, wait 60 s for theirs by default,
    # and while one is out no keepalive ping is sent.
    "grpc.keepalive_timeout_ms": 20_000,
    "grpc.http2.ping_timeout_ms": 20_000,
    # A new connection that gets no answer (a silent peer accepts nothing) is given up after
    # this, not gRPC's default 20 s, so the coordinator's next try on that worker fails fast.
    "grpc.min_reconnect_backoff_ms": 5_000,
}
OPTIONS = ",".join(f"{name}={value}" for name, value in CHANNEL_OPTIONS.items())


def ensure_keepalive(environ: MutableMapping[str, str] | None = None) -> bool:
    """Set the keepalive options unless ``TF_GRPC_DEFAULT_OPTIONS`` is set; whether it did."""
    env = os.environ if environ is None else environ
    if env.get(ENV):
        return False
    env[ENV] = OPTIONS
    return True
