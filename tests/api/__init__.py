"""The TFJob API as a real kube-apiserver serves it: the generated CRD's schema and CEL rules,
`taas validate` agreeing with `kubectl apply --dry-run=server` case by case, server-side
validation (needs the control plane)."""
