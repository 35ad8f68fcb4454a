#!/bin/sh
# The system's libzmq against the libzmq cargo builds for fairmq-zmq (same version, 4.3.4), side by
# side: zmq_throughput.c built against each, one-way ipc PUSH -> PULL, runs interleaved, messages/s
# per run. Needs libzmq3-dev and a release build of the workspace (`cargo build --release`).
#   benches/c/run.sh [runs] [sizes...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
runs=${1:-3}
[ $# -gt 0 ] && shift
sizes=${*:-64 1024 65536 1048576}
vendored=$(ls -t "$root"/target/release/build/zmq-sys-*/out/lib/libzmq.a 2>/dev/null | head -1)
[ -n "$vendored" ] || { echo "no vendored libzmq.a: run cargo build --release first" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cc -O2 -o "$out/system" "$here/zmq_throughput.c" -lzmq
c++ -O2 -o "$out/vendored" -x c "$here/zmq_throughput.c" -x none -I"$root/vendor/zeromq-src/vendor/include" "$vendored" -lpthread
echo "vendored: $vendored"
echo "| size | system msg/s | vendored msg/s | vendored / system |"
echo "|---|---|---|---|"
for size in $sizes; do
    # About a second of messages at the rates seen here.
    count=$((2000000000 / (size + 1000)))
    [ "$count" -gt 3000000 ] && count=3000000
    [ "$count" -lt 2000 ] && count=2000
    for build in system vendored; do
        : > "$out/$build.$size"
    done
    i=0
    while [ $i -lt "$runs" ]; do
        for build in system vendored; do
            addr="ipc://$out/$build-$size-$i"
            "$out/$build" recv "$addr" "$count" "$size" >> "$out/$build.$size" &
            recv=$!
            "$out/$build" send "$addr" "$count" "$size"
            wait $recv
        done
        i=$((i + 1))
    done
    median() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
    s=$(median "$out/system.$size")
    v=$(median "$out/vendored.$size")
    echo "| $size | $s | $v | $(awk "BEGIN {printf \"%.2f\", $v / $s}") |"
done
