// fairmq-rs compatibility header: FairMQ's deprecated <fairmq/FairMQParts.h>, which includes <fairmq/Parts.h>.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairmq/Parts.h>
