// fairmq-rs: the program around a C++ device, as FairMQ's <fairmq/runDevice.h>. Custom options
// are Boost.ProgramOptions' own (link -lboost_program_options; FairMQ::FairMQ and fairmq.pc do).
// Define in your source:
//   void addCustomOptions(boost::program_options::options_description&);
//   std::unique_ptr<fair::mq::Device> getDevice(fair::mq::ProgOptions&);
// This header defines main(): options, control modes, signals and exit codes are FairMQ's.
#ifndef FAIRMQ_RS_RUN_DEVICE_HPP
#define FAIRMQ_RS_RUN_DEVICE_HPP

#include "fairmq_rs.hpp"

#include <boost/any.hpp>
#include <boost/program_options.hpp>

#include <iostream>
#include <limits>

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
        *hooks = Hooks::Table(*program->device);
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

namespace fair {
namespace mq {
namespace detail {
/// A custom option as the C ABI takes it.
struct CustomOption {
    std::string name, description, default_text;
    fmq_option_type type = FMQ_OPTION_STRING;
    bool has_default = false;
};

/// Whether `v` is a Boost value of T; if so, fills `out` (the default as text, if there is one).
template<typename T>
bool OfType(const boost::program_options::value_semantic& v, CustomOption& out)
{
    auto* typed = dynamic_cast<const boost::program_options::typed_value<T>*>(&v);
    if (!typed) return false;
    out.type = OptionType<T>();
    boost::any d;
    if (typed->apply_default(d)) {
        std::ostringstream text;
        if (std::is_floating_point<T>::value) text.precision(std::numeric_limits<T>::max_digits10);
        text << std::boolalpha << boost::any_cast<T>(d);
        out.default_text = text.str();
        out.has_default = true;
    }
    return true;
}

/// Whether `v` is a Boost value of std::vector<T>; if so, fills `out` as a list of texts (the
/// default, if there is one, one item per line).
template<typename T>
bool OfVector(const boost::program_options::value_semantic& v, CustomOption& out)
{
    auto* typed = dynamic_cast<const boost::program_options::typed_value<std::vector<T>>*>(&v);
    if (!typed) return false;
    out.type = FMQ_OPTION_STRINGS;
    boost::any d;
    if (typed->apply_default(d)) {
        std::ostringstream text;
        if (std::is_floating_point<T>::value) text.precision(std::numeric_limits<T>::max_digits10);
        const char* sep = "";
        for (const T& item : boost::any_cast<std::vector<T>>(d)) {
            text << sep << std::boolalpha << item;
            sep = "\n";
        }
        out.default_text = text.str();
        out.has_default = true;
    }
    return true;
}

/// `o` as fairmq-rs declares it: the value's C++ type gives the option's type (text, bool,
/// integers, floating point, and vectors of them); an option that takes no value (a switch,
/// bool_switch()) is a flag.
inline CustomOption ToCustom(const boost::program_options::option_description& o)
{
    CustomOption c;
    c.name = o.long_name();
    c.description = o.description();
    const auto& v = *o.semantic();
    if (v.max_tokens() == 0) {
        c.type = FMQ_OPTION_FLAG;
        OfType<bool>(v, c); // bool_switch's default (false), if it is one
        c.type = FMQ_OPTION_FLAG;
        return c;
    }
    const bool known = OfType<std::string>(v, c) || OfType<bool>(v, c) || OfType<int>(v, c) || OfType<short>(v, c) ||
                       OfType<long>(v, c) || OfType<long long>(v, c) || OfType<unsigned>(v, c) ||
                       OfType<unsigned short>(v, c) || OfType<unsigned long>(v, c) || OfType<unsigned long long>(v, c) ||
                       OfType<float>(v, c) || OfType<double>(v, c) || OfVector<std::string>(v, c) ||
                       OfVector<int>(v, c) || OfVector<long>(v, c) || OfVector<long long>(v, c) ||
                       OfVector<unsigned>(v, c) || OfVector<unsigned long>(v, c) ||
                       OfVector<unsigned long long>(v, c) || OfVector<float>(v, c) || OfVector<double>(v, c);
    if (!known) {
        throw Error("custom option '--" + c.name +
                    "': its value type is none that fairmq-rs reads (text, bool, integers, floating point, vectors of them)");
    }
    if (v.is_required()) c.type |= FMQ_OPTION_REQUIRED;
    return c;
}
} // namespace detail
} // namespace mq
} // namespace fair

int main(int argc, char* argv[])
{
    try {
        boost::program_options::options_description custom("Custom options");
        addCustomOptions(custom);
        std::vector<fair::mq::detail::CustomOption> customs;
        for (const auto& o : custom.options()) customs.push_back(fair::mq::detail::ToCustom(*o));
        std::vector<fmq_option> options;
        for (const auto& o : customs) {
            fmq_option c{};
            c.name = o.name.c_str();
            c.ty = o.type;
            c.default_value = o.has_default ? o.default_text.c_str() : nullptr;
            c.description = o.description.c_str();
            options.push_back(c);
        }
        fair::mq::detail::Program program;
        const int code = fmq_run_device_factory(argc, argv, fair::mq::detail::MakeDevice, options.data(), options.size(), &program);
        // What the run lent the device is gone: its destructor must not reach for it.
        program.config.SetConfig(nullptr);
        if (program.device) fair::mq::detail::Hooks::Detach(*program.device);
        return code;
    } catch (const std::exception& e) {
        std::cerr << "Uncaught exception reached the top of main: " << e.what() << std::endl;
        return 1;
    }
}

#endif
