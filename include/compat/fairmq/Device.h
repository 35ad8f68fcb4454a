// fairmq-rs compatibility header: FairMQ's <fairmq/Device.h>, the device base class.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairmq_rs.hpp>
#include <fairmq/LegacyNames.h>

