// fairmq-rs compatibility header: FairMQ's deprecated <fairmq/FairMQTransportFactory.h>, which includes <fairmq/TransportFactory.h>.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairmq/TransportFactory.h>
