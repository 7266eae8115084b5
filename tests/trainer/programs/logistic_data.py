"""The seeded examples of ``fit_metrics.py`` (numpy only: the tests read them too)."""

from __future__ import annotations

import numpy as np

#: Examples in the data set: a whole number of global batches of 16 and of 24.
EXAMPLES = 96


def examples() -> tuple[np.ndarray, np.ndarray]:
    """(x, y): 4 normal features per example, labels 0/1 of a noisy linear rule."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(EXAMPLES, 4)).astype(np.float32)
    rule = x @ np.array([[1.0], [-0.5], [0.25], [0.0]]) + 0.3 * rng.normal(size=(EXAMPLES, 1))
    return x, (rule > 0).astype(np.float32)
