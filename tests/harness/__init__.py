"""Test helpers more than one test folder uses; they use no test folder (pyproject.toml's
contract).

    waiting.py          `wait(probe, what, timeout=20.0, every=0.1)`: the tests' one wait
    operator_run.py     the operator as a subprocess on a real apiserver, a small JSON client
                        (`Api`), a TFJob's conditions (tests/operator, tests/dashboard)
    kubelet_player.py   the test playing a node's kubelet: pod phases and container logs
    real_cluster.py     kubectl and Helm against a real cluster, a job's pods, small TFJobs
                        without TensorFlow (tests/e2e)
    api_cases.py        bad TFJob specs, one per rule, with the messages both sides give
    api_agreement.py    the table `kubectl apply` and `taas validate` must answer alike
    markdown_blocks.py  the docs' fenced blocks, headings and links, as the doc checks read them
    fakeapi/            an in-memory apiserver (the fast tier's operator tests)
"""
