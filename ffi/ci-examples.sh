#!/usr/bin/env bash
# The C and C++ examples in CI: built with the system compilers against the installed library
# (strict warnings; once under AddressSanitizer), then run against Rust devices with exact counts.
# Needs cmake and the system libzmq's headers (libzmq3-dev); .ci/run installs them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cargo build --release -p fairmq-ffi
cargo build --release -p fairmq --bins
work=$(mktemp -d)
session="ci-c-$$"
cleanup() {
  pkill -P $$ 2>/dev/null || true
  rm -rf "$work"
  # Every session this script used (the shmId is the first 4 bytes of SHA-256 of uid and session).
  for s in "$session" "$session-rt-zeromq" "$session-rt-shmem" "$session-clash" "$session-cpp-zeromq" \
    "$session-cpp-shmem"; do
    rm -f /dev/shm/fmqrs_"$(printf '%s' "$(id -u)$s" | sha256sum | cut -c1-8)"_* 2>/dev/null || true
  done
  rm -f /tmp/fmqrs-c-* 2>/dev/null || true
}
trap cleanup EXIT
command -v cmake > /dev/null || { echo "cmake is missing (apt-get install -y cmake)"; exit 1; }
pkg-config --exists libzmq && [ -f "$(pkg-config --variable=includedir libzmq)/zmq.h" ] ||
  { echo "the system libzmq (zmq.h, libzmq.pc) is missing (apt-get install -y libzmq3-dev)"; exit 1; }
prefix="$work/prefix"
ffi/install.sh "$prefix" release > /dev/null
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
export LD_LIBRARY_PATH="$prefix/lib"
bin="$root/target/release"
ex="$root/ffi/examples"
cflags="$(pkg-config --cflags fairmq_rs) -Wall -Wextra -Werror -pedantic -O1 -g"
libs="$(pkg-config --libs fairmq_rs)"

# Only fmq_* symbols leave the shared library (the bundled libzmq stays inside).
leaked=$(nm -D --defined-only "$prefix/lib/libfairmq_rs.so" | awk '{print $3}' | grep -v '^fmq_' || true)
if [ -n "$leaked" ]; then echo "symbols other than fmq_* exported:"; echo "$leaked" | head; exit 1; fi
readelf -d "$prefix/lib/libfairmq_rs.so" | grep -q 'SONAME.*libfairmq_rs.so.0' || { echo "no versioned soname"; exit 1; }
# Nor from the static library (install.sh isolates it): every defined GLOBAL or WEAK symbol is fmq_*.
# readelf, not nm: see install.sh.
syms=$(readelf -sW "$prefix/lib/libfairmq_rs.a" | awk '($5=="GLOBAL" || $5=="WEAK") && $7!="UND" {print $8}')
leaked=$(grep -v '^fmq_' <<< "$syms" || true)
if [ -n "$leaked" ]; then echo "libfairmq_rs.a defines symbols other than fmq_*:"; echo "$leaked" | head; exit 1; fi
[ "$(grep -c '^fmq_' <<< "$syms")" -gt 60 ] || { echo "libfairmq_rs.a lacks the fmq_* symbols"; exit 1; }

