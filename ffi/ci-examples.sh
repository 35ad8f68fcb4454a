#!/usr/bin/env bash
# The C and C++ examples in CI: built with the system compilers against the installed library
# (strict warnings; once under AddressSanitizer), then run against Rust devices with exact counts.
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
  for s in "$session" "$session-rt-zeromq" "$session-rt-shmem"; do
    rm -f /dev/shm/fmqrs_"$(printf '%s' "$(id -u)$s" | sha256sum | cut -c1-8)"_* 2>/dev/null || true
  done
  rm -f /tmp/fmqrs-c-* 2>/dev/null || true
}
trap cleanup EXIT
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

cc -std=c11 $cflags "$ex/sampler.c" -o "$work/c-sampler" $libs
cc -std=c11 $cflags "$ex/panic.c" -o "$work/c-panic" $libs
cc -std=c11 $cflags "$ex/roundtrip.c" -o "$work/c-roundtrip" $libs
c++ -std=c++17 $cflags "$ex/guide_sink.cpp" -o "$work/guide-sink" $libs
c++ -std=c++17 $cflags "$ex/counting_sink.cpp" -o "$work/counting-sink" $libs
cc -std=c11 $cflags -fsanitize=address -fno-omit-frame-pointer "$ex/sampler.c" -o "$work/c-sampler-asan" $libs
# The static library links too (pkg-config --static adds what it needs).
cc -std=c11 $cflags "$ex/panic.c" -o "$work/c-panic-static" "$prefix/lib/libfairmq_rs.a" $(pkg-config --static --libs-only-l fairmq_rs | sed 's/-lfairmq_rs//')

"$work/c-panic" > "$work/panic.log"; grep -q '^ok$' "$work/panic.log"
"$work/c-panic-static" > "$work/panic-static.log"; grep -q '^ok$' "$work/panic-static.log"
for t in zeromq shmem; do "$work/c-roundtrip" "$t" "$session-rt-$t"; done

common="--control static --color false --severity info --session $session --shm-segment-size 100000000"
expect() { # file text
  grep -q "$2" "$1" || { echo "expected '$2' in $1:"; cat "$1"; exit 1; }
}
for t in zeromq shmem; do
  # A C sampler to the Rust sink: 50 data messages and the end message, all counted.
  a="ipc://$work/c2rust-$t"
  "$bin/fairmq-sink" --id sink1 $common --transport $t --multipart true --max-iterations 50 \
    --channel-config "name=data,type=pull,method=bind,address=$a,rateLogging=0" > "$work/rust-sink-$t.log" & sink=$!
  "$work/c-sampler" --id csampler $common --transport $t --max-iterations 50 \
    --channel-config "name=data,type=push,method=connect,address=$a,rateLogging=0,linger=2000" > "$work/c-sampler-$t.log"
  wait $sink
  expect "$work/rust-sink-$t.log" "Received 51 messages"
  expect "$work/c-sampler-$t.log" "C sampler sent 50 data messages"

  # A Rust sampler to a C++ sink: exactly 50 messages.
  a="ipc://$work/rust2cpp-$t"
  "$work/counting-sink" --id cppsink $common --transport $t --max-iterations 50 \
    --channel-config "name=data,type=pull,method=bind,address=$a,rateLogging=0" > "$work/cpp-sink-$t.log" & sink=$!
  "$bin/fairmq-bsampler" --id rsampler $common --transport $t --msg-size 1000 --max-iterations 49 \
    --channel-config "name=data,type=push,method=connect,address=$a,rateLogging=0,linger=2000" > "$work/rust-sampler-$t.log"
  wait $sink
  expect "$work/cpp-sink-$t.log" "C++ sink received 50 messages, 50000 bytes"

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

# Once under AddressSanitizer.
a="ipc://$work/asan"
"$bin/fairmq-sink" --id sink1 $common --transport zeromq --multipart true --max-iterations 20 \
  --channel-config "name=data,type=pull,method=bind,address=$a,rateLogging=0" > "$work/asan-sink.log" & sink=$!
ASAN_OPTIONS=detect_leaks=0 "$work/c-sampler-asan" --id asan $common --transport zeromq --max-iterations 20 \
  --channel-config "name=data,type=push,method=connect,address=$a,rateLogging=0,linger=2000" > "$work/asan.log" 2>&1
wait $sink
expect "$work/asan-sink.log" "Received 21 messages"

# A CMake project finds the package.
if command -v cmake > /dev/null; then
  cmake -S "$ex/cmake" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" > "$work/cmake.log"
  cmake --build "$work/cmake-build" > "$work/cmake-build.log"
  test -x "$work/cmake-build/guide_sink"
else
  echo "cmake not found: skipping the find_package(fairmq_rs) check"
fi
echo "C and C++ examples: all passed"
