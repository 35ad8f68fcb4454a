// fairmq-rs C++ API: header-only RAII types with FairMQ's names over the C ABI (fairmq_rs.h).
//
// Porting a C++ FairMQ device is mostly a change of includes:
//   #include <fairmq/Device.h>     ->  #include <fairmq_rs.hpp>
//   #include <fairmq/runDevice.h>  ->  #include <fairmq_rs_run_device.hpp>
// (or none at all, through the compatibility headers: see the README). addCustomOptions takes
// Boost.ProgramOptions' own options_description.
//
// Thread safety follows the C ABI: transports and regions are thread-safe, everything else is used
// by one thread at a time; a device's hooks all run on its state-loop thread. Region callbacks and
// region event callbacks run on threads of the library (see UnmanagedRegion and
// TransportFactory::SubscribeToRegionEvents); exceptions they throw are caught and logged here, so
// none reaches the library. Needs C++17 (std::optional in RegionConfig).
#ifndef FAIRMQ_RS_HPP
#define FAIRMQ_RS_HPP

#include "fairmq_rs.h"
#include "fairmq_rs/c_abi.hpp"
#include "fairmq_rs/log.hpp"
#include "fairmq_rs/prog_options.hpp"
#include "fairmq_rs/version.hpp"

#include <algorithm>
#include <cassert>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <optional>
#include <random>
#include <regex>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <vector>

