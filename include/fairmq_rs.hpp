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

#include <algorithm>

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

/// Thrown for FMQ_ERROR_* results, with the library's error text.
class Error : public std::runtime_error {
  public:
    explicit Error(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {
inline std::string last_error()
{
    size_t n = 0;
    fmq_last_error(nullptr, 0, &n); // asks for the length; the error text stays
    std::vector<char> buf(n + 1);
    if (fmq_last_error(buf.data(), buf.size(), &n) != FMQ_OK) {
        return std::string();
    }
    return std::string(buf.data(), n);
}
inline void check(fmq_result r, const char* what)
{
    if (r != FMQ_OK) {
        throw Error(std::string(what) + ": " + fmq_result_message(r) + " (" + last_error() + ")");
    }
}
inline std::string read_text(const std::function<fmq_result(char*, size_t, size_t*)>& f)
{
    std::vector<char> buf(256);
    size_t n = 0;
    fmq_result r = f(buf.data(), buf.size(), &n);
    if (r == FMQ_ERROR_BUFFER) {
        buf.resize(n + 1);
        r = f(buf.data(), buf.size(), &n);
    }
    detail::check(r, "reading text"); // a missing property, say
    return std::string(buf.data(), n);
}
} // namespace detail

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
    uint16_t id = 0;
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
    uint64_t userFlags = 0;
    uint64_t rcSegmentSize = 10000000;
    std::string path;
    std::optional<uint16_t> id;
    uint32_t linger = 100;
};

namespace detail {
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

/// A transport ("zeromq" or "shmem"). Copies share it.
class TransportFactory {
  public:
    TransportFactory(const std::string& kind, const std::string& id, const std::vector<std::string>& options = {})
    {
        std::vector<const char*> argv;
        for (auto& o : options) argv.push_back(o.c_str());
        fmq_transport* t = nullptr;
        detail::check(fmq_transport_new(kind.c_str(), id.c_str(), static_cast<int32_t>(argv.size()), argv.data(), &t), "fmq_transport_new");
        fOwned = std::shared_ptr<fmq_transport>(t, [](fmq_transport* gone) {
            ForgetMemoryResource(gone); // a later transport may get the same address
            fmq_transport_free(gone);
        });
        fRaw = t;
    }
    explicit TransportFactory(const fmq_transport* borrowed) : fRaw(borrowed) {}
    const fmq_transport* Raw() const { return fRaw; }
    void Interrupt() const { detail::check(fmq_transport_interrupt(fRaw), "Interrupt"); }
    void Resume() const { detail::check(fmq_transport_resume(fRaw), "Resume"); }

    MessagePtr CreateMessage(size_t size = 0) const;
    MessagePtr CreateMessage(size_t size, Alignment alignment) const;
    /// FairMQ's memory resource of this transport (`fair::mq::pmr`): what it allocates are
    /// messages, so a container built in it is sent without a copy (see ChannelResource). One per
    /// transport, however many TransportFactory objects name it.
    ChannelResource* GetMemoryResource() const;
    operator ChannelResource*() const { return GetMemoryResource(); }
    /// FairMQ's factory: a transport of `type` ("zeromq" or "shmem") with its default options.
    static std::shared_ptr<TransportFactory> CreateTransportFactory(const std::string& type, const std::string& id = "",
                                                                    const void* /*config*/ = nullptr)
    {
        return std::make_shared<TransportFactory>(type, id.empty() ? "transport" : id);
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
        fmq_result r = fmq_transport_region_info(fRaw, raw.data(), raw.size(), &n);
        while (r == FMQ_ERROR_BUFFER) {
            raw.resize(n + 16); // regions may appear between the two calls
            r = fmq_transport_region_info(fRaw, raw.data(), raw.size(), &n);
        }
        detail::check(r, "GetRegionInfo");
        std::vector<RegionInfo> out;
        for (size_t i = 0; i < n; ++i) out.push_back(detail::ToRegionInfo(raw[i]));
        return out;
    }

  private:
    static void ForgetMemoryResource(const fmq_transport* t);
    std::shared_ptr<fmq_transport> fOwned;
    const fmq_transport* fRaw = nullptr;
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

    void* GetData() const { return fmq_message_data(fMsg); }
    size_t GetSize() const { return fmq_message_size(fMsg); }
    bool SetUsedSize(size_t size) { return fmq_message_set_used_size(fMsg, size); }
    void Rebuild() { detail::check(fmq_message_rebuild(fMsg), "Rebuild"); }
    void Rebuild(size_t size) { detail::check(fmq_message_rebuild_size(fMsg, size), "Rebuild"); }
    void Copy(const Message& other) { detail::check(fmq_message_copy(fMsg, other.fMsg), "Copy"); }
    fmq_message* Raw() const { return fMsg; }
    /// Gives up ownership (for handing the message to the C ABI).
    fmq_message* Release()
    {
        fOwned = false;
        return fMsg;
    }
    bool Owned() const { return fOwned; }

