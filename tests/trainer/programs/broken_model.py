"""Test program: a subclass with a bug in build_model (must exit 1 with the traceback)."""

from __future__ import annotations

import taas


class Broken(taas.CaicloudDistTensorflowBase):
    """build_model divides by zero."""

    def build_model(self, global_step, is_chief, sync, num_replicas):
        return 1 / 0  # the bug under test


if __name__ == "__main__":
    Broken.main()
