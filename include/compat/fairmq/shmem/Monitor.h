// fairmq-rs compatibility header: FairMQ's <fairmq/shmem/Monitor.h>, the static queries and
// cleanup of shared-memory sessions (the watching monitor is the program fairmq-shmmonitor).
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairmq/shmem/Common.h>

#include <cstdint>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace fair::mq::shmem {

struct SessionId
{
    std::string sessionId;
    explicit operator std::string() const { return sessionId; }
};

struct ShmId
{
    std::string shmId;
    explicit operator std::string() const { return shmId; }
};

class Monitor
{
  public:
    struct DaemonPresent : std::runtime_error { using std::runtime_error::runtime_error; };
    struct MonitorError : std::runtime_error { using std::runtime_error::runtime_error; };

    /// Removes every object of the session (segments, regions, their queues, the management
    /// segment); each name with whether it was removed.
    static std::vector<std::pair<std::string, bool>> Cleanup(const ShmId& shmId, bool verbose = true) { return Clean(shmId.shmId, false, verbose); }
    static std::vector<std::pair<std::string, bool>> Cleanup(const SessionId& sessionId, bool verbose = true)
    {
        return Cleanup(ShmId{makeShmIdStr(sessionId.sessionId)}, verbose);
    }
    /// Cleanup, and the monitor's own lock.
    static std::vector<std::pair<std::string, bool>> CleanupFull(const ShmId& shmId, bool verbose = true) { return Clean(shmId.shmId, true, verbose); }
    static std::vector<std::pair<std::string, bool>> CleanupFull(const SessionId& sessionId, bool verbose = true)
    {
        return CleanupFull(ShmId{makeShmIdStr(sessionId.sessionId)}, verbose);
    }

    /// The free bytes of managed segment `segmentId`; MonitorError when the session or the segment
    /// does not exist.
    static unsigned long GetFreeMemory(const ShmId& shmId, uint16_t segmentId)
    {
        uint64_t free = 0;
        if (fmq_shm_free_memory(shmId.shmId.c_str(), segmentId, &free) != FMQ_OK) throw MonitorError(detail::last_error());
        return free;
    }
    static unsigned long GetFreeMemory(const SessionId& sessionId, uint16_t segmentId)
    {
        return GetFreeMemory(ShmId{makeShmIdStr(sessionId.sessionId)}, segmentId);
    }
    static bool SegmentIsPresent(const ShmId& shmId, uint16_t segmentId) { return fmq_shm_segment_present(shmId.shmId.c_str(), segmentId); }
    static bool SegmentIsPresent(const SessionId& sessionId, uint16_t segmentId)
    {
        return SegmentIsPresent(ShmId{makeShmIdStr(sessionId.sessionId)}, segmentId);
    }
    static bool RegionIsPresent(const ShmId& shmId, uint16_t regionId) { return fmq_shm_region_present(shmId.shmId.c_str(), regionId); }
    static bool RegionIsPresent(const SessionId& sessionId, uint16_t regionId)
    {
        return RegionIsPresent(ShmId{makeShmIdStr(sessionId.sessionId)}, regionId);
    }

  private:
    static std::vector<std::pair<std::string, bool>> Clean(const std::string& shmId, bool full, bool verbose)
    {
        std::istringstream lines(detail::read_text([&](char* b, size_t l, size_t* n) { return fmq_shm_cleanup(shmId.c_str(), full, b, l, n); }));
        std::vector<std::pair<std::string, bool>> result;
        for (std::string line; std::getline(lines, line);) {
            const auto tab = line.rfind('\t');
            if (tab == std::string::npos) continue;
            result.emplace_back(line.substr(0, tab), line.substr(tab + 1) == "1");
            if (verbose) std::cout << "Successfully " << (result.back().second ? "removed '" : "did not remove '") << result.back().first << "'." << std::endl;
        }
        return result;
    }
};

} // namespace fair::mq::shmem
