#!/usr/bin/env bash
# Builds FairMQ's own test suite (its `test/` directory, v1.10.0) unchanged against the installed
# fairmq-rs and runs it, as FairMQ's CMake and CTest would: the `*.in` files configured, every suite
# compiled and linked with `pkg-config fairmq`, every test run alone with its suite's timeout from
# the build directory. Prints passed/failed per suite and a total; exits 1 when fewer than the bar
# (FMQ_TESTSUITE_MIN, default 166) pass, 2 when it cannot build what it needs.
#
# Usage: ffi/fairmq-testsuite.sh <FairMQ test dir> [filter regex on Suite.Test.Name]
# Env:   FMQ_PREFIX   an install of fairmq-rs to use (default: built and installed here)
#        FMQ_WORK     the build directory (default: a temporary one, removed at the end)
#        FMQ_JOBS     parallel compilations (default: the number of cores)
#        FMQ_KEEP_LOGS=1  keep each failed test's output in $FMQ_WORK/logs
set -euo pipefail
src=$(cd "${1:?usage: $0 <FairMQ test dir> [filter]}" && pwd)
filter=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
min=${FMQ_TESTSUITE_MIN:-166}
jobs=${FMQ_JOBS:-$(nproc)}

# Everything it needs from the system: GoogleTest, Boost (the tests include Boost.Process,
# Boost.Filesystem and Boost.ProgramOptions themselves).
for h in gtest/gtest.h boost/process.hpp boost/filesystem.hpp boost/program_options.hpp; do
  [ -f "/usr/include/$h" ] || { echo "missing /usr/include/$h (apt-get install -y libgtest-dev libboost-dev libboost-filesystem-dev libboost-program-options-dev)"; exit 2; }
done

