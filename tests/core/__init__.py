"""Pure tests, no processes: the planner (objects, lifecycle, gangs, Kueue, node loss), the
API models and validation, the client's tables, the trainer core's exit codes and batches,
and the checks of the tree itself (import graph, module names and sizes, package maps,
dotted names, layout figures). The inner loop's bulk."""
