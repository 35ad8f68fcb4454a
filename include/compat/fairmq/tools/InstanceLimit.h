// fairmq-rs compatibility header: FairMQ's <fairmq/tools/InstanceLimit.h>, a cap on live instances.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once

#include <fairmq/tools/Strings.h>

#include <stdexcept>

namespace fair::mq::tools {

/// Counts the live InstanceLimiter<Tag, Max> objects and throws std::runtime_error from the
/// constructor of the one that would exceed Max. Tag names the limited thing in that error, so it
/// must be default-constructible and printable with operator<<. As FairMQ's, the count is a plain
/// int: create and destroy limiters of one Tag from one thread at a time.
template<typename Tag, int Max>
struct InstanceLimiter
{
    InstanceLimiter() { Increment(); }
    InstanceLimiter(const InstanceLimiter&) = delete;
    InstanceLimiter(InstanceLimiter&&) = delete;
    InstanceLimiter& operator=(const InstanceLimiter&) = delete;
    InstanceLimiter& operator=(InstanceLimiter&&) = delete;
    ~InstanceLimiter() { Decrement(); }

    auto GetCount() -> int { return fCount; }

  private:
    auto Increment() -> void
    {
        if (fCount >= Max) {
            throw std::runtime_error(ToString("More than ", Max, " instances of ", Tag(), " in parallel not supported"));
        }
        ++fCount;
    }

    auto Decrement() -> void
    {
        if (fCount > 0) {
            --fCount;
        }
    }

    // One count per <Tag, Max>, shared by all translation units (inline variable).
    static inline int fCount = 0; // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)
};

} // namespace fair::mq::tools
