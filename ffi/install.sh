#!/usr/bin/env bash
# Installs libfairmq_rs (shared with versioned soname links, and static), its headers, a
# pkg-config file and a CMake package into PREFIX. Build first: cargo build --release -p fairmq-ffi
# Usage: ffi/install.sh PREFIX [PROFILE=release]
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
install -m 644 "$target/libfairmq_rs.a" "$prefix/lib/libfairmq_rs.a"
install -m 644 "$root/include/fairmq_rs.h" "$root/include/fairmq_rs.hpp" "$root/include/fairmq_rs_run_device.hpp" "$prefix/include/"
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
echo "installed fairmq_rs $version into $prefix"