cc -std=c11 $cflags "$ex/sampler.c" -o "$work/c-sampler" $libs
cc -std=c11 $cflags "$ex/panic.c" -o "$work/c-panic" $libs
cc -std=c11 $cflags "$ex/roundtrip.c" -o "$work/c-roundtrip" $libs
cc -std=c11 $cflags "$ex/region_sampler.c" -o "$work/c-region-sampler" $libs
c++ -std=c++17 $cflags "$ex/guide_sink.cpp" -o "$work/guide-sink" $libs -lboost_program_options
c++ -std=c++17 $cflags "$ex/counting_sink.cpp" -o "$work/counting-sink" $libs -lboost_program_options
c++ -std=c++17 $cflags "$ex/region_sampler.cpp" -o "$work/cpp-region-sampler" $libs -lboost_program_options
c++ -std=c++17 $cflags "$ex/cpp_api.cpp" -o "$work/cpp-api" $libs
asan="-fsanitize=address -fno-omit-frame-pointer"
cc -std=c11 $cflags $asan "$ex/sampler.c" -o "$work/c-sampler-asan" $libs
cc -std=c11 $cflags $asan "$ex/region_sampler.c" -o "$work/c-region-sampler-asan" $libs
# The static library links too (pkg-config --static adds what it needs).
static_deps=$(pkg-config --static --libs-only-l fairmq_rs | sed 's/-lfairmq_rs//')
cc -std=c11 $cflags "$ex/panic.c" -o "$work/c-panic-static" "$prefix/lib/libfairmq_rs.a" $static_deps
# ... also beside the system libzmq, in either link order: the archive's libzmq is its own.
zmq_cflags=$(pkg-config --cflags libzmq)
zmq_libs=$(pkg-config --libs libzmq)
cc -std=c11 $cflags $zmq_cflags "$ex/zmq_clash.c" -o "$work/zmq-clash" "$prefix/lib/libfairmq_rs.a" $zmq_libs $static_deps
cc -std=c11 $cflags $zmq_cflags "$ex/zmq_clash.c" -o "$work/zmq-clash-zmq-first" $zmq_libs "$prefix/lib/libfairmq_rs.a" $static_deps

"$work/c-panic" > "$work/panic.log"; grep -q '^ok$' "$work/panic.log"
"$work/c-panic-static" > "$work/panic-static.log"; grep -q '^ok$' "$work/panic-static.log"
for t in zeromq shmem; do "$work/c-roundtrip" "$t" "$session-rt-$t"; done
for t in zeromq shmem; do
  "$work/cpp-api" "$t" "$session-cpp-$t" "$work" > "$work/cpp-api-$t.log" 2>&1 || { cat "$work/cpp-api-$t.log"; exit 1; }
done

# The program's zmq_* come from the system's libzmq.so (an undefined dynamic symbol), not from the
# archive, whose copy stays local to it.
for b in zmq-clash zmq-clash-zmq-first; do
  "$work/$b" "$session-clash" "$work" > "$work/$b.log"
  grep -q 'ok$' "$work/$b.log" || { echo "$b failed:"; cat "$work/$b.log"; exit 1; }
  # (Lists first, then grep: `grep -q` in a pipe may end it early, which pipefail counts as failure.)
  undefined=$(readelf --dyn-syms -W "$work/$b" | awk '$7=="UND" {print $8}')
  grep -Eq '^zmq_ctx_new(@|$)' <<< "$undefined" || { echo "$b: zmq_ctx_new is not taken from the system libzmq"; exit 1; }
  defined=$(readelf -sW "$work/$b" | awk '($5=="GLOBAL" || $5=="WEAK") && $7!="UND" {print $8}')
  if grep -q '^zmq_' <<< "$defined"; then echo "$b defines zmq_* symbols globally"; exit 1; fi
done

