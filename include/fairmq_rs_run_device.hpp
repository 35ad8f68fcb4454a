// fairmq-rs: the program around a C++ device, as FairMQ's <fairmq/runDevice.h>. Custom options
// are Boost.ProgramOptions' own (link -lboost_program_options; FairMQ::FairMQ and fairmq.pc do).
// Define in your source:
//   void addCustomOptions(boost::program_options::options_description&);
//   std::unique_ptr<fair::mq::Device> getDevice(fair::mq::ProgOptions&);
// This header defines main(): options, control modes, signals and exit codes are FairMQ's.
#ifndef FAIRMQ_RS_RUN_DEVICE_HPP
#define FAIRMQ_RS_RUN_DEVICE_HPP

#include "fairmq_rs.hpp"
#include "fairmq_rs_boost_options.hpp"

#include <boost/program_options.hpp>

#include <iostream>

void addCustomOptions(boost::program_options::options_description&);
std::unique_ptr<fair::mq::Device> getDevice(fair::mq::ProgOptions&);

namespace fair {
namespace mq {
namespace detail {
/// What main keeps alive while the device runs: the configuration getDevice saw, and the device.
struct Program {
    ProgOptions config;
    std::unique_ptr<Device> device;
};

/// fmq_device_factory: getDevice(config) once the command line is parsed and logging is set up.
inline int32_t MakeDevice(const fmq_config* cfg, void* user, fmq_device_hooks* hooks, void** device)
{
    auto* program = static_cast<Program*>(user);
    try {
        program->config.SetConfig(cfg);
        program->device = getDevice(program->config);
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
} // namespace mq
} // namespace fair

int main(int argc, char* argv[])
{
    try {
        boost::program_options::options_description custom("Custom options");
        addCustomOptions(custom);
        const fair::mq::detail::BoostOptionTable options(custom);
        fair::mq::detail::Program program;
        program.config.AddToCmdLineOptions(custom); // getDevice reads them as their Boost types
        const int code = fmq_run_device_factory(argc, argv, fair::mq::detail::MakeDevice, options.table.data(),
                                                options.table.size(), &program);
        // What the run lent the device is gone: its destructor must not reach for it.
        if (program.device) fair::mq::detail::Hooks::Detach(*program.device);
        program.config.SetConfig(nullptr);
        return code;
    } catch (const std::exception& e) {
        std::cerr << "Uncaught exception reached the top of main: " << e.what() << std::endl;
        return 1;
    }
}

#endif