  private:
    fmq_message* fMsg;
    bool fOwned;
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
        fmq_region_config c;
        detail::check(fmq_region_config_init(&c), "RegionConfig");
        c.id = cfg.id ? static_cast<int32_t>(*cfg.id) : -1;
        c.path = cfg.path.empty() ? nullptr : cfg.path.c_str();
        c.lock = cfg.lock;
        c.zero = cfg.zero;
        c.remove_on_destruction = cfg.removeOnDestruction;
        c.creation_flags = cfg.creationFlags;
        c.user_flags = cfg.userFlags;
        c.rc_segment_size = cfg.rcSegmentSize;
        c.linger_ms = cfg.linger;
        detail::check(fmq_region_new(t, size, &c, fCallbacks->single ? Single : nullptr, fCallbacks->bulk ? Bulk : nullptr, fCallbacks.get(), &fRegion),
                      "CreateUnmanagedRegion");
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

inline MessagePtr TransportFactory::CreateMessage(size_t size) const { return NewMessage(fRaw, size); }
inline MessagePtr TransportFactory::CreateMessage(size_t size, Alignment alignment) const
{
    fmq_message* m = nullptr;
    detail::check(fmq_message_new_aligned(fRaw, size, static_cast<size_t>(alignment), &m), "NewMessage(aligned)");
    return std::make_unique<Message>(m, true);
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
    return fair::mq::NewSimpleMessage(fRaw, &v, sizeof(T));
}
template<std::size_t N>
inline MessagePtr TransportFactory::NewSimpleMessage(const char (&s)[N]) const
{
    return fair::mq::NewSimpleMessage(fRaw, s);
}
inline MessagePtr TransportFactory::NewSimpleMessage(const std::string& s) const
{
    return fair::mq::NewSimpleMessage(fRaw, s.data(), s.size());
}
inline MessagePtr TransportFactory::NewStaticMessage(const std::string& s) const { return fair::mq::NewStaticMessage(fRaw, s); }
inline MessagePtr TransportFactory::CreateMessage(void* data, size_t size, fairmq_free_fn* ffn, void* hint) const
{
    return NewMessage(fRaw, data, size, ffn, hint);
}
inline MessagePtr TransportFactory::CreateMessage(UnmanagedRegionPtr& region, void* data, size_t size, void* hint) const
{
    return NewMessage(fRaw, region, data, size, hint);
}
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

/// A sub-channel (borrowed from the device, or owned when made directly).
class Channel {
  public:
    explicit Channel(const fmq_channel* borrowed) : fCh(borrowed), fTransport(fmq_channel_transport(borrowed)) {}
    Channel(const TransportFactory& t, const std::string& spec) : fTransport(nullptr)
    {
        fmq_channel* c = nullptr;
        detail::check(fmq_channel_new(t.Raw(), spec.c_str(), &c), "fmq_channel_new");
        fOwned = std::shared_ptr<fmq_channel>(c, fmq_channel_free);
        fCh = c;
        fTransport = TransportFactory(fmq_channel_transport(c));
    }
    int64_t Send(MessagePtr& m, int timeoutMs = -1) const { return fmq_channel_send(fCh, m->Raw(), timeoutMs); }
    int64_t Receive(MessagePtr& m, int timeoutMs = -1) const { return fmq_channel_receive(fCh, m->Raw(), timeoutMs); }
    int64_t Send(Parts& p, int timeoutMs = -1) const
    {
        detail::LentParts lent(p, fTransport.Raw());
        return fmq_channel_send_parts(fCh, lent.Raw(), timeoutMs);
    }
    int64_t Receive(Parts& p, int timeoutMs = -1) const
    {
        fmq_parts* raw = fmq_parts_new();
        auto r = fmq_channel_receive_parts(fCh, raw, timeoutMs);
        try {
            detail::TakeParts(raw, p);
        } catch (...) {
            fmq_parts_free(raw);
            throw;
        }
        fmq_parts_free(raw);
        return r;
    }
    MessagePtr NewMessage(size_t size = 0) const { return fair::mq::NewMessage(fTransport.Raw(), size); }
    MessagePtr NewMessage(void* data, size_t size, fairmq_free_fn* ffn, void* hint = nullptr) const
    {
        return fair::mq::NewMessage(fTransport.Raw(), data, size, ffn, hint);
    }
    template<typename T>
    MessagePtr NewSimpleMessage(const T& v) const
    {
        return fTransport.NewSimpleMessage(v);
    }
    MessagePtr NewStaticMessage(const std::string& s) const { return fTransport.NewStaticMessage(s); }
    /// The channel's transport (borrowed: valid while the channel lives), as FairMQ's Transport().
    const TransportFactory* Transport() const { return &fTransport; }
    std::string GetAddress() const
    {
        return detail::read_text([&](char* b, size_t l, size_t* n) { return fmq_channel_address(fCh, b, l, n); });
    }
    fmq_counters Counters() const
    {
        fmq_counters c{};
        detail::check(fmq_channel_counters(fCh, &c), "Counters");
        return c;
    }
    uint64_t GetMessagesTx() const { return Counters().messages_tx; }
    uint64_t GetMessagesRx() const { return Counters().messages_rx; }
    uint64_t GetBytesTx() const { return Counters().bytes_tx; }
    uint64_t GetBytesRx() const { return Counters().bytes_rx; }
    /// How many peers are connected now (ZeroMQ reports them a moment late, and no inproc ones).
    unsigned long GetNumberOfConnectedPeers() const { return fmq_channel_connected_peers(fCh); }
    const fmq_channel* Raw() const { return fCh; }

