"""What the benchmarks and the tests that drive controllers share; no benchmark here. Each
benchmark (bench.operator, bench.scale, bench.scheduling, bench.katib, bench.trainer,
bench.dashboard) uses it and never another benchmark; tests import it, never a benchmark but
their own (pyproject.toml's bench contracts).

    controllers.py      how each TFJob controller (TaaS, training-operator, the floor) is
                        installed and started on a control plane, and watched for its death
    workloads.py        the one job-shape builder (`tfjob_manifest`), the operator benchmark's
                        workloads, and `create_jobs` (a workload's TFJobs created at once)
    procstats.py        where a benchmark measures CPU and memory: a controller's process tree
                        read from /proc (`PeakSampler`), and `settle` (its CPU quiet again)
    apimetrics.py       the apiserver's `/metrics` and audit-log request counts
    profiler.py         py-spy recordings of a controller and their summary
    observer.py         a watch of pods and services appearing (kubernetes client)
    clock.py            the pods' and TFJobs' moments from one list-then-watch (`Clock`)
    contest.py          two controllers in rounds on one real cluster, and the medians' table
    seeded_training.py  a seeded training job on real nodes and the probes that follow its pods
                        when a node is lost
    table.py            how every table writes a figure and a ratio
    cli.py              the one command-line helper: a checked comma-separated choice
"""