namespace fair {
namespace mq {

/// FairMQ's transfer codes (bytes >= 0 are returned as such).
enum class TransferCode : int { success = 0, error = -1, timeout = -2, interrupted = -3 };


class Message;
using MessagePtr = std::unique_ptr<Message>;
class UnmanagedRegion;
using UnmanagedRegionPtr = std::unique_ptr<UnmanagedRegion>;
class ChannelResource;

/// The alignment a message's data must have (FairMQ's `fair::mq::Alignment`; 0: none asked).
struct Alignment {
    size_t alignment;
    explicit operator size_t() const { return alignment; }
};

/// FairMQ's free function of a user buffer: ffn(data, hint).
using fairmq_free_fn = void(void* data, void* hint);
using FreeFn = fairmq_free_fn;

/// A released piece of a region (FairMQ's RegionBlock).
struct RegionBlock {
    RegionBlock(void* p, size_t s, void* h) : ptr(p), size(s), hint(h) {}
    void* ptr;
    size_t size;
    void* hint;
};
/// Called once per released piece: (data, size, hint).
using RegionCallback = std::function<void(void*, size_t, void*)>;
/// Called once per batch of released pieces.
using RegionBulkCallback = std::function<void(const std::vector<RegionBlock>&)>;

/// What happened to a region or segment.
enum class RegionEvent : int { created = FMQ_REGION_CREATED, destroyed = FMQ_REGION_DESTROYED, local_only = FMQ_REGION_LOCAL_ONLY };
inline std::ostream& operator<<(std::ostream& os, RegionEvent e)
{
    switch (e) {
        case RegionEvent::created: return os << "created";
        case RegionEvent::destroyed: return os << "destroyed";
        case RegionEvent::local_only: return os << "local_only";
    }
    return os << "unknown(" << static_cast<int>(e) << ")";
}

/// A segment or region of the session (FairMQ's RegionInfo).
struct RegionInfo {
    bool managed = true;
    uint64_t id = 0;
    void* ptr = nullptr;
    size_t size = 0;
    int64_t flags = 0;
    RegionEvent event = RegionEvent::created;
};
using RegionEventCallback = std::function<void(RegionInfo)>;

/// Settings of a region (FairMQ's RegionConfig, same defaults). zeromq honours lock and zero only.
struct RegionConfig {
    RegionConfig() = default;
    RegionConfig(bool l, bool z) : lock(l), zero(z) {}
    bool lock = false;
    bool zero = false;
    bool removeOnDestruction = true;
    int creationFlags = 0;
    int64_t userFlags = 0;
    /// The region's size when made by FairMQ's shmem::UnmanagedRegion(shmId, RegionConfig).
    uint64_t size = 0;
    uint64_t rcSegmentSize = 100000000;
    std::string path;
    std::optional<uint16_t> id;
    uint32_t linger = 100;
};

namespace detail {
/// The C form of `cfg` (size aside: the C calls take it as an argument). Its `path` points into
/// `cfg.path`: valid while `cfg` lives unchanged.
inline fmq_region_config ToCRegionConfig(const RegionConfig& cfg)
{
    fmq_region_config c;
    detail::check(fmq_region_config_init(&c), "RegionConfig");
    c.id = cfg.id ? static_cast<int32_t>(*cfg.id) : -1;
    c.path = cfg.path.empty() ? nullptr : cfg.path.c_str();
    c.lock = cfg.lock;
    c.zero = cfg.zero;
    c.remove_on_destruction = cfg.removeOnDestruction;
    c.creation_flags = cfg.creationFlags;
    c.user_flags = static_cast<uint64_t>(cfg.userFlags);
    c.rc_segment_size = cfg.rcSegmentSize;
    c.linger_ms = cfg.linger;
    return c;
}

inline RegionInfo ToRegionInfo(const fmq_region_info& i)
{
    RegionInfo r;
    r.managed = i.managed;
    r.id = i.id;
    r.ptr = i.ptr;
    r.size = static_cast<size_t>(i.size);
    r.flags = static_cast<int64_t>(i.flags);
    r.event = static_cast<RegionEvent>(i.event);
    return r;
}

/// Region event callbacks are never deleted: a subscription may outlive the handle it was made
/// through (channels and messages keep the transport alive), and a new handle can get the freed
/// one's address, so no key tells for sure that the library no longer calls a callback. A replaced
/// or unsubscribed callback is retired instead (a few bytes per subscription, for the process's life).
struct EventSubscriptions {
    std::mutex mutex;
    std::vector<std::shared_ptr<RegionEventCallback>> callbacks;
};
inline EventSubscriptions& Subscriptions()
{
    static EventSubscriptions s;
    return s;
}
/// Runs on the transport's event thread: nothing may be thrown into the library.
inline void RegionEventTrampoline(const fmq_region_info* info, void* user) noexcept
{
    try {
        (*static_cast<RegionEventCallback*>(user))(ToRegionInfo(*info));
    } catch (const std::exception& e) {
        fmq_log("error", (std::string("region event callback: ") + e.what()).c_str());
    } catch (...) {
        fmq_log("error", "region event callback: unknown exception");
    }
}
} // namespace detail

/// FairMQ's transport kinds.
enum class Transport { DEFAULT, ZMQ, SHM };

inline std::string TransportName(Transport t)
{
    switch (t) {
        case Transport::DEFAULT: return "default";
        case Transport::ZMQ: return "zeromq";
        case Transport::SHM: return "shmem";
    }
    return "default";
}
/// The kind of a transport name; TransportError for a name that is none.
inline Transport TransportType(const std::string& name)
{
    if (name == "default") return Transport::DEFAULT;
    if (name == "zeromq") return Transport::ZMQ;
    if (name == "shmem") return Transport::SHM;
    throw TransportError("Unknown transport provided: " + name);
}

namespace detail {
/// A fresh random id (FairMQ names an anonymous transport by a UUID).
inline std::string RandomId()
{
    static thread_local std::mt19937_64 gen{std::random_device{}()};
    std::ostringstream id;
    id << std::hex << gen() << gen();
    return id.str();
}
} // namespace detail

/// A transport ("zeromq" or "shmem"). Copies share it.
class TransportFactory {
  public:
    TransportFactory(const std::string& kind, const std::string& id, const std::vector<std::string>& options = {})
    {
        std::vector<const char*> argv;
        for (auto& o : options) argv.push_back(o.c_str());
        fmq_transport* t = nullptr;
        detail::check(fmq_transport_new(kind.c_str(), id.c_str(), static_cast<int32_t>(argv.size()), argv.data(), &t), "fmq_transport_new");
        Own(t);
        fId = id;
    }
    /// A transport configured by `config` (session, io-threads, shm-* options).
    TransportFactory(const std::string& kind, const std::string& id, const ProgOptions& config) : fId(id)
    {
        fmq_transport* t = nullptr;
        detail::check(fmq_transport_new_with_config(kind.c_str(), id.c_str(), config.Raw(), &t), "CreateTransportFactory");
        Own(t);
    }
    explicit TransportFactory(const fmq_transport* borrowed) : fRaw(borrowed) {}
    const fmq_transport* Raw() const { return fRaw; }
    std::string GetId() const { return fId; }
    Transport GetType() const
    {
        const int32_t k = fmq_transport_kind(fRaw);
        return k == 2 ? Transport::SHM : k == 1 ? Transport::ZMQ : Transport::DEFAULT;
    }
    void Interrupt() const { detail::check(fmq_transport_interrupt(fRaw), "Interrupt"); }
    void Resume() const { detail::check(fmq_transport_resume(fRaw), "Resume"); }

    MessagePtr CreateMessage(size_t size = 0) const;
    MessagePtr CreateMessage(size_t size, Alignment alignment) const;
    MessagePtr CreateMessage(Alignment alignment) const { return CreateMessage(0, alignment); }
    /// FairMQ's memory resource of this transport (`fair::mq::pmr`): what it allocates are
    /// messages, so a container built in it is sent without a copy (see ChannelResource). One per
    /// transport, however many TransportFactory objects name it.
    ChannelResource* GetMemoryResource() const;
    operator ChannelResource*() const { return GetMemoryResource(); }
    /// FairMQ's factory: a transport of `type` ("zeromq" or "shmem") configured by `config` (its
    /// defaults without one); an unknown type is a TransportFactoryError.
    static std::shared_ptr<TransportFactory> CreateTransportFactory(const std::string& type, const std::string& id = "",
                                                                    const ProgOptions* config = nullptr)
    {
        if (type != "zeromq" && type != "shmem") {
            LogLine("error") << "Unavailable transport requested: \"" << type << "\". Available are: \"zeromq\", \"shmem\".";
            throw TransportFactoryError("Unavailable transport requested: " + type);
        }
        const std::string name = id.empty() ? detail::RandomId() : id;
        if (config) return std::make_shared<TransportFactory>(type, name, *config);
        return std::make_shared<TransportFactory>(type, name);
    }
    template<typename T>
    MessagePtr NewSimpleMessage(const T& v) const;
    template<std::size_t N>
    MessagePtr NewSimpleMessage(const char (&s)[N]) const;
    MessagePtr NewSimpleMessage(const std::string& s) const;
    MessagePtr NewStaticMessage(const std::string& s) const;
    MessagePtr CreateMessage(void* data, size_t size, fairmq_free_fn* ffn, void* hint = nullptr) const;
    MessagePtr CreateMessage(UnmanagedRegionPtr& region, void* data, size_t size, void* hint = nullptr) const;
    UnmanagedRegionPtr CreateUnmanagedRegion(size_t size, RegionCallback callback, const RegionConfig& cfg = RegionConfig()) const;
    UnmanagedRegionPtr CreateUnmanagedRegion(size_t size, RegionBulkCallback callback, const RegionConfig& cfg = RegionConfig()) const;

