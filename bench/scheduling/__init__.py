"""Gang jobs and GPU quotas at scale on the simulated cluster: Kueue and coscheduling with TaaS
(`python -m bench.scheduling`). The run is `scenario.py`, its size `shape.py`, its figures
`gangs.py` (each gang job's moments and the quota checks), its table `report.py`; its CI-sized run
is tests/sim/test_sim_gang_queues.py."""
