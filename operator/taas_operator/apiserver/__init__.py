"""The one door to Kubernetes: every request TaaS makes to a kube-apiserver (the operator, the
client and `taas submit|logs|get|wait|delete`, the dashboard, `taas tensorboard`, `taas
validate --server`) goes through this package, and nothing else opens HTTP to an apiserver or
imports the official `kubernetes` package (import-linter contracts; tests/core/test_one_door.py).

    errors       the one error hierarchy (ApiError -> ConfigError, Unreachable, Forbidden,
                 Invalid, NotFound, Conflict), in the operator's words or a person's
    transport    aiohttp requests and streams to one apiserver (Endpoint: where, and as whom)
    credentials  the one credential loader, in kubectl's order (flag, $KUBECONFIG,
                 ~/.kube/config, the pod's service account)
    listwatch    the one list-then-watch loop (410 re-list, back-off, bookmarks)
    verbs        the operator's verbs (KubeClient) on its event loop
    kubeapi      a person's async requests and streams (KubeApi: the dashboard's)
    blocking     the same for blocking callers (Connection: the TFJob client, the CLI), on a
                 private event loop in a thread

No kopf: the controller builds kopf's login from `KubeClient.endpoint`. Nothing is imported here.
"""