  private:
    std::shared_ptr<fmq_channel> fOwned;
    const fmq_channel* fCh = nullptr;
    TransportFactory fTransport;
};

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

namespace detail {
/// The FMQ_OPTION_* type a value of T is set and declared as. The library's float is a C++
/// float and its int a C++ int: wider signed integers and doubles go as text, which keeps every
/// digit (GetProperty<T> reads them back exactly).
template<typename T>
constexpr fmq_option_type OptionType()
{
    return std::is_same<T, bool>::value                                               ? FMQ_OPTION_BOOL
           : std::is_floating_point<T>::value && sizeof(T) <= sizeof(float)           ? FMQ_OPTION_FLOAT
           : std::is_integral<T>::value && std::is_unsigned<T>::value                 ? FMQ_OPTION_UINT64
           : std::is_integral<T>::value && std::is_signed<T>::value && sizeof(T) <= sizeof(int) ? FMQ_OPTION_INT
                                                                                      : FMQ_OPTION_STRING;
}
} // namespace detail

/// A device program's configuration (FairMQ's ProgOptions): the command line, the channel
/// configuration and what devices set. Usable in getDevice(config) and, as fConfig, from Init on.
class ProgOptions {
  public:
    ProgOptions() = default;
    explicit ProgOptions(const fmq_config* cfg) : fCfg(cfg) {}

    /// The value of `key`; throws fair::mq::Error when there is none or it is not a T.
    template<typename T>
    T GetProperty(const std::string& key) const;
    template<typename T>
    T GetProperty(const std::string& key, const T& ifNotFound) const
    {
        return Count(key) ? GetProperty<T>(key) : ifNotFound;
    }
    /// As GetProperty, but a T{} when there is no such key (FairMQ's GetValue).
    template<typename T>
    T GetValue(const std::string& key) const
    {
        return Count(key) ? GetProperty<T>(key) : T{};
    }
    std::string GetPropertyAsString(const std::string& key) const { return Text(key); }
    std::string GetPropertyAsString(const std::string& key, const std::string& ifNotFound) const
    {
        return Count(key) ? Text(key) : ifNotFound;
    }
    /// 1 if the configuration has `key`, else 0.
    int Count(const std::string& key) const { return fCfg ? fmq_config_count(fCfg, key.c_str()) : 0; }
    /// Sets `key` (its subscribers hear of it).
    template<typename T>
    void SetProperty(const std::string& key, const T& value)
    {
        std::ostringstream text;
        text.precision(17);
        text << std::boolalpha << value;
        detail::check(fmq_config_set_property(Cfg(), key.c_str(), detail::OptionType<T>(), text.str().c_str()), "SetProperty");
    }
    /// Every property whose key matches the regular expression `q` (std::regex_search), as text.
    std::map<std::string, std::string> GetPropertiesAsString(const std::string& q) const
    {
        const std::regex re(q);
        std::map<std::string, std::string> out;
        for (auto& k : Keys("")) {
            if (std::regex_search(k, re)) out.emplace(k, Text(k));
        }
        return out;
    }
    /// Every property whose key starts with `prefix`, as text.
    std::map<std::string, std::string> GetPropertiesAsStringStartingWith(const std::string& prefix) const
    {
        std::map<std::string, std::string> out;
        for (auto& k : Keys(prefix)) out.emplace(k, Text(k));
        return out;
    }
    /// Calls `f(key, value)` whenever a property of type T is set (FairMQ's Subscribe), on the
    /// thread that sets it; a subscriber's second subscription replaces its first.
    template<typename T>
    void Subscribe(const std::string& subscriber, std::function<void(const std::string&, T)> f)
    {
        Listen(Key<T>(subscriber), [f](const std::string& key, fmq_option_type ty, const std::string& text) {
            if (ty != detail::OptionType<T>()) return;
            if constexpr (std::is_same<T, std::string>::value) {
                f(key, text);
            } else {
                std::istringstream in(text);
                T v{};
                in >> std::boolalpha >> v;
                if (!in.fail()) f(key, v);
            }
        });
    }
    /// Calls `f(key, value as text)` whenever any property is set.
    void SubscribeAsString(const std::string& subscriber, std::function<void(const std::string&, std::string)> f)
    {
        Listen(subscriber + "\x1f" + "string", [f](const std::string& key, fmq_option_type, const std::string& text) { f(key, text); });
    }
    template<typename T>
    void Unsubscribe(const std::string& subscriber)
    {
        Forget(Key<T>(subscriber));
    }
    void UnsubscribeAsString(const std::string& subscriber) { Forget(subscriber + "\x1f" + "string"); }
    void SetContext(const fmq_context* ctx) { fCfg = fmq_context_config(ctx); }
    void SetConfig(const fmq_config* cfg) { fCfg = cfg; }

