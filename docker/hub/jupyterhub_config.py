# JupyterHub for a workshop on one GPU machine: the hub and its proxy on the host, one container
# of the cifarlab image per user (DockerSpawner against Docker, or podman's Docker API), logins
# with a shared sign-up code (NativeAuthenticator), per-user CPU, memory and GPU-memory limits,
# idle culling, and each user's notebooks on a named volume of their own.
#
# docker/hub/start.sh runs it (one command); every setting below comes from an environment
# variable that start.sh documents, so the file itself needs no editing for a workshop.
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from hubsettings import settings_from_env  # noqa: E402

c = get_config()  # noqa: F821 (JupyterHub's config loader defines it)
s = settings_from_env(os.environ)

# --- the hub and its proxy -------------------------------------------------------------------
# The proxy (configurable-http-proxy from docker/hub/proxy, started by the hub) is the one URL
# attendees open. The hub's API listens on loopback only; user containers reach it through
# their network (see hub_connect_url below).
c.JupyterHub.bind_url = s.public_url
c.JupyterHub.hub_bind_url = s.hub_bind_url
c.ConfigurableHTTPProxy.command = [os.path.join(here, "proxy", "node_modules", ".bin", "configurable-http-proxy")]
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{s.proxy_api_port}"
if s.ssl_cert:
    c.JupyterHub.ssl_cert = s.ssl_cert
    c.JupyterHub.ssl_key = s.ssl_key
c.JupyterHub.db_url = "sqlite:///" + os.path.join(s.state_dir, "jupyterhub.sqlite")
c.JupyterHub.cookie_secret_file = os.path.join(s.state_dir, "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = os.path.join(s.state_dir, "jupyterhub.pid")
# A restart of the hub (an upgrade, a config change) leaves the users' servers and kernels
# running: the new hub finds them again from its database.
c.JupyterHub.cleanup_servers = False

# --- logins ----------------------------------------------------------------------------------
c.JupyterHub.authenticator_class = s.authenticator_class
c.Authenticator.admin_users = set(s.admin_users)
if s.authenticator_class == "cifarlab_hub.WorkshopAuthenticator":
    c.WorkshopAuthenticator.signup_code = s.signup_code
    c.NativeAuthenticator.minimum_password_length = 8
    c.NativeAuthenticator.check_common_password = True
else:
    # Tests only (CIFARLAB_HUB_AUTH=dummy): any name logs in, with the shared password.
    c.DummyAuthenticator.password = s.signup_code
c.Authenticator.allow_all = True  # whoever signed up with the code (or was created by an admin)

# --- the user servers: one container of the image each ---------------------------------------
# DockerSpawner, whose failed starts say why at once, on the attendee's page and in this log, and
# leave no container behind (docker/hub/cifarlab_spawner.py).
c.JupyterHub.spawner_class = "cifarlab_spawner.CifarlabSpawner"
c.CifarlabSpawner.start_mem = s.start_mem  # a spawn on a machine with less free is refused at once
c.DockerSpawner.image = s.image
c.DockerSpawner.pull_policy = "never"  # the image is built or loaded on the machine beforehand
c.DockerSpawner.name_template = s.container_prefix + "{username}"
c.DockerSpawner.remove = True  # the container goes when the server stops (no auto_remove: see host_config); the volume stays
c.DockerSpawner.volumes = {s.volume_prefix + "{username}": "/opt/cifarlab/notebooks/work"}
# The host's compile cache folder (CIFARLAB_HUB_COMPILE_CACHE), read-only, listed in every server's
# CIFARLAB_COMPILE_CACHE_SHARED beside the image's own (s.environment()).
c.DockerSpawner.read_only_volumes = s.read_only_volumes()
c.DockerSpawner.port = 8888
# Creating a container copies the image under podman's vfs storage (a minute or more for this
# multi-GB image on a busy machine): the engine's API calls may take as long as a start.
c.DockerSpawner.client_kwargs = {"timeout": s.start_timeout}
c.DockerSpawner.http_timeout = s.start_timeout
c.DockerSpawner.start_timeout = s.start_timeout
# Published on the host's loopback only: the proxy (on the host) is the only way in.
c.DockerSpawner.use_internal_ip = False
c.DockerSpawner.host_ip = "127.0.0.1"
c.DockerSpawner.network_name = s.network_mode
if s.spawner_hub_connect_url:
    # podman: the container reaches the host's loopback (the hub's API) at slirp4netns's
    # 10.0.2.2, inside its own network namespace only; the proxy still reaches the hub on
    # 127.0.0.1.
    c.DockerSpawner.hub_connect_url = s.spawner_hub_connect_url
c.DockerSpawner.extra_host_config = s.host_config()
c.DockerSpawner.extra_create_kwargs = {
    # The image's HEALTHCHECK polls JupyterLab's /api, which a hub server serves under
    # /user/NAME/; the hub watches its servers itself.
    "healthcheck": {"test": ["NONE"]},
}
c.DockerSpawner.cpu_limit = s.cpu_limit
c.DockerSpawner.mem_limit = s.mem_limit
c.DockerSpawner.environment = s.environment()

# --- idle culling ----------------------------------------------------------------------------
# jupyterhub-idle-culler as a hub service: a server with no activity (no open notebook sending
# messages, no kernel running a cell) for CIFARLAB_HUB_CULL_TIMEOUT seconds is stopped, its
# container removed, and with it every kernel and the GPU memory they held. Before it culls a
# server that the hub's record says is idle, it asks the server itself whether a kernel is busy
# or it was active since (docker/hub/culler_config.py, cifarlab_cull.py): the hub's record lags
# by up to the servers' activity interval, and a silent running cell reports nothing, so a
# restart with a shorter timeout used to cull running work. Hence the scopes to reach the
# servers (access:servers) at the proxy's address for them (proxy).
c.JupyterHub.load_roles = [
    {
        "name": "idle-culler",
        "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers", "access:servers", "proxy"],
        "services": ["idle-culler"],
    }
]
c.JupyterHub.services = [
    {
        "name": "idle-culler",
        "command": [
            sys.executable,
            "-m",
            "jupyterhub_idle_culler",
            f"--timeout={s.cull_timeout}",
            f"--cull-every={s.cull_every}",
            f"--config={os.path.join(here, 'culler_config.py')}",
        ],
    }
]
# The hub polls the proxy for activity as often as the culler looks (the user servers report
# theirs at JUPYTERHUB_ACTIVITY_INTERVAL, set in s.environment()).
c.JupyterHub.last_activity_interval = s.activity_interval