    /// Calls `callback` on a thread of the transport for every region event, starting with the
    /// segments and regions already known; replaces an earlier subscription.
    void SubscribeToRegionEvents(RegionEventCallback callback) const
    {
        auto cb = std::make_shared<RegionEventCallback>(std::move(callback));
        detail::check(fmq_transport_subscribe_region_events(fRaw, detail::RegionEventTrampoline, cb.get()), "SubscribeToRegionEvents");
        auto& s = detail::Subscriptions();
        std::lock_guard<std::mutex> lock(s.mutex);
        s.callbacks.push_back(std::move(cb));
    }
    bool SubscribedToRegionEvents() const { return fmq_transport_subscribed_to_region_events(fRaw); }
    void UnsubscribeFromRegionEvents() const
    {
        detail::check(fmq_transport_unsubscribe_region_events(fRaw), "UnsubscribeFromRegionEvents");
    }
    std::vector<RegionInfo> GetRegionInfo() const
    {
        std::vector<fmq_region_info> raw(16);
        size_t n = 0;
        fmq_result r = fmq_transport_region_info(fRaw, raw.data(), raw.size(), sizeof(fmq_region_info), &n);
        while (r == FMQ_ERROR_BUFFER) {
            raw.resize(n + 16); // regions may appear between the two calls
            r = fmq_transport_region_info(fRaw, raw.data(), raw.size(), sizeof(fmq_region_info), &n);
        }
        detail::check(r, "GetRegionInfo");
        std::vector<RegionInfo> out;
        for (size_t i = 0; i < n; ++i) out.push_back(detail::ToRegionInfo(raw[i]));
        return out;
    }

  private:
    void Own(fmq_transport* t)
    {
        fOwned = std::shared_ptr<fmq_transport>(t, [](fmq_transport* gone) {
            ForgetMemoryResource(gone); // a later transport may get the same address
            fmq_transport_free(gone);
        });
        fRaw = t;
    }
    static void ForgetMemoryResource(const fmq_transport* t);
    std::shared_ptr<fmq_transport> fOwned;
    const fmq_transport* fRaw = nullptr;
    std::string fId;
};

/// A message (owning, or borrowed from the framework inside a data handler).
class Message {
  public:
    Message(fmq_message* m, bool owned) : fMsg(m), fOwned(owned) {}
    ~Message()
    {
        if (fOwned) fmq_message_free(fMsg);
    }
    Message(const Message&) = delete;
    Message& operator=(const Message&) = delete;

    /// The bytes (nullptr when empty). Copies share them (Copy is zero-copy): write only through a
    /// message whose bytes no copy shares, as in FairMQ.
    void* GetData() const { return fmq_message_data_ptr(fMsg); }
    size_t GetSize() const { return fmq_message_size(fMsg); }
    bool SetUsedSize(size_t size) { return fmq_message_set_used_size(fMsg, size); }
    /// Shrinking keeps the data's start, and with it its alignment.
    bool SetUsedSize(size_t size, Alignment /*alignment*/) { return SetUsedSize(size); }
    /// How many messages (in every process) share this message's bytes (FairMQ's shmem
    /// GetRefCount; a zeromq message answers 1).
    uint16_t GetRefCount() const { return static_cast<uint16_t>(fmq_message_ref_count(fMsg)); }
    void Rebuild() { detail::check(fmq_message_rebuild(fMsg), "Rebuild"); }
    void Rebuild(size_t size) { detail::check(fmq_message_rebuild_size(fMsg, size), "Rebuild"); }
    void Rebuild(size_t size, Alignment alignment)
    {
        detail::check(fmq_message_rebuild_aligned(fMsg, size, static_cast<size_t>(alignment)), "Rebuild");
    }
    /// Takes `size` bytes at `data`, released by ffn(data, hint) (see NewMessage(data, ...)).
    void Rebuild(void* data, size_t size, fairmq_free_fn* ffn, void* hint = nullptr)
    {
        detail::check(fmq_message_rebuild_data(fMsg, data, size, ffn, hint), "Rebuild");
    }
    void Copy(const Message& other) { detail::check(fmq_message_copy(fMsg, other.fMsg), "Copy"); }
    fmq_message* Raw() const { return fMsg; }
    /// Gives up ownership (for handing the message to the C ABI).
    fmq_message* Release()
    {
        fOwned = false;
        return fMsg;
    }
    bool Owned() const { return fOwned; }
    /// The transport that made or received the message (FairMQ's GetTransport); NULL when it was
    /// made through the plain C handle functions.
    TransportFactory* GetTransport() const { return fTransport; }
    void SetTransport(TransportFactory* t) { fTransport = t; }
    Transport GetType() const;