  private:
    using Listener = std::function<void(const std::string&, fmq_option_type, const std::string&)>;
    static void OnChange(const char* key, fmq_option_type ty, const char* value, void* user) noexcept
    {
        try {
            (*static_cast<Listener*>(user))(key, ty, value);
        } catch (...) {
            // A subscriber's exception must not cross into the library; FairMQ's would end there too.
        }
    }
    /// A subscription's key in the library: the subscriber and what it listens for, so that one
    /// subscriber can listen for several types and for text, as in FairMQ.
    template<typename T>
    static std::string Key(const std::string& subscriber)
    {
        return subscriber + "\x1f" + typeid(T).name();
    }
    /// No-op once the run ended (a destructor may unsubscribe).
    void Forget(const std::string& key)
    {
        if (fCfg) detail::check(fmq_config_unsubscribe(fCfg, key.c_str()), "Unsubscribe");
    }
    void Listen(const std::string& subscriber, Listener l)
    {
        // Kept for the program's life: a callback may still run on another thread while it is
        // replaced or unsubscribed.
        fListeners->push_back(std::make_unique<Listener>(std::move(l)));
        detail::check(fmq_config_subscribe(Cfg(), subscriber.c_str(), &ProgOptions::OnChange, fListeners->back().get()), "Subscribe");
    }
    std::shared_ptr<std::vector<std::unique_ptr<Listener>>> fListeners = std::make_shared<std::vector<std::unique_ptr<Listener>>>();

    const fmq_config* Cfg() const
    {
        if (!fCfg) throw Error("ProgOptions: no configuration (the program has not parsed its command line yet)");
        return fCfg;
    }
    std::string Text(const std::string& key) const
    {
        const fmq_config* c = Cfg();
        return detail::read_text([&](char* b, size_t l, size_t* n) { return fmq_config_property(c, key.c_str(), b, l, n); });
    }
    std::vector<std::string> Keys(const std::string& prefix) const
    {
        const fmq_config* c = Cfg();
        std::istringstream lines(
            detail::read_text([&](char* b, size_t l, size_t* n) { return fmq_config_keys(c, prefix.c_str(), b, l, n); }));
        std::vector<std::string> keys;
        for (std::string k; std::getline(lines, k);) keys.push_back(k);
        return keys;
    }
    const fmq_config* fCfg = nullptr;
};

template<>
inline std::string ProgOptions::GetProperty<std::string>(const std::string& key) const
{
    return Text(key);
}
namespace detail {
template<typename T>
struct IsVector : std::false_type {};
template<typename T>
struct IsVector<std::vector<T>> : std::true_type {};

/// A property's text read as a T (a vector: one item per line).
template<typename T>
struct FromText {
    static T Read(const std::string& text, const std::string& key)
    {
        std::istringstream in(text);
        T v{};
        in >> std::boolalpha >> v;
        if (in.fail()) throw Error("property '" + key + "' has no value of the requested type");
        return v;
    }
};
template<>
struct FromText<std::string> {
    static std::string Read(const std::string& text, const std::string&) { return text; }
};
template<typename T>
struct FromText<std::vector<T>> {
    static std::vector<T> Read(const std::string& text, const std::string& key)
    {
        std::vector<T> items;
        std::istringstream lines(text);
        for (std::string line; std::getline(lines, line);) items.push_back(FromText<T>::Read(line, key));
        return items;
    }
};
} // namespace detail

template<typename T>
inline T ProgOptions::GetProperty(const std::string& key) const
{
    if constexpr (detail::IsVector<T>::value) {
        const fmq_config* c = Cfg();
        return detail::FromText<T>::Read(
            detail::read_text([&](char* b, size_t l, size_t* n) { return fmq_config_property_lines(c, key.c_str(), b, l, n); }),
            key);
    } else {
        return detail::FromText<T>::Read(Text(key), key);
    }
}

/// Log lines through the fairmq-rs logger: LOG(info) << "text";
class LogLine {
  public:
    explicit LogLine(const char* severity, const char* file = nullptr, int line = 0, const char* function = nullptr)
        : fSeverity(severity)
        , fFile(file)
        , fLine(line)
        , fFunction(function)
    {}
    ~LogLine() { fmq_log_at(fSeverity, fFile, fLine, fFunction, fText.str().c_str()); }
    template<typename T>
    LogLine& operator<<(const T& v)
    {
        fText << v;
        return *this;
    }

