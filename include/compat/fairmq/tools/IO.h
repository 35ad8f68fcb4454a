// fairmq-rs compatibility header: FairMQ's <fairmq/tools/IO.h>, terminal input mode.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once

#include <termios.h>
#include <unistd.h>

namespace fair::mq::tools {

/// While it lives, the terminal on stdin is in noncanonical mode without echo: each key press is
/// readable at once, without Enter (for single-key interactive control). The destructor restores
/// the settings found at construction. Does nothing when stdin is not a terminal.
struct NonCanonicalInput
{
    NonCanonicalInput()
    {
        if (tcgetattr(STDIN_FILENO, &fSaved) != 0) {
            return; // not a terminal: nothing to change, nothing to restore
        }
        fActive = true;
        termios t = fSaved;
        t.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
        tcsetattr(STDIN_FILENO, TCSANOW, &t);
    }

    NonCanonicalInput(const NonCanonicalInput&) = delete;
    NonCanonicalInput(NonCanonicalInput&&) = delete;
    NonCanonicalInput& operator=(const NonCanonicalInput&) = delete;
    NonCanonicalInput& operator=(NonCanonicalInput&&) = delete;

    ~NonCanonicalInput()
    {
        if (fActive) {
            tcsetattr(STDIN_FILENO, TCSANOW, &fSaved);
        }
    }

  private:
    termios fSaved{};
    bool fActive = false;
};

} // namespace fair::mq::tools
