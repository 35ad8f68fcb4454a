// fairmq-rs compatibility header: FairMQ's <fairmq/shmem/Monitor.h>, the static queries and
// cleanup of shared-memory sessions (the watching monitor is the program fairmq-shmmonitor).
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairmq/shmem/Common.h>

#include <sys/types.h>

#include <cstdint>
#include <iostream>
#include <unordered_map>
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

/// A block in use in a managed segment (FairMQ's; fairmq-rs records no creation time: 0).
struct BufferDebugInfo
{
    BufferDebugInfo(size_t offset, pid_t pid, size_t size, uint64_t creationTime)
        : fOffset(offset)
        , fPid(pid)
        , fSize(size)
        , fCreationTime(creationTime)
    {}

    size_t fOffset;
    pid_t fPid;
    size_t fSize;
    uint64_t fCreationTime;
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

    /// Every block in use, per managed segment (pid 0: its process is not attached);
    /// MonitorError when the session has no segments.
    static std::unordered_map<uint16_t, std::vector<BufferDebugInfo>> GetDebugInfo(const ShmId& shmId)
    {
        std::string text;
        try {
            text = detail::read_text([&](char* b, size_t l, size_t* n) { return fmq_shm_debug_info(shmId.shmId.c_str(), b, l, n); });
        } catch (const std::exception& e) {
            throw MonitorError(e.what());
        }
        std::unordered_map<uint16_t, std::vector<BufferDebugInfo>> out;
        std::istringstream lines(text);
        for (std::string line; std::getline(lines, line);) {
            std::istringstream f(line);
            unsigned long seg = 0, offset = 0, size = 0, refs = 0;
            long pid = 0;
            if (f >> seg >> offset >> pid >> size >> refs) {
                out[static_cast<uint16_t>(seg)].emplace_back(offset, static_cast<pid_t>(pid), size, 0);
            }
        }
        return out;
    }
    static std::unordered_map<uint16_t, std::vector<BufferDebugInfo>> GetDebugInfo(const SessionId& sessionId)
    {
        return GetDebugInfo(ShmId{makeShmIdStr(sessionId.sessionId)});
    }
    /// Prints every block in use (FairMQ's PrintDebugInfo).
    static void PrintDebugInfo(const ShmId& shmId)
    {
        for (const auto& seg : GetDebugInfo(shmId)) {
            std::cout << "found " << seg.second.size() << " messages in segment " << seg.first << "." << std::endl;
            for (const auto& b : seg.second) {
                std::cout << "segment: " << seg.first << ", offset: " << b.fOffset << ", size: " << b.fSize << ", creator PID: " << b.fPid << std::endl;
            }
        }
    }
    static void PrintDebugInfo(const SessionId& sessionId) { PrintDebugInfo(ShmId{makeShmIdStr(sessionId.sessionId)}); }
    /// Prints the session's segments, regions and attached processes; false when it has none.
    static bool PrintShm(const ShmId& shmId)
    {
        size_t needed = 0;
        if (fmq_shm_report(shmId.shmId.c_str(), nullptr, 0, &needed) == FMQ_ERROR_NOT_FOUND) return false;
        std::cout << detail::read_text([&](char* b, size_t l, size_t* n) { return fmq_shm_report(shmId.shmId.c_str(), b, l, n); });
        return true;
    }
    /// Prints every session found under `path` (fairmq-shmmonitor --list-all).
    static void ListAll(const std::string& path)
    {
        std::cout << detail::read_text([&](char* b, size_t l, size_t* n) { return fmq_shm_list_all(path.c_str(), b, l, n); });
    }
    /// [EXPERIMENTAL, as FairMQ's] forgets every allocation in the session's segments; refused
    /// (MonitorError) while a device that is not provably dead uses the session.
    static void ResetContent(const ShmId& shmId, bool verbose = true)
    {
        std::vector<char> buf(64 * 1024);
        size_t n = 0;
        const fmq_result r = fmq_shm_reset_content(shmId.shmId.c_str(), buf.data(), buf.size(), &n);
        if (verbose && n < buf.size()) std::cout << std::string(buf.data(), n) << std::endl;
        if (r != FMQ_OK && r != FMQ_ERROR_BUFFER) throw MonitorError(detail::last_error());
    }
    static void ResetContent(const SessionId& sessionId, bool verbose = true)
    {
        ResetContent(ShmId{makeShmIdStr(sessionId.sessionId)}, verbose);
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