  private:
    fmq_message* fMsg;
    bool fOwned;
    TransportFactory* fTransport = nullptr;
};

inline MessagePtr NewMessage(const fmq_transport* t, size_t size = 0)
{
    fmq_message* m = nullptr;
    detail::check(size ? fmq_message_new_size(t, size, &m) : fmq_message_new(t, &m), "NewMessage");
    return std::make_unique<Message>(m, true);
}
inline MessagePtr NewSimpleMessage(const fmq_transport* t, const void* data, size_t size)
{
    fmq_message* m = nullptr;
    detail::check(fmq_message_new_copy(t, data, size, &m), "NewSimpleMessage");
    return std::make_unique<Message>(m, true);
}
/// FairMQ's NewSimpleMessage of a string literal: its characters up to the first NUL, which is not
/// sent ("OK" is 2 bytes, as a std::string of it).
template<std::size_t N>
inline MessagePtr NewSimpleMessage(const fmq_transport* t, const char (&s)[N])
{
    return NewSimpleMessage(t, s, static_cast<size_t>(std::find(s, s + N, '\0') - s));
}
/// FairMQ's NewMessage(data, size, ffn, hint): zeromq takes the buffer and calls ffn(data, hint)
/// when done (possibly on another thread); shmem copies it and calls ffn at once.
inline MessagePtr NewMessage(const fmq_transport* t, void* data, size_t size, fairmq_free_fn* ffn, void* hint = nullptr)
{
    fmq_message* m = nullptr;
    detail::check(fmq_message_new_data(t, data, size, ffn, hint, &m), "NewMessage");
    return std::make_unique<Message>(m, true);
}
namespace detail {
inline void NoCleanup(void*, void*) {}
} // namespace detail
/// FairMQ's NewStaticMessage: the string's bytes, never freed by the message, so the string must
/// outlive it (zeromq sends them without a copy; shmem copies them at once).
inline MessagePtr NewStaticMessage(const fmq_transport* t, const std::string& s)
{
    return NewMessage(t, const_cast<char*>(s.data()), s.size(), detail::NoCleanup, nullptr);
}

/// An unmanaged region (FairMQ's UnmanagedRegion): fill it through GetData(), send pieces of it with
/// NewMessage(t, region, data, size, hint). The callback hears of every piece released by its last
/// holder: shmem, on the region's own thread (in any process' release); zeromq, at once, on the
/// thread making the message (which holds a copy), inside that call. The callback must not
/// destroy the region nor (zeromq) make messages from it; what it throws is caught and logged.
/// Destroying the region waits up to its linger for outstanding acknowledgements (shmem).
class UnmanagedRegion {
  public:
    UnmanagedRegion(const fmq_transport* t, size_t size, RegionCallback callback, const RegionConfig& cfg = RegionConfig())
        : fCallbacks(new Callbacks{std::move(callback), nullptr})
    {
        Create(t, size, cfg);
    }
    UnmanagedRegion(const fmq_transport* t, size_t size, RegionBulkCallback callback, const RegionConfig& cfg = RegionConfig())
        : fCallbacks(new Callbacks{nullptr, std::move(callback)})
    {
        Create(t, size, cfg);
    }
    /// A region whose releases are not reported.
    UnmanagedRegion(const fmq_transport* t, size_t size, const RegionConfig& cfg)
        : fCallbacks(new Callbacks{nullptr, nullptr})
    {
        Create(t, size, cfg);
    }
    /// Frees the region first: no callback runs after that, so the callbacks can go.
    ~UnmanagedRegion() { fmq_region_free(fRegion); }
    UnmanagedRegion(const UnmanagedRegion&) = delete;
    UnmanagedRegion& operator=(const UnmanagedRegion&) = delete;

    void* GetData() const { return fmq_region_data(fRegion); }
    size_t GetSize() const { return fmq_region_size(fRegion); }
    uint16_t GetId() const { return static_cast<uint16_t>(fmq_region_id(fRegion)); }
    void SetLinger(uint32_t ms) { detail::check(fmq_region_set_linger(fRegion, ms), "SetLinger"); }
    uint32_t GetLinger() const { return fmq_region_get_linger(fRegion); }
    const fmq_region* Raw() const { return fRegion; }

