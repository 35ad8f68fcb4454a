// fairmq-rs compatibility header: FairMQ's <fairmq/shmem/UnmanagedRegion.h>, an unmanaged region
// of a shared-memory session made or opened without a transport (its controller); a transport of
// the session adopts it with CreateUnmanagedRegion and the same RegionConfig::id. Destroying the
// object removes the region if removeOnDestruction (the default), as FairMQ's does, but nothing
// of a session removed meanwhile. Viewers are made by transports only.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairmq/shmem/Common.h>
#include <fairmq/shmem/Monitor.h>
#include <fairmq/UnmanagedRegion.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace fair::mq::shmem {

struct UnmanagedRegion
{
    /// Opens region `id` of session `shmId`, or creates it with `size` bytes; TransportError when
    /// neither works, or its size is another.
    UnmanagedRegion(const std::string& shmId, uint16_t id, uint64_t size) : UnmanagedRegion(shmId, size, true, WithId(id)) {}
    /// The same with the settings of `cfg`, whose id is required.
    UnmanagedRegion(const std::string& shmId, uint64_t size, const RegionConfig& cfg) : UnmanagedRegion(shmId, size, true, cfg) {}
    UnmanagedRegion(const std::string& shmId, const RegionConfig& cfg) : UnmanagedRegion(shmId, cfg.size, true, cfg) {}
    UnmanagedRegion(const std::string& shmId, uint64_t size, bool controlling, const RegionConfig& cfg)
    {
        if (!controlling) throw TransportError("shmem::UnmanagedRegion: only controllers are made here (transports make viewers)");
        const fmq_region_config c = detail::ToCRegionConfig(cfg);
        Check(fmq_shm_region_open(shmId.c_str(), size, &c, &fRaw));
    }
    UnmanagedRegion(const UnmanagedRegion&) = delete;
    UnmanagedRegion(UnmanagedRegion&&) = delete;
    UnmanagedRegion& operator=(const UnmanagedRegion&) = delete;
    UnmanagedRegion& operator=(UnmanagedRegion&&) = delete;
    ~UnmanagedRegion() { fmq_shm_region_free(fRaw); }

    /// Zeroes the whole region.
    void Zero() { Check(fmq_shm_region_zero(fRaw)); }
    /// Locks the region in RAM; TransportError when not allowed (privilege, RLIMIT_MEMLOCK).
    void Lock() { Check(fmq_shm_region_lock(fRaw)); }

    void* GetData() const { return fmq_shm_region_data(fRaw); }
    size_t GetSize() const { return static_cast<size_t>(fmq_shm_region_size(fRaw)); }

    void SetLinger(uint32_t linger) { Check(fmq_shm_region_set_linger(fRaw, linger)); }
    uint32_t GetLinger() const { return fmq_shm_region_get_linger(fRaw); }

    bool RemoveOnDestruction() { return fmq_shm_region_remove_on_destruction(fRaw); }

  private:
    static RegionConfig WithId(uint16_t id)
    {
        RegionConfig cfg;
        cfg.id = id;
        return cfg;
    }
    static void Check(fmq_result r)
    {
        if (r != FMQ_OK) throw TransportError(detail::last_error());
    }

    fmq_shm_region* fRaw = nullptr;
};

} // namespace fair::mq::shmem
