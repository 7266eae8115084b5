"""The simulated cluster (kwok nodes behind a real control plane): TaaS at scale, node loss,
the operator killed, gang queues with Kueue; and the pure logic of the scale and scheduling
benchmarks these scenarios shrink."""
