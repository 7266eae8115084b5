"""The Kubernetes side of TaaS: the operator serving kubeflow.org/v1 TFJobs.

Modules (each one job; only `kube` and `transport` talk to the API). Nothing is imported here,
so `taas_operator.controller.flags` stays light for the `taas` command line:
    transport   Transport: aiohttp on the event loop (calls, and watch streams)
    kube        KubeClient: JSON reads/writes of TFJobs, pods, services, NetworkPolicies, events
    informer    Informer: LIST then WATCH one kind, forever; a re-list reports what vanished
    triggers    Controller: the watches -> the caches and the work queue
    peering     PeeringGate: kopf's peering decision, read from kopf's peering object
    workqueue   WorkQueue: coalesced, serialized passes, a background lane, one timer per job
    jobpass     JobPass: one pass = read -> `engine.plan_job` -> carry out the Plan
    jobcache    JobCache: the newest version of every TFJob seen
    children    ChildCache: every job's pods, services and NetworkPolicies, from the watches
    echoes      Echoes: watch events that only echo the operator's own writes
    status      StatusWriter: the status write (resourceVersion-checked, Conflict -> re-read)
    actions     Actions: create/delete pods and services, the NetworkPolicy, the TTL delete
    events      pass_events, EventRecorder: one event per pass naming what it did; Warnings once
    pruning     PrunedRecreations: status.recreations kept in memory under Kubeflow's CRD
    progress    ProgressPoller: each running job's chief read for training progress (why pull)
    metrics     Prometheus metrics (Kubeflow's job counters and TaaS's own), /metrics
    handlers    build_registry(controller), kopf_settings(settings): what kopf still does
                (lifecycle, login, probe, peering keepalive; no resource handlers)
    flags       add_arguments(parser), settings_from_args(args), UsageError
    main        run(settings, kubeconfig), run_from_args(args), main(argv): kopf.run
"""