  private:
    const char* fSeverity;
    const char* fFile;
    int fLine;
    const char* fFunction;
    std::ostringstream fText;
};

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
    throw Error(std::string("no ") + what + " named '" + name + "'");
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

class Device;

namespace detail {
struct Hooks;
}

/// A device: override the hooks you need (FairMQ's names); register data handlers with OnData.
class Device {
  public:
    Device() : fConfig(&fOptions) {}
    /// The configuration (FairMQ's GetConfig()); set once the device runs (Init on).
    ProgOptions* GetConfig() const { return fConfig; }
    virtual ~Device() = default;

    virtual void Init() {}
    virtual void InitTask() {}
    virtual void PreRun() {}
    virtual bool ConditionalRun() { return false; }
    virtual void Run() {}
    virtual void PostRun() {}
    virtual void ResetTask() {}
    virtual void Reset() {}
    /// BINDING: after the channels that bind are bound.
    virtual void Bind() {}
    /// CONNECTING: after the channels that connect are connected.
    virtual void Connect() {}

    template<typename T>
    void OnData(const std::string& channel, bool (T::*f)(MessagePtr&, int))
    {
        T* self = static_cast<T*>(this);
        fMsgHandlers.emplace(channel, [self, f](MessagePtr& m, int i) { return (self->*f)(m, i); });
        fPending.emplace_back(channel, false);
    }
    template<typename T>
    void OnData(const std::string& channel, bool (T::*f)(Parts&, int))
    {
        T* self = static_cast<T*>(this);
        fPartsHandlers.emplace(channel, [self, f](Parts& p, int i) { return (self->*f)(p, i); });
        fPending.emplace_back(channel, true);
    }
    void OnData(const std::string& channel, std::function<bool(MessagePtr&, int)> f)
    {
        fMsgHandlers.emplace(channel, std::move(f));
        fPending.emplace_back(channel, false);
    }
    void OnData(const std::string& channel, std::function<bool(Parts&, int)> f)
    {
        fPartsHandlers.emplace(channel, std::move(f));
        fPending.emplace_back(channel, true);
    }

