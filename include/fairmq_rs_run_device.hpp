// fairmq-rs: the program around a C++ device, as FairMQ's <fairmq/runDevice.h>. Custom options
// are Boost.ProgramOptions' own (link -lboost_program_options; FairMQ::FairMQ and fairmq.pc do).
// Define in your source:
//   void addCustomOptions(boost::program_options::options_description&);
//   std::unique_ptr<fair::mq::Device> getDevice(fair::mq::ProgOptions&);
// This header defines main(): options, control modes, signals and exit codes are FairMQ's.
#ifndef FAIRMQ_RS_RUN_DEVICE_HPP
#define FAIRMQ_RS_RUN_DEVICE_HPP

#include "fairmq_rs.hpp"

#include <boost/program_options.hpp>

void addCustomOptions(boost::program_options::options_description&);
std::unique_ptr<fair::mq::Device> getDevice(fair::mq::ProgOptions&);

int main(int argc, char* argv[])
{
    boost::program_options::options_description custom("Custom options");
    try {
        addCustomOptions(custom);
    } catch (const std::exception& e) {
        std::cerr << "Uncaught exception reached the top of main: " << e.what() << std::endl;
        return 1;
    }
    return fair::mq::RunDevice(argc, argv, custom, [](fair::mq::ProgOptions& config) { return getDevice(config); });
}

#endif
