// fairmq-rs compatibility header: FairMQ's deprecated <fairmq/FairMQSocket.h>, which includes <fairmq/Socket.h>.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairmq/Socket.h>
