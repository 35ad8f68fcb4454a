// fairmq-rs compatibility header: FairMQ's <fairmq/tools/Unique.h>, unique ids.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <string>

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

namespace fair::mq::tools {

namespace unique_detail {

/// Fills buf with bytes from the kernel's CSPRNG. Fresh entropy on every call, no generator
/// state in the process: a process that forks (a gtest death test, say) cannot hand the same
/// ids, and so the same session names, to parent and child.
inline void RandomBytes(unsigned char* buf, std::size_t len)
{
    std::size_t got = 0;
    while (got < len) { // getrandom(2)
        const ssize_t n = ::getrandom(buf + got, len - got, 0);
        if (n > 0) {
            got += static_cast<std::size_t>(n);
        } else if (n < 0 && errno != EINTR) {
            break; // ENOSYS (old kernel) or seccomp: try the device
        }
    }
    if (got < len) { // /dev/urandom
        const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            while (got < len) {
                const ssize_t n = ::read(fd, buf + got, len - got);
                if (n > 0) {
                    got += static_cast<std::size_t>(n);
                } else if (n == 0 || errno != EINTR) {
                    break;
                }
            }
            ::close(fd);
        }
    }
    if (got < len) { // last resort: whatever the standard library has
        std::random_device rd;
        for (; got < len; ++got) {
            buf[got] = static_cast<unsigned char>(rd());
        }
    }
}

} // namespace unique_detail

/// A random (version 4, RFC 4122) UUID in its 36-character text form,
/// e.g. "1b4e28ba-2fa1-41d2-883f-0016d3cca427".
inline std::string Uuid()
{
    std::array<unsigned char, 16> b{};
    unique_detail::RandomBytes(b.data(), b.size());
    b[6] = static_cast<unsigned char>((b[6] & 0x0F) | 0x40); // version 4: random
    b[8] = static_cast<unsigned char>((b[8] & 0x3F) | 0x80); // variant 1: RFC 4122

    static constexpr char hex[] = "0123456789abcdef";
    std::string s;
    s.reserve(36);
    for (std::size_t i = 0; i < b.size(); ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) {
            s += '-';
        }
        s += hex[b[i] >> 4];
        s += hex[b[i] & 0x0F];
    }
    return s;
}

/// The hash of a fresh Uuid(): a random number, used for session names and file names.
inline std::size_t UuidHash()
{
    return std::hash<std::string>{}(Uuid());
}

} // namespace fair::mq::tools
