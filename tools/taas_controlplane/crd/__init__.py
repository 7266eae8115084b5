"""The TFJob CRD, generated: TaaS's own fields from `base.yaml`, the pod template's schema from
the Kubernetes API types kube-apiserver serves (see `generate` and `structural_schema`)."""