common="--control static --color false --severity info --session $session --shm-segment-size 100000000"
expect() { # file text
  grep -q "$2" "$1" || { echo "expected '$2' in $1:"; cat "$1"; exit 1; }
}
await() { # file text: waits (generously) until the text is in the file
  for _ in $(seq 600); do grep -q "$2" "$1" && return 0; sleep 0.1; done
  echo "gave up waiting for '$2' in $1:"; cat "$1"; exit 1
}
for t in zeromq shmem; do
  # A C sampler to the Rust sink: 50 data messages and the end message; the sink counts FairMQ's
  # way (the message that ends its run is not counted).
  a="ipc://$work/c2rust-$t"
  "$bin/fairmq-sink" --id sink1 $common --transport $t --multipart true --max-iterations 50 \
    --channel-config "name=data,type=pull,method=bind,address=$a,rateLogging=0" > "$work/rust-sink-$t.log" & sink=$!
  "$work/c-sampler" --id csampler $common --transport $t --max-iterations 50 \
    --channel-config "name=data,type=push,method=connect,address=$a,rateLogging=0,linger=2000" > "$work/c-sampler-$t.log"
  wait $sink
  expect "$work/rust-sink-$t.log" "Received 50 messages"
  expect "$work/c-sampler-$t.log" "C sampler sent 50 data messages"

  # A Rust sampler to a C++ sink: exactly 50 messages.
  a="ipc://$work/rust2cpp-$t"
  "$work/counting-sink" --id cppsink $common --verbosity veryhigh --transport $t --max-iterations 50 \
    --channel-config "name=data,type=pull,method=bind,address=$a,rateLogging=0" > "$work/cpp-sink-$t.log" & sink=$!
  "$bin/fairmq-bsampler" --id rsampler $common --transport $t --msg-size 1000 --max-iterations 49 \
    --channel-config "name=data,type=push,method=connect,address=$a,rateLogging=0,linger=2000" > "$work/rust-sampler-$t.log"
  wait $sink
  expect "$work/cpp-sink-$t.log" "C++ sink received 50 messages, 50000 bytes"
  # LOG names the C++ caller's file, line and function (FairLogger's veryhigh verbosity).
  expect "$work/cpp-sink-$t.log" "\[counting_sink.cpp:28:PostRun\] C++ sink received"
  expect "$work/cpp-sink-$t.log" "C++ sink kept 5 messages, 5000 bytes"

  # The guide's C++ Sink, unchanged but for its includes, fed by the C sampler.
  a="ipc://$work/guide-$t"
  "$work/guide-sink" --id guidesink $common --transport $t --num-senders 1 \
    --channel-config "name=data,type=pull,method=bind,address=$a,rateLogging=0" > "$work/guide-sink-$t.log" & sink=$!
  "$work/c-sampler" --id csampler $common --transport $t --max-iterations 30 \
    --channel-config "name=data,type=push,method=connect,address=$a,rateLogging=0,linger=2000" > /dev/null
  wait $sink
  expect "$work/guide-sink-$t.log" "End message 1 of 1"
  expect "$work/guide-sink-$t.log" "Received 30 data messages"
done

# The metrics endpoint of C and C++ devices (they run on the Rust device loop): a C++ sink that
# takes 5 messages, scraped while it waits for them, and a C sampler whose peer never comes,
# scraped while it waits to send (and stopped by SIGINT, exit 0); every exposition passes
# promtool's lint.
if command -v promtool > /dev/null && command -v curl > /dev/null; then
  scrape() { # log id state file: scrapes the device that logged its endpoint in log; lints; checks its state
    await "$1" "metrics: serving http://"
    local url; url=$(grep -o 'http://[0-9.:]*/metrics' "$1" | head -1)
    for _ in $(seq 600); do
      curl -sf "$url" > "$4" && grep -q "fairmq_device_state{device=\"$2\",state=\"$3\"} 1" "$4" && break
      sleep 0.1
    done
    expect "$4" "fairmq_device_state{device=\"$2\",state=\"$3\"} 1"
    promtool check metrics < "$4" > "$4.lint" 2>&1 || { echo "promtool on $2's metrics:"; cat "$4.lint"; exit 1; }
  }
  a="ipc://$work/metrics"
  "$work/counting-sink" --id cppmetrics $common --transport shmem --max-iterations 5 --metrics-address 127.0.0.1:0 \
    --channel-config "name=data,type=pull,method=bind,address=$a,rateLogging=0" > "$work/cpp-metrics.log" 2>&1 & sink=$!
  scrape "$work/cpp-metrics.log" cppmetrics RUNNING "$work/cpp-metrics.txt"
  expect "$work/cpp-metrics.txt" 'fairmq_channel_received_messages_total{device="cppmetrics",channel="data",index="0",transport="shmem"} 0'
  "$bin/fairmq-bsampler" --id rsampler $common --transport shmem --msg-size 1000 --max-iterations 4 \
    --channel-config "name=data,type=push,method=connect,address=$a,rateLogging=0,linger=2000" > /dev/null
  wait $sink
  expect "$work/cpp-metrics.log" "C++ sink received 5 messages"
  # Its queue holds 10 messages; the 11th send waits for a peer that never connects.
  "$work/c-sampler" --id cmetrics $common --transport zeromq --max-iterations 1000 --metrics-address 127.0.0.1:0 \
    --channel-config "name=data,type=push,method=connect,address=ipc://$work/nobody,rateLogging=0,sndBufSize=10" \
    > "$work/c-metrics.log" 2>&1 & csampler=$!
  scrape "$work/c-metrics.log" cmetrics RUNNING "$work/c-metrics.txt"
  for _ in $(seq 600); do
    curl -sf "$(grep -o 'http://[0-9.:]*/metrics' "$work/c-metrics.log" | head -1)" > "$work/c-metrics.txt"
    grep -q 'fairmq_channel_sent_messages_total{device="cmetrics",channel="data",index="0",transport="zeromq"} 10$' "$work/c-metrics.txt" && break
    sleep 0.1
  done
  expect "$work/c-metrics.txt" 'fairmq_channel_sent_messages_total{device="cmetrics",channel="data",index="0",transport="zeromq"} 10$'
  kill -INT $csampler
  wait $csampler
  echo "C and C++ devices' metrics endpoints: ok"
