#!/usr/bin/env python3
"""Checks docker/hub/z2jh/values.yaml on paper (it was never run on Kubernetes):

1. As helm does before it renders anything (with the --set-file of values.yaml's install command): the chart's default values (chart/values.yaml)
   merged with ours (maps merge key by key, anything else replaces, null deletes), validated
   against the chart's JSON schema (chart/values.schema.json: the chart's values.schema.yaml at
   jupyterhub/zero-to-jupyterhub-k8s 48ea50e3 without its descriptions, as the chart ships it).
2. What the workshop needs of it: the cifarlab image's entry point as the user server, each
   user's notebooks on their own volume at the folder the entry point fills, a GPU profile
   that asks for nvidia.com/gpu and caps the CUDA kernel's memory share, and the same idle
   culling as docker/hub (hubsettings.DEFAULT_CULL_TIMEOUT).

Usage: validate.py [VALUES.yaml]   (needs jsonschema and PyYAML: the lab's .venv has both)
Exit status 0 when every check passes, 1 otherwise.
"""

import json
import os
import sys

import jsonschema
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import hubsettings  # noqa: E402

WORK = "/opt/cifarlab/notebooks/work"  # where docker/entrypoint.sh copies the notebooks


def helm_merge(base, over):
    """Helm's coalescing of user values over chart defaults."""
    out = dict(base)
    for k, v in over.items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = helm_merge(out[k], v)
        else:
            out[k] = v
    return out


def workshop_problems(v):
    """What docker/hub needs of the values, as a list of problems."""
    p = []
    su = v.get("singleuser", {})
    if su.get("cmd") != ["lab"]:
        p.append(f"singleuser.cmd is {su.get('cmd')!r}: want [lab], the image entry point's hub mode")
    if su.get("uid") != 1000 or su.get("fsGid") != 1000:
        p.append("singleuser.uid and fsGid must be the image's lab user (1000) so it can write its volume")
    if su.get("storage", {}).get("homeMountPath") != WORK:
        p.append(f"singleuser.storage.homeMountPath must be {WORK} (the per-user volume the notebooks are copied into)")
    gpu = [x for x in su.get("profileList", []) if "nvidia.com/gpu" in
           x.get("kubespawner_override", {}).get("extra_resource_limits", {})]
    if not gpu:
        p.append("no profile in singleuser.profileList asks for nvidia.com/gpu (kubespawner_override.extra_resource_limits)")
    for prof in gpu:
        env = prof["kubespawner_override"].get("environment", {})
        if env.get("CIFARLAB_MODE") != "gpu" or "memory_fraction=" not in env.get("CIFARLAB_CUDA_BACKEND", ""):
            p.append(f"GPU profile {prof.get('display_name')!r}: set CIFARLAB_MODE=gpu and CIFARLAB_CUDA_BACKEND with memory_fraction")
    defaults = hubsettings.settings_from_env({"CIFARLAB_HUB_SIGNUP_CODE": "x" * 8, "CIFARLAB_HUB_ENGINE": "podman"})
    cull = v.get("cull", {})
    want = {"enabled": True, "timeout": defaults.cull_timeout, "every": defaults.cull_every}
    got = {k: cull.get(k) for k in want}
    if got != want:
        p.append(f"cull is {got}: want docker/hub's {want}")
    auth = v.get("hub", {}).get("config", {}).get("JupyterHub", {}).get("authenticator_class")
    if auth != "cifarlab_hub.WorkshopAuthenticator":
        p.append(f"hub.config.JupyterHub.authenticator_class is {auth!r}: want cifarlab_hub.WorkshopAuthenticator")
    return p


def main(argv):
    path = argv[1] if len(argv) > 1 else os.path.join(HERE, "values.yaml")
    with open(os.path.join(HERE, "chart", "values.schema.json")) as f:
        schema = json.load(f)
    with open(os.path.join(HERE, "chart", "values.yaml")) as f:
        defaults = yaml.safe_load(f)
    with open(path) as f:
        ours = yaml.safe_load(f)
    # What the install command in values.yaml's header adds with --set-file.
    with open(os.path.join(os.path.dirname(HERE), "cifarlab_hub.py")) as f:
        ours.setdefault("hub", {}).setdefault("extraFiles", {}).setdefault("cifarlab-hub", {})["stringData"] = f.read()
    merged = helm_merge(defaults, ours)
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(merged), key=lambda e: list(e.absolute_path))
    for e in errors:
        print(f"z2jh: {path}: {'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:300]}")
    problems = workshop_problems(merged)
    for msg in problems:
        print(f"z2jh: {path}: {msg}")
    if errors or problems:
        return 1
    print(f"z2jh: {os.path.relpath(path)} passes the chart's schema and the workshop's checks (not run on Kubernetes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
