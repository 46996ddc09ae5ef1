# jupyterhub-idle-culler's configuration (--config=docker/hub/culler_config.py, set by
# jupyterhub_config.py): before it culls a server that the hub's record says is idle, it asks the
# server itself whether a kernel is busy or it was active since (docker/hub/cifarlab_cull.py).
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cifarlab_cull import busy_kernel_arbiter  # noqa: E402

c = get_config()  # noqa: F821 (the culler's config loader defines it)
c.IdleCuller.cull_arbiter_hook = busy_kernel_arbiter