  private:
    struct Callbacks {
        RegionCallback single;
        RegionBulkCallback bulk;
    };
    static void Single(const fmq_region_block* b, void* user) noexcept
    {
        try {
            static_cast<Callbacks*>(user)->single(b->ptr, b->size, reinterpret_cast<void*>(static_cast<uintptr_t>(b->hint)));
        } catch (const std::exception& e) {
            fmq_log("error", (std::string("region callback: ") + e.what()).c_str());
        } catch (...) {
            fmq_log("error", "region callback: unknown exception");
        }
    }
    static void Bulk(const fmq_region_block* blocks, size_t n, void* user) noexcept
    {
        try {
            std::vector<RegionBlock> v;
            v.reserve(n);
            for (size_t i = 0; i < n; ++i) v.emplace_back(blocks[i].ptr, blocks[i].size, reinterpret_cast<void*>(static_cast<uintptr_t>(blocks[i].hint)));
            static_cast<Callbacks*>(user)->bulk(v);
        } catch (const std::exception& e) {
            fmq_log("error", (std::string("region bulk callback: ") + e.what()).c_str());
        } catch (...) {
            fmq_log("error", "region bulk callback: unknown exception");
        }
    }
    void Create(const fmq_transport* t, size_t size, const RegionConfig& cfg)
    {
        const fmq_region_config c = detail::ToCRegionConfig(cfg);
        const fmq_result r = fmq_region_new(t, size, &c, fCallbacks->single ? Single : nullptr,
                                            fCallbacks->bulk ? Bulk : nullptr, fCallbacks.get(), &fRegion);
        if (r == FMQ_ERROR_ALLOC) throw MessageBadAlloc("CreateUnmanagedRegion: " + detail::last_error());
        // A refused region (an id in use, a size that does not match) is FairMQ's TransportError.
        if (r != FMQ_OK) throw TransportError("CreateUnmanagedRegion: " + detail::last_error());
    }

    std::unique_ptr<Callbacks> fCallbacks;
    fmq_region* fRegion = nullptr;
};

/// A message referring to `size` bytes at `data` inside `region` (FairMQ's NewMessage with a
/// region; shmem: zero-copy, zeromq: a copy); `hint` comes back in the region's callback.
inline MessagePtr NewMessage(const fmq_transport* t, const UnmanagedRegionPtr& region, void* data, size_t size, void* hint = nullptr)
{
    if (!region) throw Error("NewMessage: no region");
    auto base = reinterpret_cast<uintptr_t>(region->GetData());
    auto at = reinterpret_cast<uintptr_t>(data);
    if (at < base) throw Error("NewMessage: data is not inside the region");
    fmq_message* m = nullptr;
    detail::check(fmq_message_new_region(t, region->Raw(), static_cast<size_t>(at - base), size, static_cast<uint64_t>(reinterpret_cast<uintptr_t>(hint)), &m),
                  "NewMessage(region)");
    return std::make_unique<Message>(m, true);
}

inline MessagePtr TransportFactory::CreateMessage(size_t size) const
{
    MessagePtr m = NewMessage(fRaw, size);
    m->SetTransport(const_cast<TransportFactory*>(this));
    return m;
}
inline MessagePtr TransportFactory::CreateMessage(size_t size, Alignment alignment) const
{
    fmq_message* m = nullptr;
    detail::check(fmq_message_new_aligned(fRaw, size, static_cast<size_t>(alignment), &m), "NewMessage(aligned)");
    auto msg = std::make_unique<Message>(m, true);
    msg->SetTransport(const_cast<TransportFactory*>(this));
    return msg;
}

using byte = unsigned char;
namespace pmr = std::pmr;

/// FairMQ's memory resource interface: allocations that are messages.
class MemoryResource : public pmr::memory_resource {
  public:
    /// The message whose data starts at `p` (taken out of the resource), or null if none does.
    virtual MessagePtr getMessage(void* p) = 0;
    /// Keeps `message` until its data is asked for; returns where its data starts.
    virtual void* setMessage(MessagePtr message) = 0;
    virtual TransportFactory* getTransportFactory() noexcept = 0;
    virtual size_t getNumberOfMessages() const noexcept = 0;
};

/// A transport's memory resource: every allocation is a new message of the transport, kept until
/// `getMessage` takes it out (to be sent) or the container deallocates it.
class ChannelResource : public MemoryResource {
  public:
    ChannelResource() = delete;
    explicit ChannelResource(TransportFactory* factory) : fFactory(factory)
    {
        if (!factory) throw std::runtime_error("Tried to construct from a nullptr fair::mq::TransportFactory");
    }
    MessagePtr getMessage(void* p) override
    {
        std::lock_guard<std::mutex> lock(fMutex);
        auto it = fMessages.find(p);
        if (it == fMessages.end()) return nullptr;
        MessagePtr m = std::move(it->second);
        fMessages.erase(it);
        return m;
    }
    void* setMessage(MessagePtr message) override
    {
        void* at = message->GetData();
        std::lock_guard<std::mutex> lock(fMutex);
        fMessages[at] = std::move(message);
        return at;
    }
    TransportFactory* getTransportFactory() noexcept override { return fFactory; }
    size_t getNumberOfMessages() const noexcept override
    {
        std::lock_guard<std::mutex> lock(fMutex);
        return fMessages.size();
    }

