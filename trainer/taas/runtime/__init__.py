"""TensorFlow services both engines use, above ``taas.core`` and below ``taas.graph``/``keras``.

``coordination`` (PS serving until every trainer says "done", the sync start barrier, the PS
reachability check) and ``preflight`` (the chief's model dir check, through ``tf.io.gfile``).
Both import TensorFlow only inside the functions that use it.
"""