    /// Sub-channel `index` of `name`, as FairMQ's: a reference into fChannels, which stays valid
    /// until RESETTING DEVICE.
    unsigned long GetNumberOfConnectedPeers(const std::string& name, int index = 0) const
    {
        return GetChannel(name, index).GetNumberOfConnectedPeers();
    }
    Channel& GetChannel(const std::string& name, int index = 0) const
    {
        auto it = fChannels.find(name);
        if (it == fChannels.end() || index < 0 || static_cast<size_t>(index) >= it->second.size()) {
            throw std::out_of_range("GetChannel(): '" + name + "[" + std::to_string(index) + "]' does not exist.");
        }
        return it->second[static_cast<size_t>(index)];
    }
    size_t GetNumSubChannels(const std::string& name) const { return fmq_context_num_sub_channels(fCtx, name.c_str()); }
    int64_t Send(MessagePtr& m, const std::string& ch, int i = 0, int timeoutMs = -1) const { return GetChannel(ch, i).Send(m, timeoutMs); }
    int64_t Receive(MessagePtr& m, const std::string& ch, int i = 0, int timeoutMs = -1) const { return GetChannel(ch, i).Receive(m, timeoutMs); }
    int64_t Send(Parts& p, const std::string& ch, int i = 0, int timeoutMs = -1) const { return GetChannel(ch, i).Send(p, timeoutMs); }
    int64_t Receive(Parts& p, const std::string& ch, int i = 0, int timeoutMs = -1) const { return GetChannel(ch, i).Receive(p, timeoutMs); }
    MessagePtr NewMessage(size_t size = 0) const { return fair::mq::NewMessage(fmq_context_transport(fCtx), size); }
    MessagePtr NewMessage(void* data, size_t size, fairmq_free_fn* ffn, void* hint = nullptr) const
    {
        return fair::mq::NewMessage(fmq_context_transport(fCtx), data, size, ffn, hint);
    }
    MessagePtr NewMessageFor(const std::string& ch, int i, size_t size = 0) const { return GetChannel(ch, i).NewMessage(size); }
    MessagePtr NewMessageFor(const std::string& ch, int i, void* data, size_t size, fairmq_free_fn* ffn, void* hint = nullptr) const
    {
        return GetChannel(ch, i).NewMessage(data, size, ffn, hint);
    }
    /// A message of channel ch[i]'s transport referring to `size` bytes at `data` inside `region`.
    MessagePtr NewMessageFor(const std::string& ch, int i, const UnmanagedRegionPtr& region, void* data, size_t size, void* hint = nullptr) const
    {
        return fair::mq::NewMessage(fmq_channel_transport(GetChannel(ch, i).Raw()), region, data, size, hint);
    }
    /// An unmanaged region of channel ch[i]'s transport (see UnmanagedRegion for the callbacks).
    UnmanagedRegionPtr NewUnmanagedRegionFor(const std::string& ch, int i, size_t size, RegionCallback callback, const RegionConfig& cfg = RegionConfig()) const
    {
        return std::make_unique<UnmanagedRegion>(fmq_channel_transport(GetChannel(ch, i).Raw()), size, std::move(callback), cfg);
    }
    UnmanagedRegionPtr NewUnmanagedRegionFor(const std::string& ch, int i, size_t size, RegionBulkCallback callback, const RegionConfig& cfg = RegionConfig()) const
    {
        return std::make_unique<UnmanagedRegion>(fmq_channel_transport(GetChannel(ch, i).Raw()), size, std::move(callback), cfg);
    }
    /// A poller over every sub-channel of the named channels: CheckInput(name, j) as in FairMQ.
    template<typename... Names>
    PollerPtr NewPoller(const std::string& name, const Names&... more) const
    {
        return NewPoller(std::vector<std::string>{name, more...});
    }
    PollerPtr NewPoller(const std::vector<std::string>& names) const
    {
        std::vector<const fmq_channel*> channels;
        std::map<std::string, size_t> offsets;
        for (auto& n : names) {
            offsets[n] = channels.size();
            size_t subs = GetNumSubChannels(n);
            if (subs == 0) throw std::out_of_range("NewPoller(): channel '" + n + "' does not exist.");
            for (size_t j = 0; j < subs; ++j) channels.push_back(GetChannel(n, static_cast<int>(j)).Raw());
        }
        return std::make_unique<Poller>(channels, std::move(offsets));
    }
    /// The device's default transport (borrowed), as FairMQ's Transport().
    const TransportFactory* Transport() const
    {
        fTransport = TransportFactory(fmq_context_transport(fCtx));
        return &fTransport;
    }
    template<typename T>
    MessagePtr NewSimpleMessage(const T& v) const
    {
        return Transport()->NewSimpleMessage(v);
    }
    MessagePtr NewStaticMessage(const std::string& s) const { return Transport()->NewStaticMessage(s); }
    bool NewStatePending() const { return fStates ? fmq_states_new_state_pending(fStates) : fmq_context_new_state_pending(fCtx); }

    // FairMQ's state API: usable from any thread once the device runs (Init on).
    State GetCurrentState() const { return static_cast<State>(fmq_states_current(States())); }
    std::string GetCurrentStateName() const { return GetStateName(GetCurrentState()); }
    static std::string GetStateName(State s) { return ::fair::mq::GetStateName(s); }
    static std::string GetTransitionName(Transition t) { return ::fair::mq::GetTransitionName(t); }
    /// Requests `t`; whether the current state accepts it.
    bool ChangeState(Transition t) { return fmq_states_change(States(), static_cast<int32_t>(t)); }
    bool ChangeState(const std::string& t) { return ChangeState(GetTransition(t)); }
    void ChangeStateOrThrow(Transition t)
    {
        if (!ChangeState(t)) throw Error("could not change state with transition " + GetTransitionName(t) + " from " + GetCurrentStateName());
    }
    void ChangeStateOrThrow(const std::string& t) { ChangeStateOrThrow(GetTransition(t)); }
    /// The next state the device enters after the last one this returned (states are queued from
    /// Init on).
    State WaitForNextState()
    {
        std::unique_lock<std::mutex> lock(fStateMutex);
        fStateChanged.wait(lock, [this] { return !fStateQueue.empty(); });
        State s = fStateQueue.front();
        fStateQueue.pop_front();
        return s;
    }
    /// Returns once the device entered `s` (or entered it since the last wait).
    void WaitForState(State s)
    {
        while (WaitForNextState() != s) {
        }
    }
    void WaitForState(const std::string& s) { WaitForState(GetState(s)); }
    /// Calls `callback` on the state machine's thread for every state entered from now on.
    void SubscribeToStateChange(const std::string& key, std::function<void(const State)> callback)
    {
        std::lock_guard<std::mutex> lock(fStateMutex);
        fStateSubscribers[key] = std::move(callback);
    }
    void UnsubscribeFromStateChange(const std::string& key)
    {
        std::lock_guard<std::mutex> lock(fStateMutex);
        fStateSubscribers.erase(key);
    }
    template<typename Rep, typename Period>
    bool WaitFor(std::chrono::duration<Rep, Period> d) const
    {
        return fmq_context_wait_for(fCtx, static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()));
    }
    std::string GetId() const
    {
        return detail::read_text([&](char* b, size_t l, size_t* n) { return fmq_context_id(fCtx, b, l, n); });
    }

