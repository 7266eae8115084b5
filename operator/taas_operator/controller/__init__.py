"""The Kubernetes side of TaaS: the kopf operator serving kubeflow.org/v1 TFJobs.

Modules (each one job; only `kube` talks to the API). Nothing is imported here, so
`taas_operator.controller.flags` stays light for the `taas` command line:
    kube        KubeClient: JSON reads/writes of TFJobs, pods, services, NetworkPolicies, events
    workqueue   WorkQueue: coalesced, serialized passes per job and one on-time timer per job
    reconciler  Controller: one pass = read -> `engine.reconcile` -> carry out the Plan
    handlers    build_registry(controller), kopf_settings(settings): kopf watch handlers
                (no finalizers, no kopf bookkeeping on objects)
    flags       add_arguments(parser), settings_from_args(args), UsageError
    main        run(settings, kubeconfig), run_from_args(args), main(argv): kopf.run
"""
