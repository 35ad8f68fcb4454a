// fairmq-rs compatibility header: FairMQ's <fairmq/tools/Strings.h>, string helpers.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once

#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace fair::mq::tools {

/// Streams every argument, in order, with operator<< into one string: ToString("a", 1, 'b') is "a1b".
template<typename... T>
inline auto ToString(T&&... t) -> std::string
{
    std::ostringstream ss;
    // A fold over the comma operator keeps the arguments' order (a plain pack expansion in a
    // function call would not).
    ((void)(ss << std::forward<T>(t)), ...);
    return ss.str();
}

/// The command line of main() as strings; without argv[0] unless dropProgramName is false.
inline auto ToStrVector(const int argc, char* const* argv, const bool dropProgramName = true)
    -> std::vector<std::string>
{
    if (argc <= 0 || argv == nullptr) {
        return {};
    }
    const int first = dropProgramName ? 1 : 0;
    return std::vector<std::string>(argv + first, argv + argc);
}

/// Whether str begins with start.
inline bool StrStartsWith(std::string const& str, std::string const& start)
{
    return str.size() >= start.size() && str.compare(0, start.size(), start) == 0;
}

/// Whether str ends with end.
inline bool StrEndsWith(std::string const& str, std::string const& end)
{
    return str.size() >= end.size() && str.compare(str.size() - end.size(), end.size(), end) == 0;
}

} // namespace fair::mq::tools
