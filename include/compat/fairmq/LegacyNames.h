// fairmq-rs compatibility header: FairMQ's older global type names (FairMQDevice, FairMQMessagePtr,
// ...), which FairMQ's own headers still define and older CBM, R3B and PANDA devices use.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairmq_rs.hpp>

using FairMQChannel = fair::mq::Channel;
using FairMQDevice = fair::mq::Device;
using FairMQDevicePtr = fair::mq::Device*;
using FairMQMemoryResource = fair::mq::MemoryResource;
using FairMQMessage = fair::mq::Message;
using FairMQMessagePtr = fair::mq::MessagePtr;
using FairMQParts = fair::mq::Parts;
using FairMQPoller = fair::mq::Poller;
using FairMQPollerPtr = fair::mq::PollerPtr;
using FairMQProgOptions = fair::mq::ProgOptions;
using FairMQRegionBlock = fair::mq::RegionBlock;
using FairMQRegionBulkCallback = fair::mq::RegionBulkCallback;
using FairMQRegionCallback = fair::mq::RegionCallback;
using FairMQRegionConfig = fair::mq::RegionConfig;
using FairMQRegionEvent = fair::mq::RegionEvent;
using FairMQRegionEventCallback = fair::mq::RegionEventCallback;
using FairMQRegionInfo = fair::mq::RegionInfo;
using FairMQSocket = fair::mq::Socket;
using FairMQTransportFactory = fair::mq::TransportFactory;
using FairMQTransportFactoryError = fair::mq::TransportFactoryError;
using FairMQUnmanagedRegion = fair::mq::UnmanagedRegion;
using FairMQUnmanagedRegionPtr = fair::mq::UnmanagedRegionPtr;
