// fairmq-rs C++ API: a major.minor.patch version (FairMQ's <fairmq/tools/Version.h>).
// Part of fairmq_rs.hpp; FairMQ programs reach it through the compatibility headers.
#pragma once

#include <ostream>
#include <tuple>

namespace fair::mq::tools {

/// A version as FairMQ has it: an aggregate of three const ints, built as Version{1, 2, 3}
/// (plugins and devices report theirs so), compared field by field and printed as "1.2.3".
struct Version
{
    const int fkMajor, fkMinor, fkPatch;

    friend auto operator<(const Version& lhs, const Version& rhs) -> bool
    {
        return std::tie(lhs.fkMajor, lhs.fkMinor, lhs.fkPatch) < std::tie(rhs.fkMajor, rhs.fkMinor, rhs.fkPatch);
    }
    friend auto operator>(const Version& lhs, const Version& rhs) -> bool { return rhs < lhs; }
    friend auto operator<=(const Version& lhs, const Version& rhs) -> bool { return !(rhs < lhs); }
    friend auto operator>=(const Version& lhs, const Version& rhs) -> bool { return !(lhs < rhs); }
    friend auto operator==(const Version& lhs, const Version& rhs) -> bool
    {
        return lhs.fkMajor == rhs.fkMajor && lhs.fkMinor == rhs.fkMinor && lhs.fkPatch == rhs.fkPatch;
    }
    friend auto operator!=(const Version& lhs, const Version& rhs) -> bool { return !(lhs == rhs); }
    friend auto operator<<(std::ostream& os, const Version& v) -> std::ostream&
    {
        return os << v.fkMajor << '.' << v.fkMinor << '.' << v.fkPatch;
    }
};

} // namespace fair::mq::tools
