// fairmq-rs compatibility header: FairMQ's <fairmq/SuboptParser.h>, --channel-config strings as properties.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
//
// SuboptParser({"name=data,type=push,method=bind,address=tcp://*:5555", ...}, deviceId) gives the
// properties FairMQ 1.10 gives: "chans.<name>.<i>.<key>" for every sub-channel i and every channel
// key, strings for type/method/address/transport, int for the numeric keys, bool for autoBind,
// FairMQ's defaults for what a string leaves out. As in FairMQ:
//  - "NAME:key=value,..." names the channel as "name=NAME" does (the later of the two wins);
//  - each address= adds a sub-channel; the other keys apply to all of them; with no address there
//    is one, at "unspecified"; numSockets=N (N > 0) makes N sub-channels of the channel's common
//    keys, whatever the addresses;
//  - the last of a repeated key wins; a number (or bool) that does not read as one leaves the default;
//  - an unknown key is ignored with a warning, as is a known one without "=";
//    parsing of a string stops at a comma followed by a space;
//  - a channel that appears twice keeps its first definition's properties;
//  - an empty deviceId throws fair::mq::ParserError (FairMQ declares it in JSONParser.h), a string
//    without a channel name boost::property_tree::ptree_bad_path "No such node (name)" (what
//    FairMQ's property-tree lookup throws), after an error message.
// Messages go to std::cerr (no logger here).
#pragma once

#include <fairmq/Properties.h>

#include <boost/property_tree/exceptions.hpp>
#include <boost/property_tree/string_path.hpp>

#include <array>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace fair::mq {

struct ParserError : std::runtime_error
{
    using std::runtime_error::runtime_error;
};

