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
    return fair::mq::RunDeviceMain(argc, argv, addCustomOptions, [](fair::mq::ProgOptions& config) { return getDevice(config); });
}

#endif
