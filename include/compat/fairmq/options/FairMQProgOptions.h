// fairmq-rs compatibility header: FairMQ's deprecated <fairmq/options/FairMQProgOptions.h>, which includes <fairmq/ProgOptions.h>.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairmq/ProgOptions.h>
