"""The cluster's registry (taas_controlplane.cluster.registry) on a real control plane's CA: it
serves the registry API over TLS with a certificate that CA signed, and only over TLS; the files
containerd and buildah read name it and its CA; `images --push` refuses a destination it cannot
use. The registry itself is CNCF distribution, built from its Go module."""

from __future__ import annotations

import http.client
import json
import ssl
import urllib.request
from pathlib import Path

import pytest

from taas_controlplane.build.image_store import ImageBuildError
from taas_controlplane.build.images import ImageArchive, push_reference
from taas_controlplane.cluster.registry import Registry, RegistryError
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane
from taas_operator.processes import free_ports

pytestmark = [pytest.mark.controlplane, pytest.mark.timeout(300)]


def _get(url: str, context: ssl.SSLContext) -> tuple[int, dict[str, str]]:
    with urllib.request.urlopen(url, timeout=10, context=context) as response:
        return int(response.status), dict(response.headers)


@pytest.mark.builds("registry")
def test_serves_over_tls_with_the_cluster_ca_and_leaves_nothing_running(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    (port,) = free_ports(1)
    registry = Registry(tmp_path / "run", tmp_path / "storage", "127.0.0.1", port)
    registry.start(control_plane)
    try:
        trusted = ssl.create_default_context(cafile=str(control_plane.ca_file))
        status, headers = _get(f"https://{registry.address}/v2/", trusted)
        assert status == 200
        assert headers["Docker-Distribution-Api-Version"] == "registry/2.0"
        catalog = json.loads(
            urllib.request.urlopen(
                f"https://{registry.address}/v2/_catalog", timeout=10, context=trusted
            ).read()
        )
        assert catalog == {"repositories": []}
        # Not trusted without the cluster's CA; no plain HTTP either.
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
            _get(f"https://{registry.address}/v2/", ssl.create_default_context())
        plain = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        plain.request("GET", "/v2/")
        assert plain.getresponse().status == 400  # Go's answer to HTTP on a TLS port
        plain.close()

        # containerd's host configuration and buildah's --cert-dir, in one directory.
        assert registry.cert_dir == registry.hosts_dir / registry.address
        assert (registry.cert_dir / "ca.crt").read_bytes() == Path(
            control_plane.ca_file
        ).read_bytes()
        hosts = (registry.cert_dir / "hosts.toml").read_text()
        assert f'server = "https://{registry.address}"' in hosts
        assert f'[host."https://{registry.address}"]' in hosts
        assert f'ca = "{registry.cert_dir / "ca.crt"}"' in hosts
        proc = registry.proc
        assert proc is not None
    finally:
        registry.stop()
    assert proc.poll() is not None and not registry.exited()
    assert (tmp_path / "storage").is_dir()  # kept, as the nodes' image stores are


@pytest.mark.builds("registry")
def test_a_port_taken_is_a_clear_error(control_plane: ControlPlane, tmp_path: Path) -> None:
    first = Registry(tmp_path / "a", tmp_path / "storage", "127.0.0.1", free_ports(1)[0])
    first.start(control_plane)
    try:
        host, port = first.address.split(":")
        second = Registry(tmp_path / "b", tmp_path / "storage", host, int(port))
        with pytest.raises(RegistryError, match=f"cannot listen on {first.address} .*in use"):
            second.start(control_plane, timeout=30)
        assert second.proc is None
    finally:
        first.stop()


def _image(reference: str) -> ImageArchive:
    return ImageArchive(
        target="trainer", reference=reference, archive=Path("/nonexistent"), digest="sha256:0",
        image_id="sha256:0", size=0, base="base",
    )  # fmt: skip


def test_push_reference_keeps_the_image_name_and_tag() -> None:
    image = _image("ghcr.io/taas-dev/taas-trainer:0.1.0")
    pushed = push_reference(image, "10.244.0.1:5000/taas")
    assert pushed == "10.244.0.1:5000/taas/taas-trainer:0.1.0"
    assert push_reference(image, "registry.example.com/") == (
        "registry.example.com/taas-trainer:0.1.0"
    )


@pytest.mark.parametrize("destination", ["", "https://10.244.0.1:5000/taas", "/taas"])
def test_push_refuses_a_destination_it_cannot_use(destination: str) -> None:
    with pytest.raises(ImageBuildError, match="give REGISTRY/PREFIX without a scheme"):
        push_reference(_image("ghcr.io/taas-dev/taas-trainer:0.1.0"), destination)