  protected:
    void* do_allocate(std::size_t bytes, std::size_t alignment) override
    {
        return setMessage(fFactory->CreateMessage(bytes, Alignment{alignment}));
    }
    void do_deallocate(void* p, std::size_t /*bytes*/, std::size_t /*alignment*/) override
    {
        std::lock_guard<std::mutex> lock(fMutex);
        fMessages.erase(p);
    }
    bool do_is_equal(const pmr::memory_resource& other) const noexcept override { return this == &other; }

  private:
    TransportFactory* fFactory;
    mutable std::mutex fMutex;
    std::map<void*, MessagePtr> fMessages;
};

namespace detail {
/// The memory resource of each transport (by its handle), made on first use.
struct MemoryResources {
    std::mutex mutex;
    std::map<const fmq_transport*, std::pair<std::unique_ptr<TransportFactory>, std::unique_ptr<ChannelResource>>> of;
};
inline MemoryResources& TransportResources()
{
    static MemoryResources r;
    return r;
}
} // namespace detail

inline void TransportFactory::ForgetMemoryResource(const fmq_transport* t)
{
    std::unique_ptr<TransportFactory> f;
    std::unique_ptr<ChannelResource> r;
    {
        auto& all = detail::TransportResources();
        std::lock_guard<std::mutex> lock(all.mutex);
        auto it = all.of.find(t);
        if (it == all.of.end()) return;
        f = std::move(it->second.first);
        r = std::move(it->second.second);
        all.of.erase(it);
    }
    // Messages the resource still held go before their transport (outside the lock).
}

inline ChannelResource* TransportFactory::GetMemoryResource() const
{
    auto& r = detail::TransportResources();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto& entry = r.of[fRaw];
    if (!entry.second) {
        entry.first = std::make_unique<TransportFactory>(fRaw);
        entry.second = std::make_unique<ChannelResource>(entry.first.get());
    }
    return entry.second.get();
}
template<typename T>
inline MessagePtr TransportFactory::NewSimpleMessage(const T& v) const
{
    MessagePtr m = fair::mq::NewSimpleMessage(fRaw, &v, sizeof(T));
    m->SetTransport(const_cast<TransportFactory*>(this));
    return m;
}
template<std::size_t N>
inline MessagePtr TransportFactory::NewSimpleMessage(const char (&s)[N]) const
{
    MessagePtr m = fair::mq::NewSimpleMessage(fRaw, s);
    m->SetTransport(const_cast<TransportFactory*>(this));
    return m;
}
inline MessagePtr TransportFactory::NewSimpleMessage(const std::string& s) const
{
    MessagePtr m = fair::mq::NewSimpleMessage(fRaw, s.data(), s.size());
    m->SetTransport(const_cast<TransportFactory*>(this));
    return m;
}
inline MessagePtr TransportFactory::NewStaticMessage(const std::string& s) const
{
    MessagePtr m = fair::mq::NewStaticMessage(fRaw, s);
    m->SetTransport(const_cast<TransportFactory*>(this));
    return m;
}
inline MessagePtr TransportFactory::CreateMessage(void* data, size_t size, fairmq_free_fn* ffn, void* hint) const
{
    MessagePtr m = NewMessage(fRaw, data, size, ffn, hint);
    m->SetTransport(const_cast<TransportFactory*>(this));
    return m;
}
inline MessagePtr TransportFactory::CreateMessage(UnmanagedRegionPtr& region, void* data, size_t size, void* hint) const
{
    MessagePtr m = NewMessage(fRaw, region, data, size, hint);
    m->SetTransport(const_cast<TransportFactory*>(this));
    return m;
}
inline Transport Message::GetType() const { return fTransport ? fTransport->GetType() : Transport::DEFAULT; }
inline UnmanagedRegionPtr TransportFactory::CreateUnmanagedRegion(size_t size, RegionCallback callback, const RegionConfig& cfg) const
{
    return std::make_unique<UnmanagedRegion>(fRaw, size, std::move(callback), cfg);
}
inline UnmanagedRegionPtr TransportFactory::CreateUnmanagedRegion(size_t size, RegionBulkCallback callback, const RegionConfig& cfg) const
{
    return std::make_unique<UnmanagedRegion>(fRaw, size, std::move(callback), cfg);
}

/// The parts of a multipart message.
namespace detail {
/// An owned message with what `m` held; `m` is left empty (a message the framework lent, or one
/// in a C container).
inline MessagePtr Own(fmq_message* m)
{
    fmq_message* out = nullptr;
    check(fmq_message_take(m, &out), "take");
    return std::make_unique<Message>(out, true);
}
} // namespace detail

/// A multipart message (FairMQ's fair::mq::Parts): a move-only vector of owned messages. A part can
/// be moved out (`std::move(parts.At(i))`) into another Parts or sent alone; a received Parts, and
/// the Parts a data handler gets, own their messages too.
class Parts {
  public:
    using container = std::vector<MessagePtr>;
    using size_type = container::size_type;
    using reference = container::reference;
    using const_reference = container::const_reference;
    using iterator = container::iterator;
    using const_iterator = container::const_iterator;

