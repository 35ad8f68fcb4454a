// fairmq-rs compatibility header: FairMQ's deprecated <fairmq/FairMQUnmanagedRegion.h>, which includes <fairmq/UnmanagedRegion.h>.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairmq/UnmanagedRegion.h>
