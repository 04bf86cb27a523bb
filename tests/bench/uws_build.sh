#!/bin/sh
# Builds tests/bench/uws_pubsub.cpp against uWebSockets and uSockets
# sources (not part of flockd, not in Debian: a checkout of each, e.g.
# github.com/uNetworking/uWebSockets and its uSockets submodule), with
# epoll, no TLS, -O2, into OUT.
#   tests/bench/uws_build.sh UWEBSOCKETS_DIR USOCKETS_DIR OUT
set -eu
[ $# -eq 3 ] || { echo "usage: $0 UWEBSOCKETS_DIR USOCKETS_DIR OUT" >&2; exit 2; }
uws=$1 us=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for c in "$us"/src/*.c "$us"/src/eventing/*.c "$us"/src/crypto/*.c; do
    cc -O2 -DLIBUS_NO_SSL -I"$us/src" -c "$c" -o "$tmp/$(basename "$c" .c).o"
done
c++ -O2 -std=c++20 -DLIBUS_NO_SSL -DUWS_NO_ZLIB -I"$uws/src" -I"$us/src" \
    "$here/uws_pubsub.cpp" "$tmp"/*.o -o "$out"
echo "built $out"
