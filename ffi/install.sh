#!/usr/bin/env bash
# Installs libfairmq_rs (shared with versioned soname links, and static), its headers, a
# pkg-config file and a CMake package into PREFIX. Build first: cargo build --release -p fairmq-ffi
# Usage: ffi/install.sh PREFIX [PROFILE=release]
#
# The static library is installed isolated: cargo's archive defines the bundled libzmq's zmq_* and
# zmq:: symbols (and Rust's std) globally, which clash with a system libzmq that the same program
# links (a C++ FairMQ program does). So all its members are linked into one relocatable object in
# which every global symbol but fmq_* is made local, and that object is archived alone.
set -euo pipefail
prefix=$(mkdir -p "$1" && cd "$1" && pwd)
profile=${2:-release}
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}/$profile
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n 1)
major=${version%%.*}
mkdir -p "$prefix/lib/pkgconfig" "$prefix/lib/cmake/fairmq_rs" "$prefix/include"
install -m 755 "$target/libfairmq_rs.so" "$prefix/lib/libfairmq_rs.so.$version"
ln -sf "libfairmq_rs.so.$version" "$prefix/lib/libfairmq_rs.so.$major"
ln -sf "libfairmq_rs.so.$major" "$prefix/lib/libfairmq_rs.so"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ld -r --whole-archive "$target/libfairmq_rs.a" -o "$work/fairmq_rs.o"
# readelf, not GNU nm: nm (and plain ar) auto-load the LLVM gold plugin from /usr/lib/bfd-plugins,
# which aborts with "Invalid encoding" on this object.
readelf -sW "$work/fairmq_rs.o" | awk '$5=="GLOBAL" && $7!="UND" {print $8}' | grep '^fmq_' | sort -u > "$work/keep"
test -s "$work/keep" || { echo "no fmq_* symbols in $target/libfairmq_rs.a" >&2; exit 1; }
objcopy --keep-global-symbols="$work/keep" "$work/fairmq_rs.o" "$work/libfairmq_rs.o"
# An explicit plugin keeps ar from loading the LLVM one (see above); without gcc's, plain ar.
plugin=$(gcc --print-file-name=liblto_plugin.so 2>/dev/null || true)
rm -f "$prefix/lib/libfairmq_rs.a"
if [ -n "$plugin" ] && [ -f "$plugin" ]; then
  ar --plugin "$plugin" rcs "$prefix/lib/libfairmq_rs.a" "$work/libfairmq_rs.o"
else
  ar rcs "$prefix/lib/libfairmq_rs.a" "$work/libfairmq_rs.o"
fi
chmod 644 "$prefix/lib/libfairmq_rs.a"
install -m 644 "$root/include/fairmq_rs.h" "$root/include/fairmq_rs.hpp" "$root/include/fairmq_rs_run_device.hpp" \
  "$root/include/fairmq_rs_boost_options.hpp" "$prefix/include/"
# The parts fairmq_rs.hpp includes.
mkdir -p "$prefix/include/fairmq_rs"
install -m 644 "$root"/include/fairmq_rs/*.hpp "$prefix/include/fairmq_rs/"
# FairMQ's include paths, in a directory of their own (only FairMQ::FairMQ and fairmq.pc add it).
(cd "$root/include/compat" && find . -name '*.h' -print0) | while IFS= read -r -d '' h; do
  install -D -m 644 "$root/include/compat/$h" "$prefix/include/fairmq-rs-compat/$h"
done
sed -e "s|@PREFIX@|$prefix|g" -e "s|@VERSION@|$version|g" "$root/ffi/fairmq_rs.pc.in" > "$prefix/lib/pkgconfig/fairmq_rs.pc"
sed -e "s|@VERSION@|$version|g" -e "s|@MAJOR@|$major|g" "$root/ffi/fairmq_rsConfig.cmake.in" > "$prefix/lib/cmake/fairmq_rs/fairmq_rsConfig.cmake"
cat > "$prefix/lib/cmake/fairmq_rs/fairmq_rsConfigVersion.cmake" <<CMAKE
set(PACKAGE_VERSION "$version")
if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
endif()
CMAKE
# FairMQ's own package names, for device projects that build unchanged: the FairMQ version whose
# API this one provides.
fairmq_version=1.10.0
mkdir -p "$prefix/lib/cmake/FairMQ"
sed -e "s|@PREFIX@|$prefix|g" -e "s|@VERSION@|$version|g" -e "s|@FAIRMQ_VERSION@|$fairmq_version|g" \
  "$root/ffi/fairmq.pc.in" > "$prefix/lib/pkgconfig/fairmq.pc"
sed -e "s|@VERSION@|$version|g" -e "s|@MAJOR@|$major|g" -e "s|@FAIRMQ_VERSION@|$fairmq_version|g" \
  "$root/ffi/FairMQConfig.cmake.in" > "$prefix/lib/cmake/FairMQ/FairMQConfig.cmake"
cat > "$prefix/lib/cmake/FairMQ/FairMQConfigVersion.cmake" <<CMAKE
set(PACKAGE_VERSION "$fairmq_version")
if(PACKAGE_FIND_VERSION AND (PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION OR NOT PACKAGE_FIND_VERSION_MAJOR EQUAL 1))
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
CMAKE
# The programs (fairmq-shmmonitor, which devices started with --shm-monitor look for in
# $FAIRMQ_PATH, fairmq-uuid-gen and the builtin devices), where `cargo build -p fairmq --bins` made them.
mkdir -p "$prefix/bin"
for b in fairmq-shmmonitor fairmq-uuid-gen fairmq-bsampler fairmq-sink fairmq-proxy fairmq-splitter fairmq-merger \
  fairmq-multiplier fairmq-pmix-command; do
  if [ -x "$target/$b" ]; then install -m 755 "$target/$b" "$prefix/bin/"; fi
done
echo "installed fairmq_rs $version into $prefix"
