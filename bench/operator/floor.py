"""The floor: the least a controller must do, with nothing else. Not a controller.

    python -m bench.operator.floor --kubeconfig K [--concurrency 32]

One watch on TFJobs in every namespace; for each new TFJob, build the planner's desired pods and
services (the very objects TaaS creates) and POST them concurrently from a thread pool. No status,
no events, no reads, no retries, no reconcile: exactly one create per object. Its time, writes,
CPU and memory are what any Python controller on this apiserver cannot beat by much.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

from kubernetes import client, config, watch

from taas_operator.api import parse_tfjob
from taas_operator.planner import BuildOptions, desired_pods, desired_services


def _create(core: client.CoreV1Api, manifest: dict[str, Any]) -> None:
    namespace = manifest["metadata"]["namespace"]
    try:
        if manifest["kind"] == "Pod":
            core.create_namespaced_pod(namespace, cast(Any, manifest))
        else:
            core.create_namespaced_service(namespace, cast(Any, manifest))
    except client.ApiException as err:
        if err.status != 409:  # already exists: fine (a re-delivered watch event)
            print(
                f"floor: create {manifest['kind']} failed: {err.status} {err.reason}",
                file=sys.stderr,
                flush=True,
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args(argv)

    configuration = client.Configuration()
    config.load_kube_config(config_file=args.kubeconfig, client_configuration=configuration)
    configuration.connection_pool_maxsize = args.concurrency
    api = client.ApiClient(configuration)
    core = client.CoreV1Api(api)
    custom = client.CustomObjectsApi(api)
    options = BuildOptions()
    seen: set[str] = set()
    with ThreadPoolExecutor(args.concurrency) as pool:
        resource_version = ""
        while True:
            try:
                for event in watch.Watch().stream(
                    custom.list_cluster_custom_object,
                    "kubeflow.org",
                    "v1",
                    "tfjobs",
                    resource_version=resource_version,
                    timeout_seconds=300,
                ):
                    obj = event["object"]
                    resource_version = obj["metadata"].get("resourceVersion", resource_version)
                    uid = obj["metadata"].get("uid", "")
                    if event["type"] != "ADDED" or uid in seen:
                        continue
                    seen.add(uid)
                    job = parse_tfjob(obj)
                    for manifest in [*desired_pods(job, options), *desired_services(job)]:
                        pool.submit(_create, core, manifest)
            except client.ApiException as err:
                if err.status != 410:
                    raise
                resource_version = ""  # history compacted: list again (`seen` dedups)


if __name__ == "__main__":
    sys.exit(main())