    Parts() = default;
    Parts(const Parts&) = delete;
    Parts& operator=(const Parts&) = delete;
    Parts(Parts&&) = default;
    Parts& operator=(Parts&&) = default;
    ~Parts() = default;

    /// Parts(std::move(a), std::move(b), ...): messages (MessagePtr) or other Parts, in order.
    template<typename... Ps>
    Parts(Ps&&... parts)
    {
        fParts.reserve(sizeof...(Ps));
        AddPart(std::forward<Ps>(parts)...);
    }

    /// Takes ownership of `msg` (FairMQ deprecates owning raw pointers; kept for old sources).
    void AddPart(Message* msg) { AddPart(MessagePtr(msg)); }
    /// Appends `msg`; a message the framework lent a data handler is moved into one of its own.
    void AddPart(MessagePtr msg)
    {
        if (msg && !msg->Owned()) msg = detail::Own(msg->Raw());
        fParts.push_back(std::move(msg));
    }
    template<typename... Ts>
    void AddPart(MessagePtr first, Ts&&... remaining)
    {
        AddPart(std::move(first));
        AddPart(std::forward<Ts>(remaining)...);
    }
    /// Appends every part of `parts`.
    void AddPart(Parts parts)
    {
        fParts.reserve(fParts.size() + parts.Size());
        for (auto& m : parts.fParts) fParts.push_back(std::move(m));
    }

    Message& operator[](size_type index) { return *fParts[index]; }
    const Message& operator[](size_type index) const { return *fParts[index]; }
    Message& AtRef(size_type index) { return *fParts.at(index); }
    reference At(size_type index) { return fParts.at(index); }
    const_reference At(size_type index) const { return fParts.at(index); }

    size_type Size() const noexcept { return fParts.size(); }
    bool Empty() const noexcept { return fParts.empty(); }
    void Clear() noexcept { fParts.clear(); }

    iterator begin() noexcept { return fParts.begin(); }
    const_iterator begin() const noexcept { return fParts.begin(); }
    const_iterator cbegin() const noexcept { return fParts.cbegin(); }
    iterator end() noexcept { return fParts.end(); }
    const_iterator end() const noexcept { return fParts.end(); }
    const_iterator cend() const noexcept { return fParts.cend(); }

    container fParts{};
};

namespace detail {
/// Hands the parts of `p` to a C container for one transfer (see SendParts).
class LentParts {
  public:
    LentParts(Parts& p, const fmq_transport* t) : fRaw(Checked(p)), fParts(p), fTransport(t)
    {
        for (auto& m : p.fParts) fmq_parts_add(fRaw, m->Release()); // fails only for a NULL container
    }
    /// The parts come back: emptied by a successful send, as they were after a failed one.
    ~LentParts()
    {
        const size_t n = fmq_parts_size(fRaw);
        for (size_t i = 0; i < fParts.fParts.size(); ++i) {
            fmq_message* m = nullptr;
            const fmq_result r = i < n ? fmq_message_take(fmq_parts_at(fRaw, i), &m) : fmq_message_new(fTransport, &m);
            fParts.fParts[i] = r == FMQ_OK ? std::make_unique<Message>(m, true) : nullptr;
        }
        fmq_parts_free(fRaw);
    }
    LentParts(const LentParts&) = delete;
    LentParts& operator=(const LentParts&) = delete;
    fmq_parts* Raw() const { return fRaw; }

  private:
    /// Checks (and owns) every part before the container exists: a throw leaks nothing.
    static fmq_parts* Checked(Parts& p)
    {
        for (auto& m : p.fParts) {
            if (!m) throw Error("Send: a part is empty (a moved-from MessagePtr)");
            if (!m->Owned()) m = Own(m->Raw());
        }
        return fmq_parts_new();
    }
    fmq_parts* fRaw;
    Parts& fParts;
    const fmq_transport* fTransport;
};

/// Appends the parts of a C container (received, or lent to a data handler) to `p`, owned.
inline void TakeParts(fmq_parts* raw, Parts& p)
{
    const size_t n = fmq_parts_size(raw);
    p.fParts.reserve(p.fParts.size() + n);
    for (size_t i = 0; i < n; ++i) p.fParts.push_back(Own(fmq_parts_at(raw, i)));
}
} // namespace detail

} // namespace mq
} // namespace fair

#include "fairmq_rs/channel.hpp"

namespace fair {
namespace mq {

/// Waits for input or output on several channels (FairMQ's Poller). Used from one thread at a
/// time, and no other thread may use its channels while Poll runs; the channels must outlive it.
class Poller {
  public:
    /// Over `channels` in order: CheckInput(i) is about channels[i]. `offsets` names groups of
    /// them: CheckInput(name, j) is about channels[offsets[name] + j].
    explicit Poller(const std::vector<const fmq_channel*>& channels, std::map<std::string, size_t> offsets = {})
        : fOffsets(std::move(offsets))
    {
        detail::check(fmq_poller_new(channels.data(), channels.size(), &fPoller), "NewPoller");
    }
    explicit Poller(const std::vector<Channel>& channels) : Poller(Raws(channels)) {}
    ~Poller() { fmq_poller_free(fPoller); }
    Poller(const Poller&) = delete;
    Poller& operator=(const Poller&) = delete;

