"""The Kubernetes side of TaaS: the kopf operator serving kubeflow.org/v1 TFJobs.

Modules (each one job; only `kube` talks to the API). Nothing is imported here, so
`taas_operator.controller.flags` stays light for the `taas` command line:
    kube        KubeClient: JSON reads/writes of TFJobs, pods, services, NetworkPolicies, events
    triggers    Controller: watch events -> the job cache and the work queue
    workqueue   WorkQueue: coalesced, serialized passes per job and one on-time timer per job
    jobpass     JobPass: one pass = read -> `engine.plan_job` -> carry out the Plan
    jobcache    JobCache: the newest version of every TFJob seen
    echoes      Echoes: watch events that only echo the operator's own writes
    status      StatusWriter: the status write (resourceVersion-checked, Conflict -> re-read)
    actions     Actions: create/delete pods and services, the NetworkPolicy, the TTL delete
    events      EventRecorder: one event per kind and verb per pass; each Warning once
    pruning     PrunedRecreations: status.recreations kept in memory under Kubeflow's CRD
    progress    ProgressPoller: each running job's chief read for training progress (why pull)
    metrics     Prometheus metrics (Kubeflow's job counters and TaaS's own), /metrics
    handlers    build_registry(controller), kopf_settings(settings): kopf watch handlers
                (no finalizers, no kopf bookkeeping on objects)
    flags       add_arguments(parser), settings_from_args(args), UsageError
    main        run(settings, kubeconfig), run_from_args(args), main(argv): kopf.run
"""