  protected:
    ProgOptions* fConfig;

  public:
    /// FairMQ's members: the device id (from Init on), its channels by name (from Init on, until
    /// RESETTING DEVICE), and its default transport (from InitTask on).
    std::string fId;
    mutable std::unordered_map<std::string, std::vector<Channel>> fChannels;
    std::shared_ptr<TransportFactory> fTransportFactory;

  private:
    /// Reads the device's channels (and its transport, once there is one) into the members, from
    /// a hook (its context is valid there only). Channels already known are updated in place, so
    /// references to them stay valid; new ones are added.
    void RefreshChannels() const
    {
        std::istringstream names(
            detail::read_text([&](char* b, size_t l, size_t* n) { return fmq_context_channel_names(fCtx, b, l, n); }));
        for (std::string name; std::getline(names, name);) {
            auto& subs = fChannels[name];
            const size_t n = fmq_context_num_sub_channels(fCtx, name.c_str());
            for (size_t i = 0; i < n; ++i) {
                const fmq_channel* c = fmq_context_channel(fCtx, name.c_str(), i);
                if (!c) break;
                if (i < subs.size()) {
                    if (subs[i].Raw() != c) subs[i] = Channel(c);
                } else {
                    subs.emplace_back(c);
                }
            }
        }
    }
    void Refresh()
    {
        RefreshChannels();
        if (!fTransportFactory) {
            if (const fmq_transport* t = fmq_context_transport(fCtx)) fTransportFactory = std::make_shared<TransportFactory>(t);
        }
    }

  private:
    friend struct detail::Hooks;
    ProgOptions fOptions;
    const fmq_context* fCtx = nullptr;

  private:
    const fmq_states* States() const
    {
        if (!fStates) throw Error("the device's state machine is not running yet (available from Init on)");
        return fStates;
    }
    /// The first hook: follows the state machine from now on (the state queue, subscribers).
    void AttachStates(const fmq_states* states)
    {
        fStates = states;
        detail::check(fmq_states_subscribe(states, "fairmq-rs C++ device", &Device::OnStateChange, this), "SubscribeToStateChange");
        std::lock_guard<std::mutex> lock(fStateMutex);
        fStateQueue.push_back(GetCurrentState());
        fStateChanged.notify_all();
    }
    static void OnStateChange(int32_t state, void* user) noexcept
    {
        auto* d = static_cast<Device*>(user);
        try {
            std::map<std::string, std::function<void(const State)>> subscribers;
            {
                std::lock_guard<std::mutex> lock(d->fStateMutex);
                d->fStateQueue.push_back(static_cast<State>(state));
                subscribers = d->fStateSubscribers;
            }
            d->fStateChanged.notify_all();
            for (auto& s : subscribers) s.second(static_cast<State>(state));
        } catch (const std::exception& e) {
            LogLine("error") << "state change subscriber: " << e.what();
        } catch (...) {
            LogLine("error") << "state change subscriber: an exception that is no std::exception";
        }
    }
    const fmq_states* fStates = nullptr;
    std::mutex fStateMutex;
    std::condition_variable fStateChanged;
    std::deque<State> fStateQueue;
    std::map<std::string, std::function<void(const State)>> fStateSubscribers;

