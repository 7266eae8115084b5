"""TaaS's tests, by behaviour: one folder per part, its __init__ saying what it covers; shared
helpers in tests/harness (one wait, the operator on an apiserver, the kubelet player, a real
cluster's kubectl and Helm, the in-memory apiserver); tests/builds.py makes what a test needs
built before its timeout starts. docs/development.md says which tier runs what."""
