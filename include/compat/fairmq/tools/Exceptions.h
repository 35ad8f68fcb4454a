// fairmq-rs compatibility header: FairMQ's <fairmq/tools/Exceptions.h>, a scope guard.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once

#include <functional>
#include <utility>

namespace fair::mq::tools {

/// Calls a function when it goes out of scope (also while an exception unwinds), unless disabled:
/// cleanup that must run on every way out of a block.
class CallOnDestruction
{
  public:
    CallOnDestruction(std::function<void()> c, bool enable = true)
        : callback(std::move(c))
        , enabled(enable)
    {}

    ~CallOnDestruction()
    {
        if (enabled && callback) {
            callback();
        }
    }

    void enable() { enabled = true; }
    void disable() { enabled = false; }

  private:
    std::function<void()> callback;
    bool enabled;
};

} // namespace fair::mq::tools
