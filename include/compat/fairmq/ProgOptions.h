// fairmq-rs compatibility header: FairMQ's <fairmq/ProgOptions.h>, the configuration.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairmq_rs.hpp>
#include <fairmq/LegacyNames.h>
