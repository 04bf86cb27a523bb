#!/bin/sh
# The entry point of the NATS container of docker/compose.cluster.yaml
# (docker/Dockerfile.nats): nats-server with JetStream, its store in /data,
# on port 4222, with docker/nats.conf, the user flockd's password taken
# from FLOCKD_NATS_PASSWORD. Without a password it does not start: the
# cluster's NATS is never open to whoever reaches it. Arguments go on to
# nats-server.
set -eu
password=${FLOCKD_NATS_PASSWORD:-}
if [ -z "$password" ]; then
    echo "flockd-nats-start: FLOCKD_NATS_PASSWORD is not set (docker/README.md, \"Compose\")" >&2
    exit 2
fi
case "$password" in
*'"'* | *'\'*)
    echo "flockd-nats-start: FLOCKD_NATS_PASSWORD holds a \" or a \\, which flockd cannot send" >&2
    exit 2
    ;;
esac
dir=$(mktemp -d)
umask 077
cp /etc/flockd-nats/nats.conf "$dir/nats.conf"
printf 'FLOCKD_NATS_PASSWORD: "%s"\n' "$password" >"$dir/auth.conf"
exec nats-server -c "$dir/nats.conf" -js -sd /data -p 4222 "$@"
