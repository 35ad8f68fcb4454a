// fairmq-rs C++ API: Boost.ProgramOptions declarations as the C ABI's fmq_option table, for
// ProgOptions (AddToCmdLineOptions), the program around a C++ device (addCustomOptions) and C++
// plugins (their ProgOptions). Calling these needs -lboost_program_options.
// Part of fairmq_rs.hpp; FairMQ programs reach it through the compatibility headers.
#pragma once

#include "c_abi.hpp"

#include <boost/any.hpp>
#include <boost/program_options.hpp>

#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace fair {
namespace mq {
namespace detail {
/// The FMQ_OPTION_* type a value of T is set and declared as. The library's float is a C++
/// float and its int a C++ int: wider signed integers and doubles go as text, which keeps every
/// digit (GetProperty<T> reads them back exactly).
template<typename T>
constexpr fmq_option_type OptionType()
{
    return std::is_same<T, bool>::value                                               ? FMQ_OPTION_BOOL
           : std::is_same<T, unsigned short>::value                                   ? FMQ_OPTION_UINT16
           : std::is_floating_point<T>::value && sizeof(T) <= sizeof(float)           ? FMQ_OPTION_FLOAT
           : std::is_integral<T>::value && std::is_unsigned<T>::value                 ? FMQ_OPTION_UINT64
           : std::is_integral<T>::value && std::is_signed<T>::value && sizeof(T) <= sizeof(int) ? FMQ_OPTION_INT
                                                                                      : FMQ_OPTION_STRING;
}

/// An option as the C ABI declares it (strings owned here).
struct BoostOption {
    std::string name, description, default_text;
    fmq_option_type type = FMQ_OPTION_STRING;
    bool has_default = false;
};

/// Whether `v` is a Boost value of T; if so, fills `out` (the default as text, if there is one).
template<typename T>
bool OfType(const boost::program_options::value_semantic& v, BoostOption& out)
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
bool OfVector(const boost::program_options::value_semantic& v, BoostOption& out)
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
/// bool_switch()) is a flag. Short names and implicit values are dropped (the C ABI has neither).
inline BoostOption ToBoostOption(const boost::program_options::option_description& o)
{
    BoostOption c;
    c.name = o.long_name();
    if (c.name.empty()) {
        throw Error("option '" + o.format_name() + "' has no long name, which fairmq-rs needs");
    }
    c.description = o.description();
    const auto& v = *o.semantic();
    if (v.max_tokens() == 0) {
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
        throw Error("option '--" + c.name +
                    "': its value type is none that fairmq-rs reads (text, bool, integers, floating point, vectors of them)");
    }
    if (v.is_required()) c.type |= FMQ_OPTION_REQUIRED;
    return c;
}

/// The options of a Boost description and the fmq_option table that points into them (keep the
/// object alive while the table is used; it is not copyable, which would leave the table dangling).
struct BoostOptionTable {
    std::vector<BoostOption> options;
    std::vector<fmq_option> table;

    BoostOptionTable() = default;
    explicit BoostOptionTable(const boost::program_options::options_description& d)
    {
        for (const auto& o : d.options()) options.push_back(ToBoostOption(*o));
        for (const auto& o : options) {
            fmq_option c{};
            c.name = o.name.c_str();
            c.ty = o.type;
            c.default_value = o.has_default ? o.default_text.c_str() : nullptr;
            c.description = o.description.c_str();
            table.push_back(c);
        }
    }
    BoostOptionTable(const BoostOptionTable&) = delete;
    BoostOptionTable& operator=(const BoostOptionTable&) = delete;
    BoostOptionTable(BoostOptionTable&&) = default;
    BoostOptionTable& operator=(BoostOptionTable&&) = default;
};
} // namespace detail
} // namespace mq
} // namespace fair