else
  echo "promtool or curl is missing: the C and C++ metrics endpoints are not checked"
fi

# Region samplers (C with bulk and single callbacks, C++) to the Rust sink: 20 multiparts of 64
# region pieces; each sampler checks it got exactly 20 * 64 acknowledgements before it exits.
expect_exit() { # log command...: runs the command, which must succeed
  local log=$1; shift
  "$@" > "$log" 2>&1 || { echo "failed ($?): $*"; cat "$log"; exit 1; }
}
for t in zeromq shmem; do
  for s in c-bulk c-single cpp; do
    a="ipc://$work/region-$t-$s"
    "$bin/fairmq-sink" --id sink1 $common --transport $t --multipart true --max-iterations 19 \
      --channel-config "name=data,type=pull,method=bind,address=$a,rateLogging=0" > "$work/region-sink-$t-$s.log" & sink=$!
    chan="name=data,type=push,method=connect,address=$a,rateLogging=0,linger=2000"
    case $s in
      c-bulk) expect_exit "$work/region-$t-$s.log" "$work/c-region-sampler" --id rsampler $common --transport $t \
        --max-iterations 20 --callback bulk --channel-config "$chan" ;;
      c-single) expect_exit "$work/region-$t-$s.log" "$work/c-region-sampler" --id rsampler $common --transport $t \
        --max-iterations 20 --callback single --channel-config "$chan" ;;
      cpp) expect_exit "$work/region-$t-$s.log" "$work/cpp-region-sampler" --id rsampler $common --transport $t \
        --max-iterations 20 --channel-config "$chan" ;;
    esac
    wait $sink
    expect "$work/region-sink-$t-$s.log" "Received 19 messages"
    expect "$work/region-sink-$t-$s.log" "Received 1280000 bytes"
    case $s in
      cpp) expect "$work/region-$t-$s.log" "20 messages of 64 parts sent, 1280 of 1280 pieces acknowledged, region event seen" ;;
      *) expect "$work/region-$t-$s.log" "20 messages of 64 parts sent, 1280 of 1280 pieces acknowledged, 0 bad, hints ok, region event seen" ;;
    esac
  done
done

# Once under AddressSanitizer (and the region sampler's callbacks on the region's thread too).
a="ipc://$work/asan"
"$bin/fairmq-sink" --id sink1 $common --transport zeromq --multipart true --max-iterations 20 \
  --channel-config "name=data,type=pull,method=bind,address=$a,rateLogging=0" > "$work/asan-sink.log" & sink=$!
ASAN_OPTIONS=detect_leaks=0 "$work/c-sampler-asan" --id asan $common --transport zeromq --max-iterations 20 \
  --channel-config "name=data,type=push,method=connect,address=$a,rateLogging=0,linger=2000" > "$work/asan.log" 2>&1
