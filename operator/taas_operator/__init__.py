"""TaaS's Kubernetes side and everything users run: the operator serving kubeflow.org/v1 TFJobs,
`taas run` (a TFJob on this machine), the client and its `taas` commands, the dashboard and
`taas tensorboard`. No TensorFlow here (the trainer library is the package `taas`).

Inside, top layer first (each imports only the layers below it; pyproject.toml's import
contracts, checked by `lint-imports`, say the same; `A | B`: neither imports the other):

    cli.py                the `taas` command: one subcommand per verb
    dashboard/            `taas dashboard` and `taas run --dashboard`: the live web page
    tensorboard_command/  `taas tensorboard`: a job's summaries, local or behind a proxy
    client/               TFJobs on a cluster from Python (TFJobClient) and `taas submit|logs|
                          get|wait|delete`
    controller/           the operator: watches -> work queue -> one pass -> the Plan carried out
    local/                `taas run`: a local "kubelet" running the planner's pods as processes
    planner/              pure: (job, observed pods, now) -> Plan; the pods and services wanted
    documents/            the one bounded YAML loader for whatever users give
    tensorboard/          a job's TensorBoard objects, named the same way everywhere
    tfjob/                what only a TFJob knows: TF_CONFIG, the chief, who decides success
    terminal.py           a job's output in a terminal (log lines, a live table)
    processes.py          the one helper for child processes (spawn, stop)
    apiserver/            the one door to Kubernetes: transport, errors, list-watch, verbs
    runtoken.py           the per-run token of the web servers TaaS runs on this machine
    settings.py           the operator's settings (flags, TAAS_* env, the chart's values)
    api/                  the TFJob models and validation, names, Events, the progress document

Where to start reading:
- A TFJob's pods: their manifests are made by `taas_operator.planner.objects.desired_pods`
  (pure); the operator's pass, `taas_operator.controller.reconcile.reconciler.Reconciler`, asks
  `taas_operator.planner.plan_job` for the Plan, and
  `taas_operator.controller.reconcile.actions.Actions` creates the pods, in slow-start rounds.
- `taas run`: `taas_operator.local.runner.run_jobs` drives the same planner; each pod becomes a
  process in `taas_operator.local.kubelet.LocalPod.start`, through
  `taas_operator.processes.spawn`, in a private network namespace (`taas_operator.local.netns`).
- A node's kubelet and the rest of a real cluster: `taas_controlplane` (its own map).
- The benchmarks (bench/README.md) measure a controller's CPU from /proc in
  bench/harness/procstats.py.
"""