  protected:
    mutable TransportFactory fTransport{nullptr};
    std::map<std::string, std::function<bool(MessagePtr&, int)>> fMsgHandlers;
    std::map<std::string, std::function<bool(Parts&, int)>> fPartsHandlers;
    std::vector<std::pair<std::string, bool>> fPending;
};

namespace detail {
/// C hooks that call the Device's virtual functions; exceptions become errors (device -> ERROR).
struct Hooks {
    static Device* Dev(const fmq_context* ctx, void* user)
    {
        auto* d = static_cast<Device*>(user);
        d->fCtx = ctx;
        d->fOptions.SetContext(ctx);
        if (!d->fStates) d->AttachStates(fmq_context_states(ctx));
        return d;
    }
    static void Register(Device* d)
    {
        for (auto& p : d->fPending) {
            detail::check(p.second ? fmq_context_on_data_parts(d->fCtx, p.first.c_str())
                                   : fmq_context_on_data(d->fCtx, p.first.c_str()),
                          "OnData");
        }
        d->fPending.clear();
    }
    template<typename F>
    static int32_t Guarded(const char* name, F f)
    {
        try {
            return f();
        } catch (const std::exception& e) {
            fmq_log("error", (std::string(name) + ": " + e.what()).c_str());
        } catch (...) {
            fmq_log("error", (std::string(name) + ": unknown exception").c_str());
        }
        return -1;
    }
    static int32_t Init(const fmq_context* c, void* u)
    {
        return Guarded("Init", [&] {
            Device* d = Dev(c, u);
            d->fId = d->fOptions.GetPropertyAsString("id", "");
            d->Refresh();
            Register(d);
            d->Init();
            Register(d);
            return 0;
        });
    }
    static int32_t Bind(const fmq_context* c, void* u)
    {
        return Guarded("Bind", [&] { Device* d = Dev(c, u); d->Refresh(); d->Bind(); return 0; });
    }
    static int32_t Connect(const fmq_context* c, void* u)
    {
        return Guarded("Connect", [&] { Device* d = Dev(c, u); d->Refresh(); d->Connect(); return 0; });
    }
    static int32_t InitTask(const fmq_context* c, void* u)
    {
        return Guarded("InitTask", [&] {
            Device* d = Dev(c, u);
            d->Refresh();
            d->InitTask();
            Register(d);
            return 0;
        });
    }
    static int32_t PreRun(const fmq_context* c, void* u) { return Guarded("PreRun", [&] { Dev(c, u)->PreRun(); return 0; }); }
    static int32_t ConditionalRun(const fmq_context* c, void* u)
    {
        return Guarded("ConditionalRun", [&] { return Dev(c, u)->ConditionalRun() ? 1 : 0; });
    }
    static int32_t Run(const fmq_context* c, void* u) { return Guarded("Run", [&] { Dev(c, u)->Run(); return 0; }); }
    static int32_t PostRun(const fmq_context* c, void* u) { return Guarded("PostRun", [&] { Dev(c, u)->PostRun(); return 0; }); }
    static int32_t ResetTask(const fmq_context* c, void* u) { return Guarded("ResetTask", [&] { Dev(c, u)->ResetTask(); return 0; }); }
    static int32_t Reset(const fmq_context* c, void* u)
    {
        return Guarded("Reset", [&] {
            Device* d = Dev(c, u);
            d->Reset();
            d->fChannels.clear(); // the channels go with RESETTING DEVICE
            d->fTransportFactory.reset();
            return 0;
        });
    }
    static int32_t Data(const fmq_context* c, const char* ch, fmq_message* m, int32_t i, void* u)
    {
        return Guarded("HandleData", [&] {
            Device* d = Dev(c, u);
            // The handler owns its message, as in FairMQ: it may keep it (std::move) beyond the call.
            fmq_message* owned = nullptr;
            detail::check(fmq_message_take(m, &owned), "taking the received message");
            MessagePtr msg = std::make_unique<Message>(owned, true);
            return d->fMsgHandlers.at(ch)(msg, i) ? 1 : 0;
        });
    }
    static int32_t PartsData(const fmq_context* c, const char* ch, fmq_parts* p, int32_t i, void* u)
    {
        return Guarded("HandleData", [&] {
            Device* d = Dev(c, u);
            Parts parts;
            detail::TakeParts(p, parts);
            return d->fPartsHandlers.at(ch)(parts, i) ? 1 : 0;
        });
    }
    /// The run ended: the context, configuration and state machine are gone.
    static void Detach(Device& d)
    {
        d.fCtx = nullptr;
        d.fStates = nullptr;
        d.fOptions.SetConfig(nullptr);
    }
    static fmq_device_hooks Table(const Device& d)
    {
        fmq_device_hooks h{};
        h.init = Init;
        h.init_task = InitTask;
        h.pre_run = PreRun;
        h.run = Run;
        h.post_run = PostRun;
        h.reset_task = ResetTask;
        h.reset = Reset;
        h.bind = Bind;
        h.connect = Connect;
        h.conditional_run = ConditionalRun;
        (void)d;
        h.handle_data = Data; // called only for channels registered with OnData
        h.handle_parts = PartsData;
        return h;
    }
};
} // namespace detail

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

/// FairLogger's LOG(severity): the line names its file, line and function (shown at verbosity veryhigh).
#define LOG(severity) ::fair::mq::LogLine(#severity, __FILE__, __LINE__, static_cast<const char*>(__func__))

#endif
