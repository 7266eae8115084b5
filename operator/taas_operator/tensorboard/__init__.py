"""A TFJob's TensorBoard, as the operator runs it and every part of TaaS names it. Pure but for
reading the pod program's text; nothing is imported here.

    objects       the annotation taas.dev/tensorboard read, the chief's model_dir, the
                  Deployment and Service that serve it, its link and `taas tensorboard` command
    policy        the NetworkPolicy over its pods (no pod admitted: TensorBoard has no
                  authentication)
    pod_program   the program the TensorBoard pod runs (its text goes into the pod's command:
                  `python -c`); it imports TensorBoard, so nothing in TaaS imports it

Below the planner (it needs only the API and `tfjob`'s chief; the planner reads none of it), so
the controller's pass (`controller.reconcile.tensorboard`, which creates the objects), the
client, the dashboard and `taas tensorboard` (`tensorboard_command`) all read the same rules. Those
two stay where
they are because they talk to the apiserver: a package holding them and these objects would sit
both above the client (`taas tensorboard` uses it) and below it (`taas get` names the board).
"""
