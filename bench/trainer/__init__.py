"""Trainer benchmark: the base class's step overhead, `taas run` start-up and scaling, and a
GPU section when a GPU is visible. Run `python -m bench.trainer [--quick]` from the repository
root; the programs it times live in `programs/`."""
