"""The operator on a real kube-apiserver (tests/harness/operator_run.py): passes, lifecycle,
adoption, ownership, bounds, security and RBAC, gangs, Kueue, TensorBoard objects, metrics,
progress, migration, resilience; the fast ones on the in-memory apiserver
(tests/harness/fakeapi). No kubelet: tests play it by writing pod status."""
