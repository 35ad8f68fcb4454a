// fairmq-rs compatibility header: FairMQ's <fairmq/EventManager.h>, typed events and their subscribers.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairmq_rs/event_manager.hpp>
