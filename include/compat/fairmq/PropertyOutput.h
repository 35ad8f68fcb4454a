// fairmq-rs compatibility header: FairMQ's <fairmq/PropertyOutput.h>, streaming a Property.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once

#include <fairmq/Properties.h>

#include <ostream>

// In namespace boost, as FairMQ has it, so that argument-dependent lookup finds it for a
// fair::mq::Property (a boost::any) from any namespace.
namespace boost {

/// Prints the value as PropertyHelper does ("[unidentified_type]" for a type it does not know).
inline std::ostream& operator<<(std::ostream& os, const boost::any& p)
{
    return os << fair::mq::PropertyHelper::GetPropertyInfo(p).first;
}

} // namespace boost
