"""The Kubernetes side of TaaS: the operator serving kubeflow.org/v1 TFJobs.

One TFJob's way through the operator, folder by folder, in order (each module one job; the
API is `taas_operator.apiserver.verbs.KubeClient`, the one door's verbs). Nothing is imported
here, so `taas_operator.controller.flags` stays light for the `taas` command line:
    seen                  Seen: an object as read (uid, owner), what the owned check judges
    watch/informer        Informer: LIST then WATCH one kind, forever; a re-list reports what
                          vanished
    watch/jobcache        JobCache: the newest version of every TFJob seen
    watch/children        ChildCache: every job's pods, services and NetworkPolicies
    watch/expectations    Expectations: watch events that only echo the operator's own writes
    watch/peering         PeeringGate: kopf's peering decision, read from kopf's peering object
    controller            Controller: the watches -> the caches and the work queue -> passes
    workqueue             WorkQueue: coalesced, serialized passes, a background lane, one timer
                          per job
    reconcile/reconciler  Reconciler: one pass = read -> `planner.plan_job` -> carry out the Plan
    reconcile/progress_poller
                          ProgressPoller: each running job's chief read for training progress
    reconcile/status      StatusWriter: the status write (resourceVersion-checked, Conflict ->
                          re-read), the recreations a pruning CRD drops, the transition metrics
    reconcile/recreations PrunedRecreations: status.recreations kept in memory under Kubeflow's
                          CRD
    reconcile/owned       Owned, NotOwned: the uid check before any write to a job's child
    reconcile/actions     Actions: create/delete pods and services, the NetworkPolicy, the TTL
                          delete
    reconcile/podgroups   PodGroups: a job's PodGroup made, kept, written again while its gang
                          waits
    reconcile/tensorboard TensorBoards: the Deployment and Service of a job that asks for a
                          TensorBoard (`tensorboard.objects`), made once per incarnation
    reconcile/recorder    pass_events, EventRecorder: one event per pass naming what it did;
                          Warnings once
    memory                release_freed_memory: the heap's free pages given back after a burst
    metrics               Prometheus metrics (Kubeflow's job counters and TaaS's own), /metrics
    handlers              build_registry(controller), kopf_settings(settings): what kopf still
                          does (lifecycle, login, probe, peering keepalive; no resource handlers)
    flags                 add_arguments(parser), settings_from_args(args), UsageError
    main                  run(settings, kubeconfig), run_from_args(args), main(argv): kopf.run
"""
