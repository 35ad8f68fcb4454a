// fairmq-rs compatibility header: FairMQ's deprecated <fairmq/FairMQMessage.h>, which includes <fairmq/Message.h>.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairmq/Message.h>