wait $sink
expect "$work/asan-sink.log" "Received 20 messages"
a="ipc://$work/asan-region"
"$bin/fairmq-sink" --id sink1 $common --transport shmem --multipart true --max-iterations 9 \
  --channel-config "name=data,type=pull,method=bind,address=$a,rateLogging=0" > "$work/asan-region-sink.log" & sink=$!
ASAN_OPTIONS=detect_leaks=0 expect_exit "$work/asan-region.log" "$work/c-region-sampler-asan" --id asan $common \
  --transport shmem --max-iterations 10 --channel-config "name=data,type=push,method=connect,address=$a,rateLogging=0,linger=2000"
wait $sink
expect "$work/asan-region.log" "10 messages of 64 parts sent, 640 of 640 pieces acknowledged, 0 bad"

# A CMake project finds the package and links both its targets.
cmake -S "$ex/cmake" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" > "$work/cmake.log"
cmake --build "$work/cmake-build" > "$work/cmake-build.log"
test -x "$work/cmake-build/guide_sink"
"$work/cmake-build/zmq_clash_static" "$session-clash" "$work" > "$work/cmake-zmq-clash.log"
expect "$work/cmake-zmq-clash.log" "ok$"
# A FairMQ device project, unchanged: its CMakeLists has only find_package(FairMQ) and
# FairMQ::FairMQ, its sources only FairMQ's include paths; the same sources build through
# pkg-config fairmq too. Run as a 1-1 topology on both transports, with exact counts.
cmake -S "$ex/compat" -B "$work/compat-build" -DCMAKE_PREFIX_PATH="$prefix" > "$work/compat-cmake.log"
cmake --build "$work/compat-build" > "$work/compat-build.log"
test -x "$work/compat-build/compat-sink"
# Regions through FairMQ's headers: 20 multiparts of 16 region pieces (a single-block callback,
# hints) to the Rust sink; the sampler checks every piece came back exactly once.
for t in zeromq shmem; do
  a="ipc://$work/compat-region-$t"
  "$bin/fairmq-sink" --id sink1 $common --transport $t --multipart true --max-iterations 19 \
    --channel-config "name=data,type=pull,method=bind,address=$a,rateLogging=0" > "$work/compat-region-sink-$t.log" &
  sink=$!
  expect_exit "$work/compat-region-$t.log" "$work/compat-build/compat-region_sampler" --id rsampler $common \
    --transport $t --max-iterations 20 \
    --channel-config "name=data,type=push,method=connect,address=$a,rateLogging=0,linger=2000"
  wait $sink
  expect "$work/compat-region-sink-$t.log" "Received 19 messages"
  expect "$work/compat-region-$t.log" "compat region sampler: 20 messages, 320 of 320 pieces came back once, 0 bad"
done
c++ $(pkg-config --cflags fairmq) -Wall -Wextra -Werror "$ex/compat/sink.cxx" -o "$work/compat-sink-pc" \
  $(pkg-config --libs fairmq)
# fair::mq::pmr: a container built in a transport's memory resource is sent without a copy.
c++ -std=c++17 $(pkg-config --cflags fairmq) -Wall -Wextra -Werror "$ex/compat/pmr.cxx" -o "$work/compat-pmr" \
  $(pkg-config --libs fairmq)
for t in zeromq shmem; do
  "$work/compat-pmr" $t "$session-pmr-$t" > "$work/compat-pmr-$t.log" 2>&1 || { cat "$work/compat-pmr-$t.log"; exit 1; }
  expect "$work/compat-pmr-$t.log" "pmr ok"
