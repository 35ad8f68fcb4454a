// fairmq-rs: the program around a C++ device, as FairMQ's <fairmq/runDevice.h>.
// Define in your source:
//   void addCustomOptions(boost::program_options::options_description&);
//   std::unique_ptr<fair::mq::Device> getDevice(fair::mq::ProgOptions&);
// This header defines main(): options, control modes, signals and exit codes are FairMQ's.
#ifndef FAIRMQ_RS_RUN_DEVICE_HPP
#define FAIRMQ_RS_RUN_DEVICE_HPP

#include "fairmq_rs.hpp"

#include <iostream>

void addCustomOptions(boost::program_options::options_description&);
std::unique_ptr<fair::mq::Device> getDevice(fair::mq::ProgOptions&);

int main(int argc, char* argv[])
{
    try {
        boost::program_options::options_description custom("Custom options");
        addCustomOptions(custom);
        std::vector<fmq_option> options;
        for (const auto& o : custom.options()) {
            fmq_option c{};
            c.name = o.name.c_str();
            c.ty = o.value->type;
            c.default_value = o.value->has_default ? o.value->default_text.c_str() : nullptr;
            c.description = o.description.c_str();
            options.push_back(c);
        }
        fair::mq::ProgOptions config;
        std::unique_ptr<fair::mq::Device> device = getDevice(config);
        if (!device) {
            std::cerr << "getDevice(): no valid device provided. Exiting." << std::endl;
            return 1;
        }
        fmq_device_hooks hooks = fair::mq::detail::Hooks::Table(*device);
        return fmq_run_device(argc, argv, &hooks, options.data(), options.size(), device.get());
    } catch (const std::exception& e) {
        std::cerr << "Uncaught exception reached the top of main: " << e.what() << std::endl;
        return 1;
    }
}

#endif
