// fairmq-rs compatibility header: FairMQ's <fairmq/Device.h>, the device base class.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairmq_rs.hpp>

// FairMQ's older global names, still used by many device sources.
using FairMQDevice = fair::mq::Device;
using FairMQMessagePtr = fair::mq::MessagePtr;
using FairMQParts = fair::mq::Parts;
using FairMQChannel = fair::mq::Channel;