done
for t in zeromq shmem; do
  a="ipc://$work/compat-$t"
  "$work/compat-sink-pc" --id sink1 $common --transport $t --text "a FairMQ project" --max-iterations 40 \
    --channel-config "name=data,type=pull,method=bind,address=$a,rateLogging=0" > "$work/compat-sink-$t.log" & sink=$!
  # The sink counts its peers at its first message: the sampler must still be there then, so it
  # starts once the sink runs and takes its time (a sampler done before the sink ran had left).
  await "$work/compat-sink-$t.log" "READY ---> RUNNING"
  "$work/compat-build/compat-sampler" --flag --id sampler1 $common --transport $t --text "a FairMQ project" \
    --max-iterations 40 --msg-rate 200 --tags "a b" c --tags d \
    --channel-config "name=data,type=push,method=connect,address=$a,rateLogging=0,linger=2000" \
    > "$work/compat-sampler-$t.log"
  wait $sink
  expect "$work/compat-sampler-$t.log" "compat sampler sent 40 messages in"
  expect "$work/compat-sampler-$t.log" "getDevice: text is 'a FairMQ project'"
  expect "$work/compat-sampler-$t.log" "compat config checks passed"
  expect "$work/compat-sampler-$t.log" "compat vector option: <a b><c><d>"
  expect "$work/compat-sink-$t.log" "compat sink received 40 messages, 40 right"
  expect "$work/compat-sink-$t.log" "compat sink peers at the first message: 1 (channel says 1)"
  expect "$work/compat-sink-$t.log" \
    "compat sink hooks Bind(1)Connect, members: id sink1, channels 1, transport set, GetChannel refers to fChannels"
  expect "$work/compat-sink-$t.log" \
    "compat sink states: init in INITIALIZING DEVICE, seen READY>RUNNING, watcher saw RUNNING, BIND while running refused"
done
# 1-n-1 from a JSON --mq-config, as FairMQ's example: sampler -> 2 processors (each moves what it
# receives into a Parts and sends it on) -> sink; 60 messages, each reaching the sink once, right.
for t in zeromq shmem; do
  j="$work/compat-1n1-$t.json"
  a1="ipc://$work/compat-1n1-$t-a" a2="ipc://$work/compat-1n1-$t-b"
  cat > "$j" <<JSON
{ "fairMQOptions": { "devices": [
  { "id": "sampler1", "channels": [ { "name": "data", "type": "push", "method": "bind", "address": "$a1", "rateLogging": 0 } ] },
  { "id": "processor1", "channels": [ { "name": "data1", "type": "pull", "method": "connect", "address": "$a1", "rateLogging": 0 },
                                      { "name": "data2", "type": "push", "method": "connect", "address": "$a2", "rateLogging": 0 } ] },
  { "id": "processor2", "channels": [ { "name": "data1", "type": "pull", "method": "connect", "address": "$a1", "rateLogging": 0 },
                                      { "name": "data2", "type": "push", "method": "connect", "address": "$a2", "rateLogging": 0 } ] },
  { "id": "sink1", "channels": [ { "name": "data", "type": "pull", "method": "bind", "address": "$a2", "rateLogging": 0 } ] }
] } }
JSON
  "$work/compat-build/compat-sink" --id sink1 $common --transport $t --max-iterations 60 --mq-config "$j" \
    > "$work/compat-1n1-sink-$t.log" & sink=$!
  procs=()
  for p in processor1 processor2; do
    "$work/compat-build/compat-processor" --id $p $common --transport $t --mq-config "$j" > "$work/compat-1n1-$p-$t.log" &
    procs+=($!)
  done
  "$work/compat-build/compat-sampler" --id sampler1 $common --transport $t --max-iterations 60 --msg-rate 5000 \
    --mq-config "$j" > "$work/compat-1n1-sampler-$t.log"
  wait $sink
  expect "$work/compat-1n1-sink-$t.log" "compat sink received 60 messages, 60 right"
  kill -INT "${procs[@]}"
  for p in "${procs[@]}"; do wait "$p" || { echo "a processor failed"; cat "$work"/compat-1n1-processor*-$t.log; exit 1; }; done
  forwarded=$(sed -n 's/.*compat processor processor[12] forwarded \([0-9]*\) messages.*/\1/p' "$work"/compat-1n1-processor*-$t.log |
    paste -sd+ | bc)
  [ "$forwarded" = 60 ] || { echo "the processors forwarded $forwarded messages, not 60"; exit 1; }
done

