"""Gang jobs and GPU quotas at scale on the simulated cluster: Kueue and coscheduling with TaaS
(`python -m bench.scheduling`; the scenario is `scenario.py`, its CI-sized run is
tests/sim/test_sim_gang_queues.py)."""
