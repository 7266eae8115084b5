"""The TaaS dashboard: a live web page for TFJobs, in a cluster (`taas dashboard`) or on this
machine (`taas run --dashboard`).

Layer: above `controller`/`local` (it reads a cluster through the TFJob client and a local run
through the runner's observer), below `cli`. One data model (`views`) built from
Kubernetes-shaped JSON, two sources (`cluster`, `local_source`) behind one interface
(`source.Source`), one server (`server`, aiohttp), one page (`static/`, plain JavaScript and the
vendored uPlot chart library, shipped in the wheel).
"""
