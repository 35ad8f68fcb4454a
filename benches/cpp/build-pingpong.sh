#!/bin/sh
# Builds fairmq-ping and fairmq-pong (benches/cpp/pingpong.cxx) against a C++ FairMQ build made
# outside this repository (see benches/README.md), next to its fairmq-bsampler and fairmq-sink, so
# that the harness's --cpp-fairmq <build>/fairmq finds them all:
#
#   benches/cpp/build-pingpong.sh <FairMQ source dir> <FairMQ build dir> <FairLogger prefix>
#
# Needs a C++17 compiler and the Boost and fmt development packages FairMQ was built with.
set -eu
src=${1:?usage: build-pingpong.sh <FairMQ source dir> <FairMQ build dir> <FairLogger prefix>}
build=${2:?usage: build-pingpong.sh <FairMQ source dir> <FairMQ build dir> <FairLogger prefix>}
logger=${3:?usage: build-pingpong.sh <FairMQ source dir> <FairMQ build dir> <FairLogger prefix>}
here=$(cd "$(dirname "$0")" && pwd)
out=$build/fairmq
lib=$out/libfairmq.so
[ -f "$lib" ] || { echo "missing $lib: build FairMQ first" >&2; exit 1; }
flags="-std=c++17 -O3 -DNDEBUG -DBOOST_ALL_NO_LIB -DBOOST_ERROR_CODE_HEADER_ONLY -DFMT_SHARED
 -DFAIRMQ_HAS_STD_FILESYSTEM=1 -DFAIRMQ_HAS_STD_PMR=1
 -I$src/fairmq -I$src -I$build -isystem $logger/include"
libs="-Wl,-rpath,$out:$logger/lib $lib -L$logger/lib -lFairLogger -lboost_program_options
 -lboost_filesystem -lboost_regex -lboost_container -lfmt -ldl -lrt -pthread"
# shellcheck disable=SC2086
c++ $flags -o "$out/fairmq-ping" "$here/pingpong.cxx" $libs
# shellcheck disable=SC2086
c++ $flags -DFAIRMQ_RS_PONG -o "$out/fairmq-pong" "$here/pingpong.cxx" $libs
echo "built $out/fairmq-ping and $out/fairmq-pong"
