#!/bin/sh
# docker/image.sh — builds flockd's container image with whichever engine
# works on this host, and makes the Debian base image locally when no
# registry can be reached. Used by `make image` and `make image-test`.
#
#   docker/image.sh deps     install what is missing: podman when no engine
#                            works, debootstrap, the test's Python modules
#   docker/image.sh engine   print the engine that works (docker, else podman);
#                            exit 1 if none does
#   docker/image.sh base     make sure a base image exists; print its name
#   docker/image.sh build    build IMAGE from docker/Dockerfile on that base
#
# An engine "works" when it answers `info`: a docker client without a
# running daemon does not count. Podman runs with docker/containers.conf
# (CONTAINERS_CONF), which this host's kernel and limits need.
#
# The base is debian:bookworm-slim if the engine has it or can pull it;
# otherwise flockd-base:bookworm, made once with debootstrap (minbase,
# trimmed like the slim image) from the Debian mirror apt already uses
# and kept as a tarball in FLOCKD_CACHE, so neither a second build nor an
# emptied image store runs debootstrap again.
#
# Environment: IMAGE (default flockd:latest), FLOCKD_ENGINE (docker or
# podman, skips detection), FLOCKD_CACHE (default ~/.cache/flockd),
# FLOCKD_DEBIAN_MIRROR (default: apt's bookworm mirror).
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
IMAGE=${IMAGE:-flockd:latest}
OFFICIAL_BASE=debian:bookworm-slim
LOCAL_BASE=flockd-base:bookworm
CACHE=${FLOCKD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flockd}
CONTAINERS_CONF=${CONTAINERS_CONF:-$ROOT/docker/containers.conf}
export CONTAINERS_CONF

say() { echo "image: $*" >&2; }
die() { say "$*"; exit 1; }

engine() {
    if [ -n "${FLOCKD_ENGINE:-}" ]; then
        echo "$FLOCKD_ENGINE"
    elif docker info >/dev/null 2>&1; then
        echo docker
    elif podman info >/dev/null 2>&1; then
        echo podman
    else
        return 1
    fi
}

has_image() { "$ENGINE" image inspect "$1" >/dev/null 2>&1; }

# The URI of apt's source for SUITE (e.g. bookworm-security), or nothing.
apt_uri() {
    # shellcheck disable=SC2016 # $(...) is apt's field syntax, not the shell's
    apt-get indextargets --no-release-info --format '$(RELEASE) $(REPO_URI)' \
        'Created-By: Packages' 2>/dev/null | awk -v s="$1" '$1 == s { print $2; exit }'
}

