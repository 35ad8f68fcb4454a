#!/bin/sh
# fairmq-rs's builtin devices against C++ FairMQ's, side by side: fairmq-bsampler -> fairmq-sink with
# FairMQ's command lines, sampler bound (as FairMQ's examples), the two implementations interleaved
# run by run, on both transports. Prints a table of the sink's messages/s, medians of the runs.
#
#   [TRANSPORTS="shmem zeromq"] benches/cpp/devices.sh <C++ FairMQ bin dir> [runs] [sizes...]
#
# The C++ devices come from a FairMQ build outside this repository (see benches/README.md); ours
# from `cargo build --release -p fairmq --bins`.
set -eu
cpp=${1:?usage: devices.sh <C++ FairMQ bin dir> [runs] [sizes...]}
shift
runs=${1:-3}
[ $# -gt 0 ] && shift
sizes=${*:-64 1024 65536 1048576}
root=$(cd "$(dirname "$0")/../.." && pwd)
rs=$root/target/release
for exe in "$cpp/fairmq-bsampler" "$cpp/fairmq-sink" "$rs/fairmq-bsampler" "$rs/fairmq-sink"; do
    [ -x "$exe" ] || { echo "missing $exe" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Each run has a session of its own; both implementations remove theirs when their devices end.
session="fmqcmp$$"

# One run: prints messages/s of the sink. The sink starts first, as in a topology started by hand;
# FairMQ's sink times from the start of its Run (so the sampler's start-up counts against it, a few
# tens of ms in runs of about two seconds), ours from its first message.
run() { # impl transport size count tag
    impl=$1 transport=$2 size=$3 count=$4 tag=$5
    bin=$cpp; [ "$impl" = rs ] && bin=$rs
    addr="ipc://$work/$tag"
    common="--transport $transport --session $session$tag --control static --shm-segment-size 2000000000 --shm-throw-bad-alloc false --color false"
    # shellcheck disable=SC2086
    timeout 120 "$bin/fairmq-sink" --id sink1 $common --max-iterations "$count" \
        --channel-config "name=data,type=pull,method=connect,address=$addr" > "$work/$tag.sink" 2>&1 &
    sink=$!
    # shellcheck disable=SC2086
    timeout 120 "$bin/fairmq-bsampler" --id sampler1 $common --max-iterations "$count" --msg-size "$size" \
        --channel-config "name=data,type=push,method=bind,address=$addr,linger=30000" > "$work/$tag.sampler" 2>&1 || true
    wait $sink || true
    # "Received N messages in X ms." (X a decimal in C++ FairMQ)
    sed -n 's/.*Received \([0-9]*\) messages in \([0-9.]*\) *ms.*/\1 \2/p' "$work/$tag.sink" | tail -1 |
        awk '$2 > 0 { printf "%.0f\n", $1 / ($2 / 1000) }'
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "| transport | size | C++ FairMQ msg/s | fairmq-rs msg/s | fairmq-rs / C++ |"
echo "|---|---|---|---|---|"
for transport in ${TRANSPORTS:-shmem zeromq}; do
    for size in $sizes; do
        # zeromq copies the payload: about as many bytes at every size. shmem moves a record:
        # as many messages at every size (a short run would time the first touch of the segment).
        count=1500000
        if [ "$transport" = zeromq ]; then
            count=$((1000000000 / (size + 500)))
            [ "$count" -gt 1500000 ] && count=1500000
            [ "$count" -lt 500 ] && count=500
        fi
        : > "$work/cpp.rates"; : > "$work/rs.rates"
        r=0
        while [ $r -lt "$runs" ]; do
            for impl in cpp rs; do
                run $impl $transport "$size" "$count" "$impl-$transport-$size-$r" >> "$work/$impl.rates"
            done
            r=$((r + 1))
        done
        c=$(median < "$work/cpp.rates"); s=$(median < "$work/rs.rates")
        echo "| $transport | $size | $c | $s | $(awk "BEGIN {printf \"%.2f\", $s / $c}") |"
    done
done