work=${FMQ_WORK:-}
if [ -z "$work" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
work=$(cd "$work" && pwd)
build="$work/build"
mkdir -p "$build/test/helper/plugins" "$work/logs" "$work/obj"

prefix=${FMQ_PREFIX:-}
if [ -z "$prefix" ]; then
  (cd "$root" && cargo build --release -p fairmq-ffi --quiet && cargo build --release -p fairmq --bins --quiet)
  prefix="$work/prefix"
  "$root/ffi/install.sh" "$prefix" release > /dev/null
fi
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$prefix/bin:$PATH"
cflags="$(pkg-config --cflags fairmq) -O1 -pthread"
libs="$(pkg-config --libs fairmq) -lboost_filesystem -pthread"

# configure_file, as FairMQ's test/CMakeLists.txt does it.
configure() { # in out key=value...
  local in=$1 out=$2
  shift 2
  local args=()
  for kv in "$@"; do args+=(-e "s|@${kv%%=*}@|${kv#*=}|g"); done
  mkdir -p "$(dirname "$out")"
  sed "${args[@]}" "$in" > "$out"
}
configure "$src/runner.cxx.in" "$build/test/runner.cxx" "RUN_TEST_DEVICE=$build/test/testhelper_runTestDevice"
configure "$src/TestEnvironment.h.in" "$build/test/TestEnvironment.h" "FAIRMQ_BIN_DIR=$prefix/bin" \
  "SDK_TESTSUITE_SOURCE_DIR=$src/sdk" "CMAKE_CURRENT_BINARY_DIR=$build/test"
configure "$src/helper/plugins/dummy.h.in" "$build/test/helper/plugins/dummy.h" \
  VERSION_MAJOR=1 VERSION_MINOR=1 VERSION_PATCH=0 VERSION=1.1.0
configure "$src/helper/plugins/dummy2.h.in" "$build/test/helper/plugins/dummy2.h" \
  VERSION_MAJOR=2 VERSION_MINOR=2 VERSION_PATCH=0 VERSION=2.2.0

# The suites: name, timeout, sources (relative to the test dir; runner.cxx is the configured one),
# extra include dirs and libraries, as in FairMQ's test/CMakeLists.txt.
suites=(Protocols Parts Message Region Device Plugins PluginsPrelinked PluginServices EventManager
  Properties Tools Channel Transport Poller MemoryResources)
declare -A sources timeout incs extra
sources[Protocols]="protocols/_pair.cxx protocols/_pub_sub.cxx protocols/_push_pull.cxx protocols/_req_rep.cxx protocols/_push_pull_multipart.cxx"
sources[Parts]="parts/_add_part.cxx parts/_iterator_interface.cxx"
sources[Message]="message/_message.cxx"
sources[Region]="region/_creation.cxx region/_region.cxx"
sources[Device]="device/_multiple_devices.cxx device/_version.cxx device/_config.cxx device/_waitfor.cxx device/_exceptions.cxx device/_error_state.cxx device/_signals.cxx device/_transitions.cxx"
sources[Plugins]="plugins/_plugin.cxx plugins/_plugin_manager.cxx"
sources[PluginsPrelinked]="plugins/_plugin_manager_prelink.cxx"
sources[PluginServices]="plugin_services/_config.cxx plugin_services/_control.cxx"
sources[EventManager]="event_manager/_event_manager.cxx"
sources[Properties]="properties/_properties.cxx properties/_suboptparser.cxx"
sources[Tools]="tools/_network.cxx"
sources[Channel]="channel/_channel.cxx"
sources[Transport]="transport/_transfer_timeout.cxx transport/_options.cxx transport/_shmem.cxx"
sources[Poller]="poller/_poller.cxx"
sources[MemoryResources]="memory_resources/_memory_resources.cxx"
for s in "${suites[@]}"; do timeout[$s]=20; incs[$s]=""; extra[$s]=""; done
timeout[Tools]=5
incs[Protocols]="-I$src/protocols"
incs[Parts]="-I$src/parts"
incs[Message]="-I$src/message"
incs[Region]="-I$src/region"
incs[Device]="-I$src/device"
incs[PluginsPrelinked]="-I$build/test/helper/plugins"
extra[PluginsPrelinked]="-L$build/test -Wl,-rpath,$build/test -lFairMQPlugin_test_dummy -lfairmq-plugin-test_dummy2"

# Compilation: one object per source, so that one source that does not compile is named alone.
compile() { # source object include-flags...
  local source=$1 object=$2
  shift 2
  # shellcheck disable=SC2086
  if c++ $cflags -I"$src" -I"$build/test" "$@" -c "$source" -o "$object" > "$object.log" 2>&1; then
    rm -f "$object.log"
  else
    rm -f "$object"
  fi
}
export -f compile
export cflags src build
tasks="$work/compile.tasks"
: > "$tasks"
obj() { local o=${1//\//_}; echo "$work/obj/${o%.*}.o"; }
echo "$build/test/runner.cxx $(obj runner.cxx)" >> "$tasks"
echo "$src/helper/runTestDevice.cxx $(obj helper/runTestDevice.cxx)" >> "$tasks"
echo "$src/helper/plugins/dummy.cxx $(obj helper/plugins/dummy.cxx) -fPIC -fvisibility=hidden -I$build/test/helper/plugins" >> "$tasks"
echo "$src/helper/plugins/dummy2.cxx $(obj helper/plugins/dummy2.cxx) -fPIC -fvisibility=hidden -I$build/test/helper/plugins" >> "$tasks"
for s in "${suites[@]}"; do
  for f in ${sources[$s]}; do echo "$src/$f $(obj "$f") ${incs[$s]}" >> "$tasks"; done
done
sed "s/ *$//" "$tasks" | sort -u | xargs -P "$jobs" -L 1 bash -c 'compile "$@"' _

failed_sources=0
for o in "$work"/obj/*.o.log; do
  [ -e "$o" ] || continue
  failed_sources=$((failed_sources + 1))
  echo "== does not compile: $(basename "${o%.o.log}") (first errors; all in $o)"
  grep -m 5 'error' "$o" || head -5 "$o"
done

link() { # output objects... -- flags...
  local out=$1
  shift
  local objs=() flags=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do objs+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  flags=("$@")
  for o in "${objs[@]}"; do [ -f "$o" ] || return 1; done
  # shellcheck disable=SC2086
  c++ "${objs[@]}" -o "$out" "${flags[@]}" $libs > "$out.link.log" 2>&1 ||
    { echo "== does not link: $(basename "$out")"; grep -m 5 -E 'undefined|error' "$out.link.log" || true; return 1; }
  rm -f "$out.link.log"
}
plugins_ok=1
link "$build/test/testhelper_runTestDevice" "$(obj helper/runTestDevice.cxx)" || true
link "$build/test/libFairMQPlugin_test_dummy.so" "$(obj helper/plugins/dummy.cxx)" -- -shared \
  -Wl,-soname,libFairMQPlugin_test_dummy.so.1.1.0 || plugins_ok=0
link "$build/test/libfairmq-plugin-test_dummy2.so" "$(obj helper/plugins/dummy2.cxx)" -- -shared \
  -Wl,-soname,libfairmq-plugin-test_dummy2.so.2.2.0 || plugins_ok=0
if [ $plugins_ok = 1 ]; then
  # add_testlib's VERSION: the file is the versioned name, the plain names link to it.
  for l in libFairMQPlugin_test_dummy.so:1.1.0 libfairmq-plugin-test_dummy2.so:2.2.0; do
    mv "$build/test/${l%%:*}" "$build/test/${l%%:*}.${l#*:}"
    ln -sf "${l%%:*}.${l#*:}" "$build/test/${l%%:*}"
  done
fi
for s in "${suites[@]}"; do
  objs=("$(obj runner.cxx)")
  for f in ${sources[$s]}; do objs+=("$(obj "$f")"); done
  # shellcheck disable=SC2086
  link "$build/test/testsuite_$s" "${objs[@]}" -- -Wl,--no-as-needed -lgtest ${extra[$s]} || true
done

# Running: each test alone (as gtest_discover_tests registers them), from the build directory.
# What the tests leave in /dev/shm (a failed test's session, say) is removed at the end: every
# fmqrs_ object that was not there before.
shm_before="$work/shm.before"
ls /dev/shm 2> /dev/null | grep '^fmqrs_' | sort > "$shm_before" || true
remove_new_shm() {
  local n
  for n in $( (ls /dev/shm 2> /dev/null | grep '^fmqrs_' | sort | comm -13 "$shm_before" -) || true); do
    rm -f "/dev/shm/$n"
  done
}
trap 'remove_new_shm; [ -n "${FMQ_WORK:-}" ] || rm -rf "$work"; true' EXIT
total_pass=0
total_fail=0
summary=()
for s in "${suites[@]}"; do
  exe="$build/test/testsuite_$s"
  declared=0
  for f in ${sources[$s]}; do declared=$((declared + $(grep -cE '^\s*TEST(_F|_P)?\(' "$src/$f" || true))); done
  if [ ! -x "$exe" ]; then
    summary+=("$(printf '%-17s not built (%s tests)' "$s" "$declared")")
    total_fail=$((total_fail + declared))
    continue
  fi
  mapfile -t tests < <("$exe" --gtest_list_tests | awk '/^[^ ]/ {suite=$1} /^  / {print suite $1}')
  pass=0
  fail=0
  failed=()
  for t in "${tests[@]}"; do
    [ -n "$filter" ] && ! [[ "$s.$t" =~ $filter ]] && continue
    log="$work/logs/$s.$t.log"
    if (cd "$build" && timeout -k 5 "${timeout[$s]}" "$exe" --gtest_filter="$t" > "$log" 2>&1) &&
      grep -q '\[  PASSED  \] 1 test' "$log"; then
      pass=$((pass + 1))
      rm -f "$log"
    else
      fail=$((fail + 1))
      failed+=("$t")
      [ "${FMQ_KEEP_LOGS:-0}" = 1 ] || rm -f "$log"
    fi
  done
  total_pass=$((total_pass + pass))
  total_fail=$((total_fail + fail))
  summary+=("$(printf '%-17s passed %3d  failed %3d%s' "$s" "$pass" "$fail" "${failed[*]:+  (${failed[*]})}")")
done

echo "== FairMQ test suite ($src) against fairmq-rs ($prefix)"
printf '%s\n' "${summary[@]}"
echo "total: passed $total_pass of $((total_pass + total_fail)); sources that do not compile: $failed_sources"
if [ -z "$filter" ] && [ "$total_pass" -lt "$min" ]; then
  echo "below the bar: $total_pass < $min"
  exit 1
fi
