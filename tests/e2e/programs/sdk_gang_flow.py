"""Kubeflow's own SDK gang flow (`kubeflow-training`, its test_sdk_e2e_with_gang_scheduling),
run with the SDK in its own virtual environment as a user has it (tests/e2e/sdk_venv.py).

    python sdk_gang_flow.py KUBECONFIG NAMESPACE MILLICPU IMAGE

A TFJob of 2 workers, each asking for MILLICPU (the node holds one, not both), with
schedulingPolicy.minAvailable 2 and the scheduler-plugins scheduler: created through
TrainingClient, it must stay Created (not Running) with a reason; `update_job` lowering
minAvailable to 1 must let it run to Succeeded. Kubeflow's test asks for minAvailable 10 of 1
replica; TaaS's CRD refuses a minAvailable above the replicas, so here it is the node that
cannot hold the gang. Prints one JSON line per stage; exit 1 when a stage is not as expected.
"""

import json
import sys
import time

from kubeflow.training import (
    KubeflowOrgV1ReplicaSpec,
    KubeflowOrgV1RunPolicy,
    KubeflowOrgV1SchedulingPolicy,
    KubeflowOrgV1TFJob,
    KubeflowOrgV1TFJobSpec,
    TrainingClient,
)
from kubeflow.training.constants import constants
from kubernetes.client import (
    V1Container,
    V1ObjectMeta,
    V1PodSpec,
    V1PodTemplateSpec,
    V1ResourceRequirements,
)

NAME = "tfjob-mnist-ci-test"


def tfjob(namespace: str, millicpu: str, image: str, min_available: int) -> KubeflowOrgV1TFJob:
    container = V1Container(
        name="tensorflow",
        image=image,
        image_pull_policy="Never",
        command=["sh", "-c", "echo step 1; sleep 2; echo done"],
        resources=V1ResourceRequirements(requests={"cpu": f"{millicpu}m", "memory": "16Mi"}),
    )
    worker = KubeflowOrgV1ReplicaSpec(
        replicas=2,
        restart_policy="Never",
        template=V1PodTemplateSpec(
            spec=V1PodSpec(containers=[container], scheduler_name="scheduler-plugins-scheduler")
        ),
    )
    return KubeflowOrgV1TFJob(
        api_version=constants.API_VERSION,
        kind=constants.TFJOB_KIND,
        metadata=V1ObjectMeta(name=NAME, namespace=namespace),
        spec=KubeflowOrgV1TFJobSpec(
            run_policy=KubeflowOrgV1RunPolicy(
                clean_pod_policy="None",
                scheduling_policy=KubeflowOrgV1SchedulingPolicy(min_available=min_available),
            ),
            tf_replica_specs={"Worker": worker},
        ),
    )


def conditions(client: TrainingClient, namespace: str) -> list:
    return [c.to_dict() for c in client.get_job_conditions(NAME, namespace)]


def main() -> int:
    kubeconfig, namespace, millicpu, image = sys.argv[1:5]
    client = TrainingClient(config_file=kubeconfig, job_kind=constants.TFJOB_KIND)
    client.create_job(job=tfjob(namespace, millicpu, image, 2), namespace=namespace)
    client.wait_for_job_conditions(
        NAME, namespace, expected_conditions={"Created"}, wait_timeout=60, polling_interval=1
    )
    time.sleep(15)  # the gang has had its chance to be placed
    created, running = (
        client.is_job_created(NAME, namespace),
        client.is_job_running(NAME, namespace),
    )
    stuck = {"stage": "minAvailable 2", "created": created, "running": running}
    print(
        json.dumps({**stuck, "conditions": conditions(client, namespace)}, default=str), flush=True
    )
    if not created or running:
        return 1
    client.update_job(tfjob(namespace, millicpu, image, 1), NAME, namespace)
    client.wait_for_job_conditions(NAME, namespace, wait_timeout=240, polling_interval=2)
    done = {"stage": "minAvailable 1", "succeeded": client.is_job_succeeded(NAME, namespace)}
    print(
        json.dumps({**done, "conditions": conditions(client, namespace)}, default=str), flush=True
    )
    client.delete_job(NAME, namespace)
    return 0 if done["succeeded"] else 1


if __name__ == "__main__":
    sys.exit(main())
