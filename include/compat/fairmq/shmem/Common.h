// fairmq-rs compatibility header: FairMQ's <fairmq/shmem/Common.h>, the names of a session's
// shared memory (fairmq-rs names them fmqrs_<shmId>_*: its layout is not FairMQ's).
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairmq_rs.hpp>

#include <cstdint>
#include <cstdio>
#include <string>

namespace fair::mq::shmem {

/// The shm id of session `sessionId` for the effective user: 8 hex digits (FairMQ's derivation,
/// the first 4 bytes of the SHA-256 of user id and session).
inline std::string makeShmIdStr(const std::string& sessionId)
{
    return detail::read_text([&](char* b, size_t l, size_t* n) { return fmq_shm_id_for_session(sessionId.c_str(), b, l, n); });
}
/// The shm id of an explicit `--shmid` number.
inline std::string makeShmIdStr(uint64_t val)
{
    char hex[17];
    std::snprintf(hex, sizeof hex, "%08llx", static_cast<unsigned long long>(val));
    return hex;
}
inline uint64_t makeShmIdUint64(const std::string& sessionId) { return std::stoull(makeShmIdStr(sessionId), nullptr, 16); }

/// The name of a session object: fmqrs_<shmId>_<type>[_<index>].
inline std::string MakeShmName(const std::string& shmId, const std::string& type) { return "fmqrs_" + shmId + "_" + type; }
inline std::string MakeShmName(const std::string& shmId, const std::string& type, int index)
{
    return MakeShmName(shmId, type) + "_" + std::to_string(index);
}

} // namespace fair::mq::shmem
