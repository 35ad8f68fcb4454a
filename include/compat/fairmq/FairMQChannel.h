// fairmq-rs compatibility header: FairMQ's deprecated <fairmq/FairMQChannel.h>, which includes <fairmq/Channel.h>.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairmq/Channel.h>