    /// Waits up to timeoutMs (-1 forever); the number of ready channels, or -3 (interrupted) or -1.
    int64_t Poll(int timeoutMs) { return fmq_poller_poll(fPoller, timeoutMs); }
    bool CheckInput(int index) const { return fmq_poller_check_input(fPoller, static_cast<size_t>(index)); }
    bool CheckOutput(int index) const { return fmq_poller_check_output(fPoller, static_cast<size_t>(index)); }
    bool CheckInput(const std::string& channel, int index) const { return CheckInput(Offset(channel) + index); }
    bool CheckOutput(const std::string& channel, int index) const { return CheckOutput(Offset(channel) + index); }

  private:
    static std::vector<const fmq_channel*> Raws(const std::vector<Channel>& channels)
    {
        std::vector<const fmq_channel*> raw;
        for (auto& c : channels) raw.push_back(c.Raw());
        return raw;
    }
    int Offset(const std::string& channel) const
    {
        auto it = fOffsets.find(channel);
        if (it == fOffsets.end()) throw Error("Poller: channel '" + channel + "' is not polled");
        return static_cast<int>(it->second);
    }
    fmq_poller* fPoller = nullptr;
    std::map<std::string, size_t> fOffsets;
};
using PollerPtr = std::unique_ptr<Poller>;


/// FairMQ's states and transitions (the same numbers as fair::mq::State and Transition).
enum class State : int {
    Undefined = 0,
    Ok,
    Error,
    Idle,
    InitializingDevice,
    Initialized,
    Binding,
    Bound,
    Connecting,
    DeviceReady,
    InitializingTask,
    Ready,
    Running,
    ResettingTask,
    ResettingDevice,
    Exiting
};
enum class Transition : int {
    Auto = 0,
    InitDevice,
    CompleteInit,
    Bind,
    Connect,
    InitTask,
    Run,
    Stop,
    ResetTask,
    ResetDevice,
    End,
    ErrorFound
};

namespace detail {
inline const std::vector<std::string>& StateNames()
{
    static const std::vector<std::string> names{"UNDEFINED", "OK", "ERROR", "IDLE", "INITIALIZING DEVICE", "INITIALIZED",
                                                "BINDING", "BOUND", "CONNECTING", "DEVICE READY", "INITIALIZING TASK",
                                                "READY", "RUNNING", "RESETTING TASK", "RESETTING DEVICE", "EXITING"};
    return names;
}
inline const std::vector<std::string>& TransitionNames()
{
    static const std::vector<std::string> names{"AUTO", "INIT DEVICE", "COMPLETE INIT", "BIND", "CONNECT", "INIT TASK",
                                                "RUN", "STOP", "RESET TASK", "RESET DEVICE", "END", "ERROR FOUND"};
    return names;
}
template<typename E>
E ByName(const std::vector<std::string>& names, const std::string& name, const char* what)
{
    for (size_t i = 0; i < names.size(); ++i) {
        if (names[i] == name) return static_cast<E>(i);
    }
    throw std::out_of_range(std::string("no ") + what + " named '" + name + "'");
}
} // namespace detail

inline std::string GetStateName(State s) { return detail::StateNames().at(static_cast<size_t>(s)); }
inline std::string GetTransitionName(Transition t) { return detail::TransitionNames().at(static_cast<size_t>(t)); }
inline State GetState(const std::string& name) { return detail::ByName<State>(detail::StateNames(), name, "state"); }
inline Transition GetTransition(const std::string& name)
{
    return detail::ByName<Transition>(detail::TransitionNames(), name, "transition");
}
inline std::ostream& operator<<(std::ostream& os, State s) { return os << GetStateName(s); }
inline std::ostream& operator<<(std::ostream& os, Transition t) { return os << GetTransitionName(t); }

} // namespace mq
} // namespace fair

#include "fairmq_rs/device.hpp"
#include "fairmq_rs/run.hpp"

namespace fair {
namespace mq {

namespace tools {
/// Keeps a loop at `rate` iterations a second (FairMQ's fair::mq::tools::RateLimiter): call
/// maybe_sleep() once per iteration. It sleeps as long as the loop is ahead of its schedule; a loop
/// that fell more than a second behind starts a new schedule instead of bursting to catch up.
class RateLimiter {
  public:
    /// `rate` iterations a second; 0 or less: no limit (as FairMQ's).
    explicit RateLimiter(float rate)
        : fPeriod(rate > 0 ? std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / rate))
                           : Clock::duration(0))
        , fNext(Clock::now())
    {}
    void maybe_sleep()
    {
        if (fPeriod == Clock::duration(0)) return;
        fNext += fPeriod;
        const auto now = Clock::now();
        if (fNext > now) {
            std::this_thread::sleep_until(fNext);
        } else if (now - fNext > std::chrono::seconds(1)) {
            fNext = now;
        }
    }

  private:
    using Clock = std::chrono::steady_clock;
    Clock::duration fPeriod;
    Clock::time_point fNext;
};
} // namespace tools

} // namespace mq
} // namespace fair


#endif
