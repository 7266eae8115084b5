"""Katib trials under TaaS and under training-operator v1.8.1, on one node, in the same run.

    python -m bench.katib [--rounds N] [--trials N] [--json FILE]

Modules: `trials` (the pure part: a trial's moments from the watch and the chief's log, its
figures), `experiments` (one Experiment under one controller, timed), `__main__` (the cluster with
Katib, the rounds, the table).
"""
