// fairmq-rs compatibility header: FairMQ's <fairmq/tools/Version.h>, a major.minor.patch version.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairmq_rs/version.hpp>
