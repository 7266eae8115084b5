"""The TFJob CRD's openAPIV3Schema, shipped with the package, for `taas validate` and the planner.

    tfjob_schema() -> Mapping      # the whole object's schema (checked once by check_schema)
    template_schema() -> Mapping   # spec.tfReplicaSpecs.<type>.template (a PodTemplateSpec)

`tfjob.schema.json` is generated together with manifests/crd/tfjobs.kubeflow.org.yaml by
`taas-controlplane crd` (tools/taas_controlplane/crd): the same schema the apiserver enforces,
including the pod template's, generated from the Kubernetes API types. A test regenerates both
and fails when they differ from the committed files.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

from taas_operator.api.structural import check_schema


@cache
def tfjob_schema() -> Mapping[str, Any]:
    """The TFJob's openAPIV3Schema."""
    text = resources.files("taas_operator.api").joinpath("tfjob.schema.json").read_text("utf-8")
    schema = json.loads(text)
    check_schema(schema)
    return schema


def template_schema() -> Mapping[str, Any]:
    """The schema of a replica's pod template."""
    spec = tfjob_schema()["properties"]["spec"]["properties"]
    return spec["tfReplicaSpecs"]["additionalProperties"]["properties"]["template"]
