"""`taas run`: a TFJob on one machine, one process per replica, no cluster.

The operator's own code decides everything: `taas_operator.api.parse_tfjob` validates,
`taas_operator.planner` builds the pods (with 127.0.0.1 hosts in TF_CONFIG and the classic env)
and runs the lifecycle; this package only plays the kubelet and shows what happens. TFJobs are
read from YAML by `taas_operator.documents` (the bounded loader every user-given YAML goes
through); child processes start through `taas_operator.processes`, output goes through
`taas_operator.terminal`.

    expansion.py   Kubernetes $(VAR) expansion
    container.py   pod manifest -> the process a kubelet would start (argv, env, cwd)
    netns.py       a private network namespace per job (its own 127.0.0.1), or why not
    capacity.py    do the replicas fit this machine's memory and CPUs?
    unapplied.py   which parts of the pod templates are not applied here, in one line
    kubelet.py     LocalPod: one pod's process, restarts in place, phase, exit code
    progress_file.py  ProgressFile: the chief's training progress, written to a file, read here
    noise.py       TensorFlow's start-up notices and lost-worker lines: off the terminal, noted once
    display.py     the terminal (taas_operator.terminal) plus planner events, fed to the observer
    job_run.py     JobRun: one job's pods and status; kubelet poll -> planner plan -> act on it
    observer.py    RunObserver: what `taas run --dashboard` is told of the run
    runner.py      run_jobs: every JobRun stepped until done, signals, the final report
"""

from taas_operator.local.runner import RunOptions, run_jobs

__all__ = ["RunOptions", "run_jobs"]
