// fairmq-rs compatibility header: FairMQ's <fairmq/tools/Network.h>, network interfaces and names.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>

namespace fair::mq::tools {

/// Thrown by getDefaultRouteNetworkInterface() when no default route is found.
struct DefaultRouteDetectionError : std::runtime_error
{
    using std::runtime_error::runtime_error;
};

/// The IPv4 address (dotted decimal) of every network interface that has one, by interface name
/// ("lo" -> "127.0.0.1"). An interface with several IPv4 addresses maps to the first the kernel
/// lists. Throws std::runtime_error if the interfaces cannot be listed.
inline std::map<std::string, std::string> getHostIPs()
{
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0) {
        throw std::runtime_error("getifaddrs failed");
    }
    // Freed on every way out, also when an insert throws.
    std::unique_ptr<ifaddrs, void (*)(ifaddrs*)> guard(list, ::freeifaddrs);

    std::map<std::string, std::string> ips;
    for (const ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
        if (ifa->ifa_addr == nullptr || ifa->ifa_addr->sa_family != AF_INET || ifa->ifa_name == nullptr) {
            continue;
        }
        char host[INET_ADDRSTRLEN] = {};
        const auto* sin = reinterpret_cast<const sockaddr_in*>(ifa->ifa_addr);
        if (::inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host)) == nullptr) {
            throw std::runtime_error("inet_ntop failed");
        }
        ips.emplace(ifa->ifa_name, host); // emplace keeps the first address of an interface
    }
    return ips;
}

/// The older FairMQ form (still shown in FairMQ's tools/README.md): fills `ips` instead.
inline void getHostIPs(std::map<std::string, std::string>& ips)
{
    ips = getHostIPs();
}

/// The IPv4 address of the named interface, or "" (with a message on stderr) when it has none
/// or the interfaces cannot be listed.
inline std::string getInterfaceIP(const std::string& interface)
{
    try {
        const auto ips = getHostIPs();
        const auto it = ips.find(interface);
        if (it != ips.end()) {
            return it->second;
        }
        std::cerr << "Could not find provided network interface: \"" << interface << "\"!\n";
    } catch (const std::exception& e) {
        std::cerr << "could not get interface IP: " << e.what() << '\n';
    }
    return "";
}

/// The name of the network interface of the IPv4 default route: read from /proc/net/route (the
/// first route whose destination is 0.0.0.0), else from the output of `ip route show default`.
/// Throws DefaultRouteDetectionError if neither names one.
inline std::string getDefaultRouteNetworkInterface()
{
    {
        // Columns are tab-separated: Iface, Destination (hex, network byte order), Gateway, ...
        std::ifstream routes("/proc/net/route");
        std::string line;
        std::getline(routes, line); // the header
        while (std::getline(routes, line)) {
            std::istringstream fields(line);
            std::string iface;
            std::string destination;
            if (fields >> iface >> destination && destination == "00000000") {
                return iface;
            }
        }
    }

    // No /proc/net/route (or no default route in it): ask iproute2. "re": the pipe is close-on-exec,
    // so processes other threads start meanwhile do not inherit it.
    std::string iface;
    if (FILE* p = ::popen("ip route show default 2>/dev/null", "re")) {
        std::string out;
        char buf[256];
        size_t n = 0;
        while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) {
            out.append(buf, n);
        }
        ::pclose(p);
        // "default via 192.0.2.1 dev eth0 proto dhcp ...": the word after "dev".
        std::istringstream words(out);
        std::string word;
        while (words >> word) {
            if (word == "dev" && words >> iface) {
                break;
            }
        }
    }
    if (iface.empty()) {
        throw DefaultRouteDetectionError(
            "Could not detect default route network interface name from /proc/net/route nor 'ip route'");
    }
    return iface;
}

/// The first IPv4 address `hostname` resolves to (dotted decimal), or "" (with a message on
/// stderr) if it resolves to none.
inline std::string getIpFromHostname(const std::string& hostname)
{
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM; // one entry per address instead of one per socket type
    // No AI_ADDRCONFIG: it would fail "localhost" on a host whose only interface is loopback.
    addrinfo* res = nullptr;
    const int rc = ::getaddrinfo(hostname.c_str(), nullptr, &hints, &res);
    if (rc != 0 || res == nullptr) {
        std::cerr << "could not resolve hostname '" << hostname << "', reason: "
                  << (rc != 0 ? ::gai_strerror(rc) : "no IPv4 address") << '\n';
        return "";
    }
    std::unique_ptr<addrinfo, void (*)(addrinfo*)> guard(res, ::freeaddrinfo);

    for (const addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
        if (ai->ai_family == AF_INET && ai->ai_addr != nullptr) {
            char host[INET_ADDRSTRLEN] = {};
            const auto* sin = reinterpret_cast<const sockaddr_in*>(ai->ai_addr);
            if (::inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host)) != nullptr) {
                return host;
            }
        }
    }
    std::cerr << "could not find ipv4 address for hostname '" << hostname << "'\n";
    return "";
}

} // namespace fair::mq::tools
