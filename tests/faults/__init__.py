"""Fault runs on a fresh control plane per test: the apiserver stopped and restarted, the
operator killed mid-work, malformed TFJobs; every job must still end as it should (slow;
the jobs come from bench.harness's workloads)."""
