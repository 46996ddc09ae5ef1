#!/usr/bin/env bash
# shellcheck disable=SC2154 # state, image, podman_args, say and die are start.sh's, which sources this file
# podman_preflight: what docker/hub/start.sh checks on a podman host before the hub starts, so
# that no attendee's first spawn finds out (sourced by start.sh; uses its say, die, state,
# image and podman_args):
#
#   0. podman's storage works (podman info);
#   1. slirp4netns, podman's user-mode network (each server reaches the hub's API on the host's
#      loopback through it): installed with apt-get when missing, as root; else the command to run;
#   2. the image in podman's storage (the storage that CIFARLAB_HUB_PODMAN_ARGS names);
#   3. process limits the host's runtime accepts. Rootful podman asks for 1048576 open files
#      (and as many processes as pid_max); where the runtime cannot raise its own limits that far
#      (no CAP_SYS_RESOURCE, a lower hard limit) runc refuses every container ("error setting rlimit type 7: operation
#      not permitted"). A test container (an image of this host's /bin/true and its libraries,
#      a few MB: no copy of the workshop image) runs with the servers' network and a published port,
#      with podman's defaults; when they fail, with the first of a few lower limits that works,
#      which becomes CIFARLAB_HUB_ULIMITS and is said in one line. An explicit
#      CIFARLAB_HUB_ULIMITS is checked the same way.

# The test container's image: this host's /bin/true and its libraries (a few MB; podman's
# --rootfs would need no image, but podman 4.3 ignores --ulimit with it).
probe_image=localhost/cifarlab-hub-preflight:latest

make_probe_image() {
  local rootfs="$state/preflight-rootfs" bin lib
  rm -rf "$rootfs"
  mkdir -p "$rootfs/bin"
  bin="$(type -P true)"
  cp -L "$bin" "$rootfs/bin/true"
  for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
    mkdir -p "$rootfs$(dirname "$lib")"
    cp -L "$lib" "$rootfs$lib"
  done
  tar -C "$rootfs" -c . | podman "${podman_args[@]}" import - "$probe_image" >/dev/null 2>&1 \
    || die "podman import of a test image failed: is podman's storage writable? ($(podman "${podman_args[@]}" info --format '{{.Store.GraphRoot}}' 2>&1))"
  rm -rf "$rootfs"
}

# probe_container [ULIMITS]: runs the test container as the servers run (their network, a
# published port, ULIMITS); prints the engine's error when it fails.
probe_container() {
  local args u
  args=(run --rm --network slirp4netns:allow_host_loopback=true -p 127.0.0.1::8888)
  for u in ${1//,/ }; do args+=(--ulimit "$u"); done
  podman "${podman_args[@]}" "${args[@]}" "$probe_image" /bin/true 2>&1 >/dev/null | tr -s ' \n' ' '
  return "${PIPESTATUS[0]}"
}

# at_most N CAP: N ("unlimited" counts as CAP), at most CAP.
at_most() { local n="$1"; [ "$n" = unlimited ] && n="$2"; echo $((n < $2 ? n : $2)); }

podman_preflight() {
  local err
  # Podman's storage must work at all (e.g. overlay cannot stack on a folder that is itself on
  # overlayfs): said here, not by every spawn. What the image needs of it, start.sh's test server
  # checks later (docker/hub/preflight.py).
  err="$(podman "${podman_args[@]}" info --format '{{.Store.GraphDriverName}}' 2>&1 >/dev/null)" \
    || die "podman's storage does not work on this machine: $(tr -s ' \n' ' ' <<<"$err"): set its driver in /etc/containers/storage.conf (overlay; vfs works anywhere but copies the image for every server), or name working storage with CIFARLAB_HUB_PODMAN_ARGS (docker/README.md, \"Storage\")"
  if ! command -v slirp4netns >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      say "installing slirp4netns (podman's user-mode network: the servers reach the hub's API through it)"
      local apt=(apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends slirp4netns)
      DEBIAN_FRONTEND=noninteractive "${apt[@]}" >/dev/null 2>&1 \
        || { apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive "${apt[@]}" >/dev/null; } \
        || die "could not install slirp4netns: apt-get install slirp4netns"
    else
      die "slirp4netns is missing (podman's user-mode network, which the servers reach the hub through): install it as root, e.g. apt-get install slirp4netns"
    fi
  fi

  podman "${podman_args[@]}" image exists "$image" \
    || die "the image $image is not in podman's storage ($(podman "${podman_args[@]}" info --format '{{.Store.GraphRoot}}' 2>/dev/null)): build it (docker/test.sh, or podman build -f docker/Dockerfile -t $image .), load it (podman load -i FILE), or name the storage that holds it with CIFARLAB_HUB_PODMAN_ARGS=\"--root DIR --storage-driver DRIVER\" (docker/README.md)"

  make_probe_image
  local ok=0
  podman_limits && ok=1
  podman "${podman_args[@]}" rmi -f "$probe_image" >/dev/null 2>&1 || true
  [ "$ok" = 1 ] || die "$limits_error"
}

# podman_limits: the process limits check (3. above); on failure, limits_error says why.
podman_limits() {
  local err
  limits_error=""
  if [ -n "${CIFARLAB_HUB_ULIMITS:-}" ]; then
    err="$(probe_container "$CIFARLAB_HUB_ULIMITS")" && return 0
    limits_error="CIFARLAB_HUB_ULIMITS=$CIFARLAB_HUB_ULIMITS: a container cannot start with it here: $err; unset it and start.sh picks limits that work"
    return 1
  fi
  err="$(probe_container "")" && return 0
  case "$err" in
    *"error setting rlimit"*) ;;
    *)
      limits_error="a test container does not start here: $err"
      return 1
      ;;
  esac
  # Lower limits, most generous first: this shell's hard limits, the kernel's pid_max, then
  # fixed steps; the first pair the runtime accepts wins.
  local hn hu nofile nproc tried=" " u
  hn="$(at_most "$(ulimit -Hn)" 1048576)"
  hu="$(at_most "$(ulimit -Hu)" 4194304)"
  for nofile in "$hn" 65536 16384 4096; do
    for nproc in "$hu" "$(cat /proc/sys/kernel/pid_max 2>/dev/null || echo 32768)" 32768 16384 8192 4096; do
      nofile="$(at_most "$nofile" "$hn")" nproc="$(at_most "$nproc" "$hu")"
      u="nofile=$nofile:$nofile,nproc=$nproc:$nproc"
      case "$tried" in *" $u "*) continue ;; esac
      tried+="$u "
      if probe_container "$u" >/dev/null; then
        export CIFARLAB_HUB_ULIMITS="$u"
        say "podman's default process limits fail here ($(grep -o 'error setting rlimit type [0-9]*: [^:]*' <<<"$err" | head -n 1)); the servers get CIFARLAB_HUB_ULIMITS=$u (set it to choose others)"
        return 0
      fi
    done
  done
  limits_error="no process limits tried let a container start here ($err): set CIFARLAB_HUB_ULIMITS=nofile=SOFT:HARD,nproc=SOFT:HARD to limits this host's runtime accepts"
  return 1
}
