"""One pass over one TFJob, in the order it runs: `reconciler` (read the job and its children,
`planner.plan_job`), `progress_poller` (fold the chief's training progress), `status` (the
status write, which keeps recreations a pruning CRD drops (`recreations`) and counts the
transitions it wrote), `actions` (create and delete pods, services, the NetworkPolicy, the TTL
delete) and `recorder` (the events the pass records on the job). Nothing is imported here."""
