// fairmq-rs compatibility header: FairMQ's <fairmq/shmem/Segment.h>, a managed segment of a
// shared-memory session made or opened without a transport; a transport of the session (with
// that --shm-segment-id) allocates from it. fairmq-rs has one allocator: the algorithm tags are
// accepted and change nothing. Like FairMQ's, it is registered in the session, and destroying the
// object leaves the segment (the session's cleanup, or Remove, removes it).
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairmq/shmem/Common.h>
#include <fairmq/shmem/Monitor.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace fair::mq::shmem {

struct SimpleSeqFit {};
struct RBTreeBestFit {};
inline constexpr SimpleSeqFit simpleSeqFit{};
inline constexpr RBTreeBestFit rbTreeBestFit{};

struct Segment
{
    /// Opens segment `id` of session `shmId`, or creates it with `size` bytes; TransportError when
    /// neither works.
    Segment(const std::string& shmId, uint16_t id, size_t size, SimpleSeqFit) : Segment(shmId, id, size) {}
    Segment(const std::string& shmId, uint16_t id, size_t size, RBTreeBestFit) : Segment(shmId, id, size) {}
    Segment(Segment&& other) noexcept : fRaw(std::exchange(other.fRaw, nullptr)) {}
    Segment& operator=(Segment&& other) noexcept
    {
        std::swap(fRaw, other.fRaw);
        return *this;
    }
    Segment(const Segment&) = delete;
    Segment& operator=(const Segment&) = delete;
    /// Unmaps the segment; it stays in the session.
    ~Segment() { fmq_shm_segment_free(fRaw); }

    size_t GetSize() const { return static_cast<size_t>(fmq_shm_segment_size(fRaw)); }
    void* GetData() { return fmq_shm_segment_data(fRaw); }
    size_t GetFreeMemory() const { return static_cast<size_t>(fmq_shm_segment_free_memory(fRaw)); }
    /// Zeroes the free memory (safe while transports use the segment).
    void Zero() { Check(fmq_shm_segment_zero(fRaw)); }
    /// Locks the segment in RAM; TransportError when not allowed (privilege, RLIMIT_MEMLOCK).
    void Lock() { Check(fmq_shm_segment_lock(fRaw)); }

    /// Unlinks segment `id` of session `shmId` (a failure is logged, as FairMQ does).
    static void Remove(const std::string& shmId, uint16_t id)
    {
        if (fmq_shm_segment_remove(shmId.c_str(), id, nullptr) != FMQ_OK) {
            fmq_log("error", ("Segment::Remove: " + detail::last_error()).c_str());
        }
    }

  private:
    Segment(const std::string& shmId, uint16_t id, size_t size) { Check(fmq_shm_segment_open(shmId.c_str(), id, size, &fRaw)); }
    static void Check(fmq_result r)
    {
        if (r != FMQ_OK) throw TransportError(detail::last_error());
    }

    fmq_shm_segment* fRaw = nullptr;
};

} // namespace fair::mq::shmem
