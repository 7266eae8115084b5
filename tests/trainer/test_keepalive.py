"""`taas.runtime.keepalive`: the coordinator's gRPC keepalive, and the user's own options
standing (what a silent worker does with it: tests/trainer/test_keras_faults.py)."""

from __future__ import annotations

import pytest

from taas.runtime.keepalive import ENV, ensure_keepalive

pytestmark = pytest.mark.fast


def test_keepalive_options_are_set_when_none_are() -> None:
    env: dict[str, str] = {}
    assert ensure_keepalive(env)
    options = dict(pair.split("=") for pair in env[ENV].split(","))
    assert options == {
        "grpc.keepalive_time_ms": "10000",
        "grpc.keepalive_timeout_ms": "20000",
        "grpc.http2.ping_timeout_ms": "20000",
        "grpc.min_reconnect_backoff_ms": "5000",
    }


def test_the_users_own_grpc_options_stand() -> None:
    env = {ENV: "grpc.keepalive_time_ms=60000"}
    assert not ensure_keepalive(env)
    assert env == {ENV: "grpc.keepalive_time_ms=60000"}
