#!/usr/bin/env bash
# shellcheck disable=SC2034 # storage is the caller's (docker/test.sh, docker/hub/test.sh)
# choose_storage NAME CACHE: the container storage that the image's tests use, in the array
# `storage` (podman's and buildah's global options; empty: podman's default storage).
#
# The tests build and run the image where a user does: podman's default storage, which is overlay
# on Debian's and Ubuntu's rootful podman (Docker's default, overlay2, has the same rename limits:
# docker/README.md, "Storage"). Only where this machine cannot use it (podman's storage does not
# initialise: e.g. a CI machine that is itself a container on overlayfs, where overlay cannot
# stack) do they fall back to vfs storage in CACHE/storage, and say so: a run on vfs does not
# show what a workshop host on overlay does. CIFARLAB_DOCKER_STORAGE=vfs chooses that fallback
# on purpose.
choose_storage() {
  local name="$1" cache="$2" info runroot
  storage=()
  if [ "${CIFARLAB_DOCKER_STORAGE:-default}" != vfs ]; then
    if info="$(podman info --format '{{.Store.GraphDriverName}} {{.Store.GraphRoot}}' 2>&1)"; then
      echo "$name: storage: podman's default, ${info% *} in ${info#* } (as users run it)"
      case "$info" in
        overlay\ *) ;;
        *) echo "$name: NOTE: podman's default storage here is ${info% *}, not overlay: what a workshop host on overlay does is not checked on this machine" ;;
      esac
      return 0
    fi
    echo "$name: NOTE: podman's default storage does not work on this machine ($(tr -s ' \n' ' ' <<<"$info" | cut -c1-300)):"
    echo "$name: NOTE: this run uses vfs storage in $cache/storage instead, which no workshop host should use (docker/README.md, \"Storage\")"
  else
    echo "$name: NOTE: CIFARLAB_DOCKER_STORAGE=vfs: this run uses vfs storage in $cache/storage, not podman's default"
  fi
  # The run root holds runtime state (locks, sockets): podman refuses one longer than 50
  # characters, which "$cache/run" is under a long HOME. It must stay the same for the same
  # storage (podman records it there), so it is a short folder in /tmp named after the cache.
  runroot="/tmp/cifarlab-podman-$(id -u)-$(printf '%s' "$cache" | sha256sum | cut -c1-12)"
  storage=(--root "$cache/storage" --runroot "$runroot" --storage-driver vfs)
}
