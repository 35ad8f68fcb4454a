// fairmq-rs compatibility header: FairMQ's <fairmq/Properties.h>, property values and how they print.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairmq_rs/properties.hpp>
