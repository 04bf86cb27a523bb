#!/bin/bash
# flockd-healthcheck: the image's HEALTHCHECK. Succeeds when flockd answers
# GET /healthz with status 200 on a port it listens on, in plain HTTP or,
# when flockd serves TLS itself, over TLS (with the openssl command).
#
# The port is read from the running process, not assumed: flockd may have
# been given --port, a config file or --port 0. The check takes the
# listening TCP sockets among the process's open descriptors (from /proc)
# and asks each in turn; a wildcard address is reached through loopback.
# The image has no curl or wget: bash opens the socket through /dev/tcp.
#
# Usage: flockd-healthcheck [PID]   (default: the first process named flockd)
# Exit status: 0 healthy, 1 not (with the reason on stderr).
set -u
# A TLS port drops the plain request, sometimes before it is written:
# writing to it must fail, not kill the check (SIGPIPE).
trap '' PIPE

find_flockd() {
    local d comm
    for d in /proc/[0-9]*; do
        read -r comm <"$d/comm" 2>/dev/null || continue
        if [ "$comm" = flockd ]; then
            echo "${d#/proc/}"
            return 0
        fi
    done
    return 1
}

# Prints "ADDRESS PORT" for each listening socket of process $1. The
# listening sockets of the network namespace come first (few), then one
# pass of find over the process's descriptors keeps those it holds: quick
# even when flockd holds thousands of connections.
listening() {
    local file addr st inode link
    local -a names=()
    local -A where=()
    for file in tcp tcp6; do
        # sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
        while read -r _ addr _ st _ _ _ _ _ inode _; do
            [ "$st" = 0A ] || continue
            where[$inode]="$(address "${addr%:*}") $((16#${addr#*:}))"
            names+=(-o -lname "socket:\\[$inode\\]")
        done < <(grep ' 0A ' /proc/"$1"/net/$file 2>/dev/null)
    done
    [ ${#names[@]} -gt 0 ] || return 0
    find /proc/"$1"/fd \( "${names[@]:1}" \) -printf '%l\n' 2>/dev/null |
        while read -r link; do
            inode=${link#socket:[}
            echo "${where[${inode%]}]}"
        done
}

# The address to connect to for a /proc/net/tcp{,6} local address (hex,
# each 32-bit word in host order, here little-endian): the address itself,
# or loopback for a wildcard.
address() {
    local hex=$1 words="" i w
    if [ ${#hex} -eq 8 ]; then
        [ "$hex" = 00000000 ] && { echo 127.0.0.1; return; }
        echo "$((16#${hex:6:2})).$((16#${hex:4:2})).$((16#${hex:2:2})).$((16#${hex:0:2}))"
        return
    fi
    [ "$hex" = 00000000000000000000000000000000 ] && { echo ::1; return; }
    for i in 0 8 16 24; do
        w=${hex:i:8}
        words+="${w:6:2}${w:4:2}:${w:2:2}${w:0:2}:"
    done
    echo "${words%:}"
}

REQUEST='GET /healthz HTTP/1.0\r\nHost: localhost\r\nConnection: close\r\n\r\n'

# The status line of GET /healthz at $1:$2 over TLS (flockd --tls-cert; its
# certificate is not checked: this is the same machine), or nothing.
tls_status() {
    local host=$1
    case $host in *:*) host="[$host]" ;; esac
    command -v openssl >/dev/null || return 0
    printf "$REQUEST" | timeout 1.5 openssl s_client -quiet -connect "$host:$2" \
        2>/dev/null | head -n 1
}

# Asks GET /healthz at $1:$2, in plain HTTP and, if that gets no answer
# (a TLS port drops it), over TLS; succeeds on a 200 status line within
# about 2.5 s (the HEALTHCHECK allows 3).
healthz() {
    local line=""
    if exec 3<>"/dev/tcp/$1/$2"; then
        printf "$REQUEST" >&3 2>/dev/null
        IFS= read -r -t 1 line <&3 2>/dev/null # a TLS port resets it
        exec 3<&-
    fi
    [ -n "$line" ] || line=$(tls_status "$1" "$2")
    case $line in "HTTP/1."[01]" 200 "*) return 0 ;; esac
    echo "flockd-healthcheck: $1 port $2 answered: ${line%$'\r'}" >&2
    return 1
}

pid=${1:-$(find_flockd)} || { echo "flockd-healthcheck: no flockd process" >&2; exit 1; }
ports=$(listening "$pid")
[ -n "$ports" ] || { echo "flockd-healthcheck: flockd (pid $pid) listens on no TCP port" >&2; exit 1; }
while read -r addr port; do
    healthz "$addr" "$port" && exit 0
done <<<"$ports"
exit 1
