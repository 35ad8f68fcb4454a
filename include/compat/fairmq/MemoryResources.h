// fairmq-rs compatibility header: FairMQ's <fairmq/MemoryResources.h>, the memory resources of
// fair::mq::pmr (fair::mq::MemoryResource, fair::mq::ChannelResource; TransportFactory's
// GetMemoryResource()).
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairmq_rs.hpp>
#include <fairmq/LegacyNames.h>

namespace fair::mq {
using FairMQMemoryResource [[deprecated("Use fair::mq::MemoryResource")]] = MemoryResource;
} // namespace fair::mq
