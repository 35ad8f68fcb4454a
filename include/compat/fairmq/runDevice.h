// fairmq-rs compatibility header: FairMQ's <fairmq/runDevice.h>, main() around addCustomOptions and getDevice.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairmq_rs_run_device.hpp>