# Request-reply: 25 requests, each answered with its own reply.
for t in zeromq shmem; do
  a="ipc://$work/compat-reqrep-$t"
  "$work/compat-build/compat-server" --id server1 $common --transport $t --max-iterations 25 \
    --channel-config "name=data,type=rep,method=bind,address=$a,rateLogging=0" > "$work/compat-server-$t.log" & server=$!
  "$work/compat-build/compat-client" --id client1 $common --transport $t --max-iterations 25 \
    --channel-config "name=data,type=req,method=connect,address=$a,rateLogging=0" > "$work/compat-client-$t.log"
  wait $server
  expect "$work/compat-client-$t.log" "compat client sent 25 requests, 25 answered"
  expect "$work/compat-server-$t.log" "compat server answered 25 requests"
done

# Multiple channels with a poller, and C++ beside Rust builtin devices: the C++ merger polls two
# inputs, fed by the C++ sampler (20 messages) and the Rust bsampler (--max-iterations 29: 30
# messages, FairMQ's count); the C++ sampler feeds the Rust sink (15 sent, "Received 14").
for t in zeromq shmem; do
  a1="ipc://$work/compat-merge-$t-1" a2="ipc://$work/compat-merge-$t-2" a3="ipc://$work/compat-rsink-$t"
  "$work/compat-build/compat-merger" --id merger1 $common --transport $t --max-iterations 50 --sources 2 \
    --channel-config "name=in1,type=pull,method=bind,address=$a1,rateLogging=0" \
    "name=in2,type=pull,method=bind,address=$a2,rateLogging=0" > "$work/compat-merger-$t.log" & merger=$!
  "$bin/fairmq-sink" --id rsink $common --transport $t --max-iterations 14 \
    --channel-config "name=data,type=pull,method=bind,address=$a3,rateLogging=0" > "$work/compat-rsink-$t.log" & rsink=$!
  "$bin/fairmq-bsampler" --id rsampler $common --transport $t --msg-size 100 --max-iterations 29 \
    --channel-config "name=data,type=push,method=connect,address=$a2,rateLogging=0,linger=2000" > /dev/null &
  rsampler=$!
  "$work/compat-build/compat-sampler" --id sampler1 $common --transport $t --max-iterations 20 \
    --channel-config "name=data,type=push,method=connect,address=$a1,rateLogging=0,linger=2000" > /dev/null
  "$work/compat-build/compat-sampler" --id sampler2 $common --transport $t --max-iterations 15 \
    --channel-config "name=data,type=push,method=connect,address=$a3,rateLogging=0,linger=2000" > /dev/null
  wait $rsampler $merger $rsink
  expect "$work/compat-merger-$t.log" "compat merger received 20 on in1 and 30 on in2"
  expect "$work/compat-rsink-$t.log" "Received 14 messages"
done

# Copy-push: a message over the copier's own buffer, a copy of it to each of two sinks (30 each).
for t in zeromq shmem; do
  a1="ipc://$work/compat-copy-$t-1" a2="ipc://$work/compat-copy-$t-2"
  sinks=()
  for a in "$a1" "$a2"; do
    "$work/compat-build/compat-sink" --id sink1 $common --transport $t --text copied --max-iterations 30 \
      --channel-config "name=data,type=pull,method=bind,address=$a,rateLogging=0" > "$work/compat-copy-$t-${#sinks[@]}.log" &
    sinks+=($!)
  done
  "$work/compat-build/compat-copier" --id copier1 $common --transport $t --max-iterations 30 \
    --channel-config "name=data,type=push,method=connect,address=$a1,address=$a2,rateLogging=0,linger=2000" \
    > "$work/compat-copier-$t.log"
  wait "${sinks[@]}"
  expect "$work/compat-copier-$t.log" "compat copier sent 30 messages to each of 2 outputs"
  for i in 0 1; do expect "$work/compat-copy-$t-$i.log" "compat sink received 30 messages, 30 right"; done
done