# Removes what a container never reads (documentation, man pages, locales,
# apt's caches and downloaded packages) and keeps later package installs
# from adding it back, as Debian's slim images do.
trim_rootfs() {
    cat >"$1/etc/apt/apt.conf.d/slim" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
Acquire::Languages "none";
EOF
    cat >"$1/etc/dpkg/dpkg.cfg.d/slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/overrides/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/man/*
EOF
    find "$1/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
    find "$1/usr/share/doc" -mindepth 1 -type d -empty -delete
    rm -rf "$1"/usr/share/groff/* "$1"/usr/share/info/* "$1"/usr/share/linda/* \
           "$1"/usr/share/lintian/overrides/* "$1"/usr/share/locale/* "$1"/usr/share/man/* \
           "$1"/var/cache/apt/*.bin "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/* \
           "$1"/var/log/*.log "$1"/var/log/apt/* "$1"/var/cache/debconf/*-old
}

# Writes the base's apt sources: the release, its updates and its security
# fixes, from the mirrors apt on this host uses.
write_sources() {
    security=$(apt_uri bookworm-security)
    {
        echo "deb $1 bookworm main"
        echo "deb $1 bookworm-updates main"
        [ -z "$security" ] || echo "deb $security bookworm-security main"
    } >"$2/etc/apt/sources.list"
}

# Makes $CACHE/bookworm-minbase.tar unless it is there already.
make_base_tarball() {
    tarball=$CACHE/bookworm-minbase.tar
    [ -s "$tarball" ] && return 0
    command -v debootstrap >/dev/null || die "debootstrap is missing (make image-deps installs it)"
    mirror=${FLOCKD_DEBIAN_MIRROR:-$(apt_uri bookworm)}
    [ -n "$mirror" ] || die "apt has no bookworm source: set FLOCKD_DEBIAN_MIRROR to a Debian mirror"
    mkdir -p "$CACHE"
    rootfs=$(mktemp -d "$CACHE/rootfs.XXXXXX")
    say "no base image: making one with debootstrap from $mirror (once; cached in $CACHE)"
    debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$rootfs.log" 2>&1 ||
        { tail -20 "$rootfs.log" >&2; rm -rf "$rootfs"; die "debootstrap failed (log: $rootfs.log)"; }
    trim_rootfs "$rootfs"
    write_sources "$mirror" "$rootfs"
    tar -C "$rootfs" --numeric-owner -cf "$tarball.part" . && mv "$tarball.part" "$tarball"
    rm -rf "$rootfs" "$rootfs.log"
}

base() {
    if has_image "$OFFICIAL_BASE"; then
        echo "$OFFICIAL_BASE"
        return
    fi
    if has_image "$LOCAL_BASE"; then
        echo "$LOCAL_BASE"
        return
    fi
    if "$ENGINE" pull "$OFFICIAL_BASE" >/dev/null 2>&1; then
        echo "$OFFICIAL_BASE"
        return
    fi
    say "cannot pull $OFFICIAL_BASE"
    make_base_tarball
    "$ENGINE" import --change 'CMD ["bash"]' \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        "$CACHE/bookworm-minbase.tar" "$LOCAL_BASE" >/dev/null
    echo "$LOCAL_BASE"
}

# Installs from Debian what the image targets need and this host lacks:
# podman and its helpers when no engine works (with podman-compose),
# debootstrap for the base, and the test's Python modules.
deps() {
    want="debootstrap debian-archive-keyring python3 python3-websockets python3-yaml"
    if [ "$(engine || echo podman)" = podman ]; then
        want="$want podman runc conmon slirp4netns containernetworking-plugins iptables"
        want="$want uidmap catatonit podman-compose"
        # Service names resolve between containers (compose.cluster.yaml).
        want="$want golang-github-containernetworking-plugin-dnsname"
    fi
    missing=""
    for p in $want; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
            missing="$missing $p"
    done
    if [ -z "$missing" ]; then
        say "deps: all present"
        return
    fi
    say "deps: installing$missing"
    sudo=$([ "$(id -u)" = 0 ] || echo sudo)
    # Waits for another apt (e.g. a parallel `make deps`) instead of failing.
    $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq
    # shellcheck disable=SC2086 # one word per package
    DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
        --no-install-recommends $missing
}

build() {
    from=$(base)
    say "building $IMAGE with $ENGINE on $from"
    if [ "$ENGINE" = podman ]; then
        # shellcheck disable=SC3045 # dash and bash both have ulimit -H
        hard=$(ulimit -Hn)
        [ "$hard" = unlimited ] || [ "$hard" -ge 16384 ] ||
            die "the hard open-files limit ($hard) is below containers.conf's nofile (16384)"
        # --format docker: the default OCI format silently drops HEALTHCHECK.
        set -- --format docker --pull=never
    else
        set --
    fi
    "$ENGINE" build "$@" --build-arg BASE="$from" -f "$ROOT/docker/Dockerfile" \
        -t "$IMAGE" "$ROOT"
}

case "${1:-}" in
deps)
    deps
    ;;
engine)
    engine || die "no container engine works here (docker info and podman info both fail)"
    ;;
base | build)
    ENGINE=$(engine) || die "no container engine works here: run make image-deps"
    "$1"
    ;;
*)
    echo "usage: $0 deps|engine|base|build" >&2
    exit 2
    ;;
esac