namespace subopt_detail {

/// What the key=value pairs of one --channel-config string say.
struct ChannelSpec
{
    bool hasName = false;  // a name was given, maybe empty (FairMQ then names the channel "")
    std::string name;
    std::map<std::string, std::string> values;  // the last of each key but address
    std::vector<std::string> addresses;         // one sub-channel each
};

// The keys FairMQ's --channel-config knows.
inline bool IsChannelKey(const std::string& key)
{
    static const std::array<const char*, 17> keys{
        "name", "type", "method", "address", "transport", "sndBufSize", "rcvBufSize", "sndKernelSize",
        "rcvKernelSize", "sndTimeoutMs", "rcvTimeoutMs", "linger", "rateLogging", "portRangeMin",
        "portRangeMax", "autoBind", "numSockets"};
    for (const char* k : keys) {
        if (key == k) {
            return true;
        }
    }
    return false;
}

inline ChannelSpec Parse(const std::string& config)
{
    ChannelSpec spec;
    std::string::size_type pos = 0;
    // "NAME:..." when a ':' comes before any '=' (an address's ':' comes after its '=').
    const auto sep = config.find_first_of(":=");
    if (sep != std::string::npos && config[sep] == ':') {
        spec.hasName = true;
        spec.name = config.substr(0, sep);
        pos = sep + 1;
    }
    // getsubopt(3)'s reading, as FairMQ's: comma-separated items, the key up to the item's first '='.
    while (pos < config.size() && config[pos] != ' ') {
        auto end = config.find(',', pos);
        if (end == std::string::npos) {
            end = config.size();
        }
        const std::string item = config.substr(pos, end - pos);
        pos = end < config.size() ? end + 1 : end;

        const auto eq = item.find('=');
        const std::string key = item.substr(0, eq);
        if (!IsChannelKey(key)) {
            std::cerr << "[WARN] Ignoring unknown argument in --channel-config: " << item << std::endl;
            continue;
        }
        if (eq == std::string::npos) {
            continue;  // a known key without a value: FairMQ skips it (unguarded for name/address)
        }
        std::string value = item.substr(eq + 1);
        if (key == "name") {
            spec.hasName = true;
            spec.name = std::move(value);
        } else if (key == "address") {
            spec.addresses.push_back(std::move(value));
        } else {
            spec.values[key] = std::move(value);
        }
    }
    return spec;
}

/// As boost::property_tree reads an int: the whole text, surrounding spaces allowed; else `def`.
inline int ReadInt(const ChannelSpec& spec, const std::string& key, int def)
{
    auto it = spec.values.find(key);
    if (it == spec.values.end()) {
        return def;
    }
    std::istringstream in(it->second);
    int v = 0;
    in >> v;
    if (!in.eof()) {
        in >> std::ws;
    }
    return (in.fail() || in.bad() || in.get() != std::char_traits<char>::eof()) ? def : v;
}

/// As boost::property_tree reads a bool: 0/1, else true/false; else `def`.
inline bool ReadBool(const ChannelSpec& spec, const std::string& key, bool def)
{
    auto it = spec.values.find(key);
    if (it == spec.values.end()) {
        return def;
    }
    std::istringstream in(it->second);
    bool v = false;
    in >> v;
    if (in.fail()) {
        in.clear();
        in >> std::boolalpha >> v;
    }
    if (!in.eof()) {
        in >> std::ws;
    }
    return (in.fail() || in.bad() || in.get() != std::char_traits<char>::eof()) ? def : v;
}

inline std::string ReadString(const ChannelSpec& spec, const std::string& key, const char* def)
{
    auto it = spec.values.find(key);
    return it == spec.values.end() ? std::string(def) : it->second;
}

// FairMQ 1.10's Channel defaults (its Channel::Default*).
#ifdef FAIRMQ_CHANNEL_DEFAULT_AUTOBIND
constexpr bool kDefaultAutoBind = FAIRMQ_CHANNEL_DEFAULT_AUTOBIND;
#else
constexpr bool kDefaultAutoBind = true;
#endif

/// The keys every sub-channel of the channel shares.
inline Properties CommonProperties(const ChannelSpec& spec)
{
    Properties p;
    p.emplace("type", ReadString(spec, "type", "unspecified"));
    p.emplace("method", ReadString(spec, "method", "unspecified"));
    p.emplace("address", std::string("unspecified"));  // addresses are the sub-channels'
    p.emplace("transport", ReadString(spec, "transport", "default"));
    p.emplace("sndBufSize", ReadInt(spec, "sndBufSize", 1000));
    p.emplace("rcvBufSize", ReadInt(spec, "rcvBufSize", 1000));
    p.emplace("sndKernelSize", ReadInt(spec, "sndKernelSize", 0));
    p.emplace("rcvKernelSize", ReadInt(spec, "rcvKernelSize", 0));
    p.emplace("sndTimeoutMs", ReadInt(spec, "sndTimeoutMs", -1));
    p.emplace("rcvTimeoutMs", ReadInt(spec, "rcvTimeoutMs", -1));
    p.emplace("linger", ReadInt(spec, "linger", 500));
    p.emplace("rateLogging", ReadInt(spec, "rateLogging", 1));
    p.emplace("portRangeMin", ReadInt(spec, "portRangeMin", 22000));
    p.emplace("portRangeMax", ReadInt(spec, "portRangeMax", 23000));
    p.emplace("autoBind", ReadBool(spec, "autoBind", kDefaultAutoBind));
    return p;
}

/// Adds sub-channel i's properties; emplace: a channel defined twice keeps its first.
inline void AddSubChannel(Properties& out, const std::string& name, int i, const Properties& props)
{
    const std::string prefix = "chans." + name + "." + std::to_string(i) + ".";
    for (const auto& kv : props) {
        out.emplace(prefix + kv.first, kv.second);
    }
}

} // namespace subopt_detail

inline Properties SuboptParser(const std::vector<std::string>& channelConfig, const std::string& deviceId)
{
    std::vector<subopt_detail::ChannelSpec> specs;
    for (const auto& config : channelConfig) {
        specs.push_back(subopt_detail::Parse(config));
        if (specs.back().name.empty()) {
            std::cerr << "[ERROR] missing channel name in argument of option --channel-config" << std::endl;
        }
    }

    if (deviceId.empty()) {
        throw ParserError("no device ID provided. Provide with `--id` cmd option");
    }

    Properties properties;
    for (const auto& spec : specs) {
        if (!spec.hasName) {
            throw boost::property_tree::ptree_bad_path("No such node", boost::property_tree::path("name"));
        }
        const Properties common = subopt_detail::CommonProperties(spec);
        const int numSockets = subopt_detail::ReadInt(spec, "numSockets", 0);
        if (numSockets > 0) {
            for (int i = 0; i < numSockets; ++i) {
                subopt_detail::AddSubChannel(properties, spec.name, i, common);
            }
        } else if (!spec.name.empty() && !spec.addresses.empty()) {
            // FairMQ records the addresses only of a channel with a non-empty name.
            int i = 0;
            for (const auto& address : spec.addresses) {
                Properties sub(common);
                sub["address"] = address;
                subopt_detail::AddSubChannel(properties, spec.name, i++, sub);
            }
        } else {
            subopt_detail::AddSubChannel(properties, spec.name, 0, common);
        }
    }
    return properties;
}

} // namespace fair::mq
