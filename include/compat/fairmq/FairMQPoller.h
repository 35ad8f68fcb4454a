// fairmq-rs compatibility header: FairMQ's deprecated <fairmq/FairMQPoller.h>, which includes <fairmq/Poller.h>.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairmq/Poller.h>
