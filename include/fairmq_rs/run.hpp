// fairmq-rs C++ API: the program around a C++ device, as FairMQ's runDevice: options, control
// modes, signals and exit codes are FairMQ's (the library's device program runs it). Part of
// fairmq_rs.hpp; <fairmq_rs_run_device.hpp> and FairMQ's <fairmq/runDevice.h> define main() with it.
#pragma once

#include <boost/program_options.hpp>

#include <exception>
#include <functional>
#include <iostream>
#include <memory>

namespace fair {
namespace mq {

/// Makes the device from the parsed configuration (FairMQ's getDevice); NULL: no device.
using DeviceMaker = std::function<std::unique_ptr<Device>(ProgOptions&)>;

namespace detail {
/// What the program keeps alive while the device runs: the configuration the device saw, and the
/// device.
struct Program {
    DeviceMaker make;
    ProgOptions config;
    std::unique_ptr<Device> device;
};

/// fmq_device_factory: the device once the command line is parsed and logging is set up.
inline int32_t MakeDevice(const fmq_config* cfg, void* user, fmq_device_hooks* hooks, void** device)
{
    auto* program = static_cast<Program*>(user);
    try {
        program->config.SetConfig(cfg);
        program->device = program->make(program->config);
        if (!program->device) return 1;
        program->device->SetConfig(program->config);
        *hooks = Hooks::Table();
        *device = program->device.get();
        return 0;
    } catch (const std::exception& e) {
        LOG(error) << "getDevice(): " << e.what();
        return 1;
    } catch (...) {
        LOG(error) << "getDevice(): an exception that is no std::exception";
        return 1;
    }
}
} // namespace detail

/// Runs the device `make` builds as a program with FairMQ's options and `custom`; returns the
/// process exit code (0 EXITING, 1 ERROR or bad input).
inline int RunDevice(int argc, char* argv[], const boost::program_options::options_description& custom, DeviceMaker make)
{
    try {
        const detail::BoostOptionTable options(custom);
        detail::Program program;
        program.make = std::move(make);
        program.config.AddToCmdLineOptions(custom); // getDevice reads them as their Boost types
        const int code = fmq_run_device_factory(argc, argv, detail::MakeDevice, options.table.data(), options.table.size(),
                                                &program);
        // What the run lent the device is gone: its destructor must not reach for it.
        if (program.device) detail::Hooks::Detach(*program.device);
        program.config.SetConfig(nullptr);
        return code;
    } catch (const std::exception& e) {
        std::cerr << "Uncaught exception reached the top of main: " << e.what() << std::endl;
        return 1;
    }
}

/// main() of a device program: the options `addCustom` declares (FairMQ's addCustomOptions), the
/// device `make` builds from the parsed configuration (FairMQ's getDevice).
inline int RunDeviceMain(int argc, char* argv[], const std::function<void(boost::program_options::options_description&)>& addCustom,
                         DeviceMaker make)
{
    boost::program_options::options_description custom("Custom options");
    try {
        addCustom(custom);
    } catch (const std::exception& e) {
        std::cerr << "Uncaught exception reached the top of main: " << e.what() << std::endl;
        return 1;
    }
    return RunDevice(argc, argv, custom, std::move(make));
}

} // namespace mq
} // namespace fair
