"""`taas-controlplane`: build the binaries and images, run a local control plane for kubectl, or
regenerate the TFJob CRD.

taas-controlplane build            # build (or find cached) etcd and kube-apiserver
taas-controlplane env              # print the PATH (helm, kubectl) and KUBECONFIG lines to eval
taas-controlplane images [NAME] [--push REGISTRY/PREFIX]
                                   # build (or find cached) the operator and trainer images;
                                   # push them (e.g. to the cluster's registry)
taas-controlplane up [--dir DIR]   # start them; prints the KUBECONFIG line; Ctrl-C stops
taas-controlplane crd [--fetch]    # regenerate the TFJob CRD (see taas_controlplane.crd)
taas-controlplane cluster up [--nodes N] [--dir DIR] [--images] [--no-network-policy]
                            [--gang scheduler-plugins] [--kueue [tfjob|pod]] [--katib]
                            [--kueue-pods-ready-timeout SECONDS]
                                   # a whole cluster of N real nodes (default 1) on this
                                   # machine (root); Ctrl-C stops and cleans
taas-controlplane cluster clean    # remove what a killed `cluster up` left behind
taas-controlplane sim up --nodes N [--gpu-nodes M] [--dir DIR] [--default-timings]
                            [--gang scheduler-plugins] [--kueue [tfjob|pod]]
                            [--kueue-pods-ready-timeout SECONDS]
                                   # a simulated cluster (kwok nodes); Ctrl-C stops
taas-controlplane sim down         # stop the running `sim up`s
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from taas_controlplane import userenv
from taas_controlplane.build.binaries import BuildError
from taas_controlplane.build.binaries import main as build_main
from taas_controlplane.build.image_store import ImageBuildError
from taas_controlplane.build.images import TARGETS, ensure_image, repo_root
from taas_controlplane.build.images import main as images_main
from taas_controlplane.cluster.cluster import Cluster, ClusterError
from taas_controlplane.cluster.katib import KatibOptions
from taas_controlplane.cluster.machine_lock import clean_stale_run
from taas_controlplane.cluster.registry import RegistryError, push_files
from taas_controlplane.cluster.scheduling import SchedulingOptions
from taas_controlplane.cluster.storage import DEFAULT_CLASS, SHARED_CLASS
from taas_controlplane.controlplane.etcd_apiserver import ControlPlane, ControlPlaneError
from taas_controlplane.foreground import hold, stop_on_signals


def _up(directory: Path | None) -> int:
    if directory is not None:
        directory.mkdir(parents=True, exist_ok=True)
    plane = ControlPlane(directory)
    stop = stop_on_signals()
    try:
        plane.start()
    except (BuildError, ControlPlaneError) as err:
        print(f"error: {err}", file=sys.stderr)
        plane.stop()
        return 1
    print(f"kube-apiserver {plane.version} ready at {plane.server}")
    print("In another shell:")
    print(f"  export KUBECONFIG={plane.kubeconfig}")
    print("  kubectl get ns")
    print("Ctrl-C stops etcd and kube-apiserver.", flush=True)
    try:
        return hold(stop, plane.exited, plane.directory)
    finally:
        plane.stop(remove=directory is None)
        print("control plane stopped", flush=True)


def _crd(fetch: bool) -> int:
    from taas_controlplane.crd.generate import GenerationError, write

    try:
        changed = write(fetch=fetch)
    except (BuildError, ControlPlaneError, GenerationError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    for path in changed:
        print(f"wrote {path}")
    if changed:
        print("now run `python tests/deploy/sync_chart.py` (the chart's copy, install.yaml)")
    else:
        print("the CRD and the schema of `taas validate` are up to date")
    return 0


def _cluster_up(
    directory: Path | None,
    network_policy: bool,
    images: bool,
    scheduling: SchedulingOptions,
    nodes: int = 1,
    katib: KatibOptions | None = None,
) -> int:
    if directory is not None:
        directory.mkdir(parents=True, exist_ok=True)
    cluster = Cluster(
        directory, network_policy=network_policy, scheduling=scheduling, nodes=nodes, katib=katib
    )
    stop = stop_on_signals()
    try:
        cluster.start()
        for target in TARGETS if images else ():
            image = ensure_image(target)
            print(f"importing {image.reference} ...", flush=True)
            cluster.load_image(image.archive)
    except (ClusterError, ImageBuildError) as err:
        print(f"error: {err}", file=sys.stderr)
        cluster.stop()
        return 1
    net = cluster.network
    if nodes == 1:
        print(f"one-node cluster ready (node {cluster.node_name}, pods on {net.pod_cidr})")
    else:
        print(f"{nodes}-node cluster ready (control plane on {net.host_address}):")
        for i, name in enumerate(cluster.node_names):
            print(f"  {name}: node IP {net.node_ip(i)}, pods on {net.node_pod_cidr(i)}")
    print("In another shell:")
    print(f"  export KUBECONFIG={cluster.kubeconfig}")
    print("  kubectl get pods -A -o wide")
    print(f"Images: `{cluster.ctr_hint}` (imagePullPolicy: Never or IfNotPresent)")
    registry = cluster.registry
    print(
        f"Registry: nodes pull from {registry.address}; push to {registry.push_address} "
        f"(`taas-controlplane images --push {registry.push_address}/taas`; credentials in "
        f"{registry.auth_file})"
    )
    print(
        f"Storage classes: {DEFAULT_CLASS} (default, node-local), {SHARED_CLASS} (ReadWriteMany, "
        f"every node); volumes under {cluster.storage.volumes}"
    )
    for line in _scheduling_lines(scheduling):
        print(line)
    if katib is not None and katib.enabled:
        print(
            "Katib: Experiments in namespaces labelled "
            "katib.kubeflow.org/metrics-collector-injection=enabled; TaaS's TFJob CRD is "
            "installed: install the chart with --set crds.install=false "
            "(docs/hyperparameter-search.md)"
        )
    print("Ctrl-C stops every component and removes what the cluster created.", flush=True)
    try:
        return hold(stop, cluster.exited, cluster.directory)
    finally:
        cluster.stop()
        print("cluster stopped and cleaned up", flush=True)


def _add_scheduling_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--gang",
        choices=["scheduler-plugins"],
        default=None,
        help="also run scheduler-plugins' coscheduling scheduler and controller (with the "
        "PodGroup CRD), as scheduler `scheduler-plugins-scheduler`",
    )
    parser.add_argument(
        "--kueue",
        nargs="?",
        const="tfjob",
        choices=["tfjob", "pod"],
        default=None,
        help="also run Kueue (its CRDs, RBAC and webhooks); `tfjob` (the default) turns on its "
        "kubeflow.org/tfjob integration, `pod` leaves it off (for the operator's "
        "--kueue-pod-groups)",
    )
    parser.add_argument(
        "--kueue-pods-ready-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="Kueue's waitForPodsReady timeout: an admitted job whose pods are not all ready "
        "in time is evicted and requeued (default: Kueue's own, 30 minutes)",
    )


def _scheduling(args: argparse.Namespace) -> SchedulingOptions:
    """The schedulers asked for. TaaS's TFJob CRD is left to the chart (Helm refuses to adopt a
    CRD it did not make): Kueue starts its TFJob integration when it next polls for the API."""
    return SchedulingOptions(
        coscheduling=args.gang == "scheduler-plugins",
        kueue=args.kueue is not None,
        kueue_tfjob=args.kueue != "pod",
        kueue_pods_ready_timeout=args.kueue_pods_ready_timeout,
    )


def _scheduling_lines(options: SchedulingOptions) -> list[str]:
    """What `cluster up` / `sim up` say about the schedulers of gang jobs they started."""
    lines = []
    if options.coscheduling:
        lines.append(
            f"Gang scheduling: pods with schedulerName {options.scheduler_name} (operator: "
            "--gang-scheduler-name=scheduler-plugins)"
        )
    if options.kueue:
        how = "kubeflow.org/tfjob integration on" if options.kueue_tfjob else "pod integration"
        timeout = options.kueue_pods_ready_timeout
        ready = f"{timeout:g}s" if timeout is not None else "Kueue's default, 30m"
        lines.append(
            f"Kueue: {how}, waitForPodsReady timeout {ready}; label TFJobs "
            "kueue.x-k8s.io/queue-name (docs/gang-scheduling.md)"
        )
    return lines


def build_parser() -> argparse.ArgumentParser:
    """The command line (the docs' checks parse their `taas-controlplane` lines with it)."""
    parser = argparse.ArgumentParser(
        prog="taas-controlplane",
        description="A real kube-apiserver + etcd on 127.0.0.1, built from Go modules.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="build the binaries into ~/.cache/taas (once)")
    build.add_argument(
        "names", nargs="*", help="etcd, kube-apiserver, helm, kubectl, training-operator, ..."
    )
    sub.add_parser(
        "env",
        help="print shell lines putting helm and kubectl on PATH (and KUBECONFIG of a running "
        'one-node cluster): eval "$(taas-controlplane env)"',
    )
    images = sub.add_parser(
        "images",
        help="build the Dockerfile's images with buildah into ~/.cache/taas/images (once)",
        description="Build (or find cached) the operator and trainer images; print each one's "
        "reference, OCI archive (for `ctr -n k8s.io images import`) and manifest digest.",
    )
    images.add_argument("names", nargs="*", help="operator, trainer (default: both)")
    images.add_argument(
        "--context", type=Path, default=None, help="the TaaS checkout (default: this one)"
    )
    images.add_argument(
        "--push",
        metavar="REGISTRY/PREFIX",
        default=None,
        help="then push each as REGISTRY/PREFIX/taas-<name>:<version> (buildah, TLS), e.g. "
        "127.0.0.1:5001/taas: the push side of `cluster up`'s registry (its credentials found "
        "by themselves; nodes pull the same repositories from 10.244.0.1:5000)",
    )
    images.add_argument(
        "--cert-dir",
        type=Path,
        default=None,
        help="CA certificates (*.crt) the registry's certificate is checked against (default: "
        "the running cluster's CA when pushing to its registry, else the system's); other "
        "registries' credentials: REGISTRY_AUTH_FILE",
    )
    up = sub.add_parser("up", help="start a control plane and wait for Ctrl-C")
    up.add_argument("--dir", type=Path, default=None, help="keep certs, logs, kubeconfig here")
    crd = sub.add_parser("crd", help="regenerate the TFJob CRD and the schema `taas validate` uses")
    crd.add_argument(
        "--fetch",
        action="store_true",
        help="first refresh the cached Kubernetes OpenAPI from this project's kube-apiserver",
    )
    cluster = sub.add_parser("cluster", help="a whole Kubernetes cluster on this machine (root)")
    cluster_sub = cluster.add_subparsers(dest="action", required=True)
    cluster_up = cluster_sub.add_parser("up", help="start it and wait for Ctrl-C")
    cluster_up.add_argument("--dir", type=Path, default=None, help="keep its files here")
    cluster_up.add_argument(
        "--nodes",
        type=int,
        default=1,
        help="real nodes, each in its own network namespace with its own containerd, kubelet, "
        "kube-proxy and kube-router (default 1: one node on the host's bridge)",
    )
    cluster_up.add_argument(
        "--images", action="store_true", help="import the operator and trainer images (built once)"
    )
    cluster_up.add_argument(
        "--no-network-policy", action="store_true", help="do not run kube-router's firewall"
    )
    _add_scheduling_flags(cluster_up)
    cluster_up.add_argument(
        "--katib",
        action="store_true",
        help="also run Katib (hyperparameter search: PostgreSQL, db-manager, controller, "
        "webhooks), after applying TaaS's TFJob CRD",
    )
    cluster_sub.add_parser("clean", help="remove what a killed `cluster up` left behind")
    sim = sub.add_parser("sim", help="a simulated cluster: real control plane, kwok nodes")
    sim_sub = sim.add_subparsers(dest="action", required=True)
    sim_up = sim_sub.add_parser("up", help="start it and wait for Ctrl-C")
    sim_up.add_argument("--nodes", type=int, default=20, help="simulated nodes (default 20)")
    sim_up.add_argument("--gpu-nodes", type=int, default=0, help="of them with 8 nvidia.com/gpu")
    sim_up.add_argument("--dir", type=Path, default=None, help="keep its files and logs here")
    sim_up.add_argument(
        "--default-timings",
        action="store_true",
        help="Kubernetes' node-failure timings instead of the shortened ones for tests",
    )
    _add_scheduling_flags(sim_up)
    sim_sub.add_parser("down", help="stop the running `sim up`s")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "sim":
        from taas_controlplane.sim import cli as sim_cli

        if args.action == "down":
            return sim_cli.down()
        return sim_cli.up(
            args.nodes, args.gpu_nodes, args.dir, args.default_timings, _scheduling(args)
        )
    if args.command == "build":
        return build_main(args.names)
    if args.command == "env":
        return userenv.main()
    if args.command == "crd":
        return _crd(args.fetch)
    if args.command == "images":
        unknown = sorted(set(args.names) - set(TARGETS))
        if unknown:
            parser.error(f"unknown image {', '.join(unknown)}: choose from {', '.join(TARGETS)}")
        # A push to the running cluster's registry trusts its CA unless told otherwise, and
        # goes to its push side with this run's credentials.
        try:
            trusted, auth = (None, None) if args.push is None else push_files(args.push)
        except RegistryError as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
        return images_main(args.names, args.context, args.push, args.cert_dir or trusted, auth)
    if args.command == "cluster":
        if args.action == "clean":
            print(clean_stale_run())
            return 0
        crd = repo_root() / "manifests" / "crd" / "tfjobs.kubeflow.org.yaml"
        katib = KatibOptions(enabled=True, job_crds=[crd]) if args.katib else None
        return _cluster_up(
            args.dir, not args.no_network_policy, args.images, _scheduling(args), args.nodes, katib
        )
    return _up(args.dir)


if __name__ == "__main__":
    sys.exit(main())
