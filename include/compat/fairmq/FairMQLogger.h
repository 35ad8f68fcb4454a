// fairmq-rs compatibility header: FairMQ's deprecated <fairmq/FairMQLogger.h>, which includes <fairlogger/Logger.h>.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairlogger/Logger.h>
