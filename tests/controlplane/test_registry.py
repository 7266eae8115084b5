"""The cluster's registry (taas_controlplane.cluster.registry) on a real control plane's CA: it
serves the registry API over TLS with a certificate that CA signed, and only over TLS; the files
containerd and buildah read name it and its CA; its pull side refuses every write and its push
side every request without this run's credentials, and what is pushed on one is pulled on the
other; `images --push` refuses a destination it cannot use. The registry itself is CNCF
distribution, built from its Go module."""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from taas_controlplane.build.image_store import ImageBuildError
from taas_controlplane.build.images import ImageArchive, push_reference
from taas_controlplane.cluster.registry import PUSH_USER, Registry, RegistryError
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
    port, push_port = free_ports(2)
    registry = Registry(tmp_path / "run", tmp_path / "storage", "127.0.0.1", port, push_port)
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
        procs = list(registry.procs.values())
        assert len(procs) == 2
    finally:
        registry.stop()
    assert all(proc.poll() is not None for proc in procs) and not registry.exited()
    assert (tmp_path / "storage").is_dir()  # kept, as the nodes' image stores are


def _request(
    url: str,
    context: ssl.SSLContext,
    method: str = "GET",
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, bytes]:
    request = urllib.request.Request(url, body, headers or {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            return int(response.status), response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def _upload(base: str, blob: bytes, context: ssl.SSLContext, headers: dict[str, str]) -> str:
    """Push `blob` into `taas/taas-trainer` (an upload session, then its one PUT); its digest."""
    digest = "sha256:" + hashlib.sha256(blob).hexdigest()
    request = urllib.request.Request(
        base + "/v2/taas/taas-trainer/blobs/uploads/", b"", headers, method="POST"
    )
    with urllib.request.urlopen(request, timeout=10, context=context) as response:
        assert response.status == 202
        location = response.headers["Location"]
    url = location if location.startswith("https://") else base + location
    status, answer = _request(
        f"{url}{'&' if '?' in url else '?'}digest={digest}", context, "PUT", blob,
        {**headers, "Content-Type": "application/octet-stream"},
    )  # fmt: skip
    assert status == 201, answer
    return digest


@pytest.mark.builds("registry")
def test_pushes_need_the_runs_credentials_on_loopback_and_pulls_see_them(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    """The pull side (the bridge address in a cluster) refuses every write to anyone; the push
    side (loopback) wants the run's password; a blob and a tag pushed there are pulled from the
    pull side, the same repository by name."""
    port, push_port = free_ports(2)
    registry = Registry(tmp_path / "run", tmp_path / "storage", "127.0.0.1", port, push_port)
    registry.start(control_plane)
    trusted = ssl.create_default_context(cafile=str(control_plane.ca_file))
    pull, push = f"https://{registry.address}", f"https://{registry.push_address}"
    try:
        for name in ("htpasswd", "auth.json"):  # the run's credentials: root's alone
            assert (registry.directory / name).stat().st_mode & 0o777 == 0o600
        (entry,) = json.loads(registry.auth_file.read_text())["auths"].items()
        assert entry[0] == registry.push_address
        user, password = base64.b64decode(entry[1]["auth"]).decode().split(":")
        assert user == PUSH_USER and len(password) == 32
        assert (registry.directory / "htpasswd").read_text().startswith(f"{PUSH_USER}:$2b$")
        good = {"Authorization": "Basic " + entry[1]["auth"]}
        bad = {"Authorization": "Basic " + base64.b64encode(b"taas:guess").decode()}

        blob = b"a layer of taas\n"
        digest = "sha256:" + hashlib.sha256(blob).hexdigest()
        upload = f"/v2/taas/taas-trainer/blobs/uploads/?digest={digest}"
        # the pull side: no write of any kind, whatever the credentials
        for headers in ({}, good):
            status, answer = _request(pull + upload, trusted, "POST", blob, headers)
            assert status == 405, (status, answer)  # read-only mode's answer (the push side: 201)
        status, answer = _request(
            pull + f"/v2/taas/taas-trainer/manifests/{digest}", trusted, "DELETE"
        )
        assert status == 405, (status, answer)
        # the push side: nothing without the password, not even reads
        for headers in ({}, bad):
            assert _request(push + "/v2/", trusted, headers=headers)[0] == 401
            assert _request(push + upload, trusted, "POST", blob, headers)[0] == 401
        # with it, a blob and a manifest tagged 0.1.0 ...
        assert _upload(push, blob, trusted, good) == digest
        config = b"{}"
        config_digest = _upload(push, config, trusted, good)
        manifest = json.dumps({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": config_digest, "size": len(config)},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                        "digest": digest, "size": len(blob)}],
        }).encode()  # fmt: skip
        oci = {"Content-Type": "application/vnd.oci.image.manifest.v1+json"}
        status, answer = _request(push + "/v2/taas/taas-trainer/manifests/0.1.0", trusted, "PUT",
                                  manifest, {**good, **oci})  # fmt: skip
        assert status == 201, answer
        # ... are pulled from the pull side, without credentials
        accept = {"Accept": oci["Content-Type"]}
        status, answer = _request(pull + "/v2/taas/taas-trainer/manifests/0.1.0", trusted,
                                  headers=accept)  # fmt: skip
        assert (status, answer) == (200, manifest)
        assert _request(pull + f"/v2/taas/taas-trainer/blobs/{digest}", trusted) == (200, blob)
    finally:
        registry.stop()


@pytest.mark.builds("registry")
def test_a_port_taken_is_a_clear_error(control_plane: ControlPlane, tmp_path: Path) -> None:
    port, push_port = free_ports(2)
    first = Registry(tmp_path / "a", tmp_path / "storage", "127.0.0.1", port, push_port)
    first.start(control_plane)
    try:
        # either side's port taken
        for ports in ((port, free_ports(1)[0]), (free_ports(1)[0], push_port)):
            second = Registry(tmp_path / "b", tmp_path / "storage", "127.0.0.1", *ports)
            taken = f"127.0.0.1:{ports[0] if ports[0] == port else ports[1]}"
            with pytest.raises(RegistryError, match=f"cannot listen on {taken} .*in use"):
                second.start(control_plane, timeout=30)
            assert second.procs == {}
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
