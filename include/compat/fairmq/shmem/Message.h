// fairmq-rs compatibility header: FairMQ's <fairmq/shmem/Message.h>. fairmq-rs has one message
// type for both transports: fair::mq::shmem::Message names it, so FairMQ's
// static_cast<const shmem::Message&>(*msg).GetRefCount() reads a shmem message's reference count.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairmq_rs.hpp>
#include <fairmq/LegacyNames.h>

namespace fair::mq::shmem {
using Message = fair::mq::Message;
} // namespace fair::mq::shmem
