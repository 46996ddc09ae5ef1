# Jupyter server settings of the workshop image, for `jupyter lab` and jupyterhub-singleuser
# alike (both are Jupyter servers, and read it from /usr/local/etc/jupyter, on Jupyter's config
# path). Tested by internal/kernel/cull_test.go (TestImageConfigCullsIdleKernels) against a real server.
#
# Idle kernels are shut down inside a user's server: every notebook opened starts a kernel
# (GoNB, about 30 MB, and the lab process while it lives), and in a workshop of 30 many are
# opened only to be read. A kernel is culled after CIFARLAB_KERNEL_CULL_IDLE seconds (default
# 1800, 30 minutes, as the lab process's own CIFARLAB_LAB_IDLE) without activity (no cell run, no
# message), checked every CIFARLAB_KERNEL_CULL_EVERY seconds (default 300), also when its
# notebook is still open in a tab (cull_connected: a tab left open to read is the case), never
# while it runs a cell (cull_busy off). GoNB keeps nothing between cells but the declarations it
# memorised: after a cull, run the notebook's first cell again. CIFARLAB_KERNEL_CULL_IDLE=0 turns
# culling off. The hub's own culler (docker/hub/) stops whole servers; this one only kernels.
import os


def _seconds(name, default):
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        n = int(value)
    except ValueError:
        raise SystemExit(f"cifarlab: ${name}={value!r}: give a number of seconds (0 turns culling off)")
    if n < 0:
        raise SystemExit(f"cifarlab: ${name}={value!r}: give a number of seconds (0 turns culling off)")
    return n


c = get_config()  # noqa: F821 (Jupyter's config loader defines it)
c.MappingKernelManager.cull_idle_timeout = _seconds("CIFARLAB_KERNEL_CULL_IDLE", 1800)
c.MappingKernelManager.cull_interval = _seconds("CIFARLAB_KERNEL_CULL_EVERY", 300) or 300
c.MappingKernelManager.cull_connected = True
c.MappingKernelManager.cull_busy = False
