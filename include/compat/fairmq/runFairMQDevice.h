// fairmq-rs compatibility header: FairMQ's older <fairmq/runFairMQDevice.h>, main() around
// addCustomOptions and a getDevice that returns a raw pointer (which main() then owns).
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairmq/DeviceRunner.h>
#include <fairmq/Device.h>

#include <boost/program_options.hpp>

#include <memory>

using FairMQDevicePtr = fair::mq::Device*;

/// To be implemented by the user: a new device (the program owns it).
FairMQDevicePtr getDevice(const fair::mq::ProgOptions& config);
/// To be implemented by the user: the device's own options (or an empty body).
void addCustomOptions(boost::program_options::options_description&);

int main(int argc, char* argv[])
{
    return fair::mq::RunDeviceMain(argc, argv, addCustomOptions, [](fair::mq::ProgOptions& config) {
        return std::unique_ptr<fair::mq::Device>(getDevice(config));
    });
}
