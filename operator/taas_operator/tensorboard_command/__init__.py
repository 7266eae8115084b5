"""`taas tensorboard`: a job's summaries in TensorBoard, one command away.

    taas tensorboard job.yaml          a `taas run` job: TensorBoard on its chief's model_dir
    taas tensorboard DIR               TensorBoard on a directory of summaries
    taas tensorboard JOB [-n NS]       a cluster's TFJob: the TensorBoard the operator runs for
                                       it (annotation taas.dev/tensorboard: "true"), served on
                                       this machine through the Kubernetes API server

Modules, top down: `command` (the parser and the choice between the two places), `local` (a
job file's or a directory's summaries; TensorBoard as a child process, `process`) and
`cluster_job` (the job's TensorBoard Service behind a local proxy, `proxy`, on
`apiserver.transport`). What the operator runs for a job, and its names:
`taas_operator.tensorboard`.
"""