# n-m's receiving side: two senders of two-part messages (id, payload), one assembler moving each
# payload out of the received Parts into the Parts of its id: 20 complete ids, none malformed.
for t in zeromq shmem; do
  a="ipc://$work/compat-nm-$t"
  "$work/compat-build/compat-assembler" --id assembler1 $common --transport $t --num-senders 2 --max-iterations 20 \
    --channel-config "name=data,type=pull,method=bind,address=$a,rateLogging=0" > "$work/compat-assembler-$t.log" &
  assembler=$!
  senders=()
  for i in 1 2; do
    "$work/compat-build/compat-parts_sender" --id sender$i $common --transport $t --max-iterations 20 \
      --channel-config "name=data,type=push,method=connect,address=$a,rateLogging=0,linger=2000" > /dev/null &
    senders+=($!)
  done
  wait $assembler "${senders[@]}"
  expect "$work/compat-assembler-$t.log" "compat assembler completed 20 ids, 0 malformed, 0 incomplete"
done

# A custom option declared required() (Boost) must be given, as in FairMQ.
if "$work/compat-build/compat-merger" --id merger1 $common > "$work/compat-required.log" 2>&1; then
  echo "the merger ran without its required --sources"; exit 1
fi
expect "$work/compat-required.log" "the option '--sources' is required but missing"

# The rate limiter holds the sampler back: 20 messages at 100 a second take at least 190 ms.
a="ipc://$work/compat-rate"
"$work/compat-sink-pc" --id sink1 $common --transport zeromq --max-iterations 20 \
  --channel-config "name=data,type=pull,method=bind,address=$a,rateLogging=0" > "$work/compat-rate-sink.log" & sink=$!
"$work/compat-build/compat-sampler" --id sampler1 $common --transport zeromq --max-iterations 20 --msg-rate 100 \
  --channel-config "name=data,type=push,method=connect,address=$a,rateLogging=0,linger=2000" > "$work/compat-rate.log"
wait $sink
expect "$work/compat-rate-sink.log" "compat sink received 20 messages, 20 right"
elapsed_ms=$(sed -n 's/.*compat sampler sent 20 messages in \([0-9]*\) ms.*/\1/p' "$work/compat-rate.log")
[ -n "$elapsed_ms" ] && [ "$elapsed_ms" -ge 190 ] || { echo "20 messages at --msg-rate 100 took ${elapsed_ms:-?} ms"; exit 1; }
# Plugins, built against the installed headers only (neither links libfairmq_rs), loaded by a Rust
# device with -S/-P: the C example drives the device; a FairMQ-style C++ plugin (FairMQ's
# <fairmq/Plugin.h>, REGISTER_FAIRMQ_PLUGIN) takes control and drives it while the builtin
# controller stands back.
mkdir -p "$work/plugins"
cc -std=c11 $cflags -fPIC -shared "$ex/plugin.c" -o "$work/plugins/libfairmq-plugin-example.so" -lpthread
c++ -std=c++17 $(pkg-config --cflags fairmq) -Wall -Wextra -Werror -pedantic -fPIC -shared "$ex/cpp_plugin.cpp" \
  -o "$work/plugins/libfairmq-plugin-mycontroller.so" -lboost_program_options
! nm -D "$work/plugins/libfairmq-plugin-mycontroller.so" | grep -q ' U fmq_' || { echo "the C++ plugin needs libfairmq_rs"; exit 1; }
plugged="--id plugged --control static --color false --severity debug -S $work/plugins"
expect_exit "$work/plugin-c.log" "$bin/fairmq-test-device" $plugged -P example --example-drive \
  --example-log "$work/plugin-c-states.log"
expect "$work/plugin-c-states.log" "drove the device to EXITING"
expect_exit "$work/plugin-cpp.log" "$bin/fairmq-test-device" $plugged -P mycontroller --mycontroller-run-time 200
expect "$work/plugin-cpp.log" "Plugin 'control' is not allowed to take over control. Currently, plugin 'mycontroller' has taken control."
expect "$work/plugin-cpp.log" "MyController: device is EXITING, releasing control"
[ "$(grep -c 'READY ---> RUNNING' "$work/plugin-cpp.log")" = 1 ] || { echo "the C++ plugin ran the device more than once"; exit 1; }
echo "C and C++ examples: all passed"
