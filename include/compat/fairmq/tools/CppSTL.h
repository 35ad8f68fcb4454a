// fairmq-rs compatibility header: FairMQ's <fairmq/tools/CppSTL.h>.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once

// FairMQ 1.10's CppSTL.h is empty (its pre-C++17 stand-ins for the standard library are gone);
// this one exists so that sources including it still compile.
namespace fair::mq::tools {
} // namespace fair::mq::tools
