// fairmq-rs compatibility header: FairMQ's deprecated <fairmq/FairMQDevice.h>, which includes <fairmq/Device.h>.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairmq/Device.h>
