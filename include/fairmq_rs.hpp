// fairmq-rs C++ API: header-only RAII types with FairMQ's names over the C ABI (fairmq_rs.h).
//
// Porting a C++ FairMQ device is mostly a change of includes:
//   #include <fairmq/Device.h>     ->  #include <fairmq_rs.hpp>
//   #include <fairmq/runDevice.h>  ->  #include <fairmq_rs_run_device.hpp>
// The subset of boost::program_options that addCustomOptions uses is provided, so that
// `options.add_options()("name", bpo::value<int>()->default_value(1), "help")` keeps working.
//
// Thread safety follows the C ABI: transports are thread-safe, everything else is used by one
// thread at a time; a device's hooks all run on its state-loop thread.
#ifndef FAIRMQ_RS_HPP
#define FAIRMQ_RS_HPP

#include "fairmq_rs.h"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
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
    char buf[512];
    size_t n = 0;
    fmq_last_error(buf, sizeof buf, &n);
    return std::string(buf, n < sizeof buf ? n : sizeof buf - 1);
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
    if (f(buf.data(), buf.size(), &n) == FMQ_ERROR_BUFFER) {
        buf.resize(n + 1);
        detail::check(f(buf.data(), buf.size(), &n), "reading text");
    }
    return std::string(buf.data(), n);
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
        fOwned = std::shared_ptr<fmq_transport>(t, fmq_transport_free);
        fRaw = t;
    }
    explicit TransportFactory(const fmq_transport* borrowed) : fRaw(borrowed) {}
    const fmq_transport* Raw() const { return fRaw; }
    void Interrupt() const { fmq_transport_interrupt(fRaw); }
    void Resume() const { fmq_transport_resume(fRaw); }

  private:
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
using MessagePtr = std::unique_ptr<Message>;

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

/// The parts of a multipart message.
class Parts {
  public:
    Parts() : fParts(fmq_parts_new()), fOwned(true) {}
    Parts(fmq_parts* borrowed, bool owned) : fParts(borrowed), fOwned(owned) { Refresh(); }
    ~Parts()
    {
        fViews.clear();
        if (fOwned) fmq_parts_free(fParts);
    }
    Parts(const Parts&) = delete;
    Parts& operator=(const Parts&) = delete;

    void AddPart(MessagePtr&& m)
    {
        if (!m->Owned()) throw Error("AddPart: only owned messages can be added");
        detail::check(fmq_parts_add(fParts, m->Release()), "AddPart");
        m.reset();
        Refresh();
    }
    size_t Size() const { return fmq_parts_size(fParts); }
    bool Empty() const { return Size() == 0; }
    MessagePtr& At(size_t i)
    {
        if (i >= fViews.size()) throw std::out_of_range("Parts::At");
        return fViews[i];
    }
    Message& operator[](size_t i) { return *fViews[i]; }
    void Clear()
    {
        detail::check(fmq_parts_clear(fParts), "Clear");
        Refresh();
    }
    fmq_parts* Raw() const { return fParts; }
    /// Re-reads the parts after the C side changed them (receive appends).
    void Refresh()
    {
        fViews.clear();
        for (size_t i = 0; i < Size(); ++i) fViews.push_back(std::make_unique<Message>(fmq_parts_at(fParts, i), false));
    }

  private:
    fmq_parts* fParts;
    bool fOwned;
    std::vector<MessagePtr> fViews;
};

/// A sub-channel (borrowed from the device, or owned when made directly).
class Channel {
  public:
    explicit Channel(const fmq_channel* borrowed) : fCh(borrowed) {}
    Channel(const TransportFactory& t, const std::string& spec)
    {
        fmq_channel* c = nullptr;
        detail::check(fmq_channel_new(t.Raw(), spec.c_str(), &c), "fmq_channel_new");
        fOwned = std::shared_ptr<fmq_channel>(c, fmq_channel_free);
        fCh = c;
    }
    int64_t Send(MessagePtr& m, int timeoutMs = -1) const { return fmq_channel_send(fCh, m->Raw(), timeoutMs); }
    int64_t Receive(MessagePtr& m, int timeoutMs = -1) const { return fmq_channel_receive(fCh, m->Raw(), timeoutMs); }
    int64_t Send(Parts& p, int timeoutMs = -1) const
    {
        auto r = fmq_channel_send_parts(fCh, p.Raw(), timeoutMs);
        p.Refresh();
        return r;
    }
    int64_t Receive(Parts& p, int timeoutMs = -1) const
    {
        auto r = fmq_channel_receive_parts(fCh, p.Raw(), timeoutMs);
        p.Refresh();
        return r;
    }
    MessagePtr NewMessage(size_t size = 0) const { return fair::mq::NewMessage(fmq_channel_transport(fCh), size); }
    std::string GetAddress() const
    {
        return detail::read_text([&](char* b, size_t l, size_t* n) { return fmq_channel_address(fCh, b, l, n); });
    }
    fmq_counters Counters() const
    {
        fmq_counters c{};
        fmq_channel_counters(fCh, &c);
        return c;
    }
    uint64_t GetMessagesTx() const { return Counters().messages_tx; }
    uint64_t GetMessagesRx() const { return Counters().messages_rx; }
    uint64_t GetBytesTx() const { return Counters().bytes_tx; }
    uint64_t GetBytesRx() const { return Counters().bytes_rx; }
    const fmq_channel* Raw() const { return fCh; }

  private:
    std::shared_ptr<fmq_channel> fOwned;
    const fmq_channel* fCh = nullptr;
};

/// The configuration (FairMQ's ProgOptions) as seen from a running device.
class ProgOptions {
  public:
    template<typename T>
    T GetProperty(const std::string& key) const;
    template<typename T>
    T GetProperty(const std::string& key, const T& ifNotFound) const
    {
        try {
            return GetProperty<T>(key);
        } catch (const Error&) {
            return ifNotFound;
        }
    }
    void SetContext(const fmq_context* ctx) { fCtx = ctx; }

  private:
    std::string Text(const std::string& key) const
    {
        if (!fCtx) throw Error("ProgOptions: no running device");
        return detail::read_text([&](char* b, size_t l, size_t* n) { return fmq_context_property(fCtx, key.c_str(), b, l, n); });
    }
    const fmq_context* fCtx = nullptr;
};

template<>
inline std::string ProgOptions::GetProperty<std::string>(const std::string& key) const
{
    return Text(key);
}
template<typename T>
inline T ProgOptions::GetProperty(const std::string& key) const
{
    std::istringstream in(Text(key));
    T v{};
    in >> std::boolalpha >> v;
    if (in.fail()) throw Error("property '" + key + "' has no value of the requested type");
    return v;
}

/// Log lines through the fairmq-rs logger: LOG(info) << "text";
class LogLine {
  public:
    explicit LogLine(const char* severity) : fSeverity(severity) {}
    ~LogLine() { fmq_log(fSeverity, fText.str().c_str()); }
    template<typename T>
    LogLine& operator<<(const T& v)
    {
        fText << v;
        return *this;
    }

  private:
    const char* fSeverity;
    std::ostringstream fText;
};

class Device;

namespace detail {
struct Hooks;
}

/// A device: override the hooks you need (FairMQ's names); register data handlers with OnData.
class Device {
  public:
    Device() : fConfig(&fOptions) {}
    virtual ~Device() = default;

    virtual void Init() {}
    virtual void InitTask() {}
    virtual void PreRun() {}
    virtual bool ConditionalRun() { return false; }
    virtual void Run() {}
    virtual void PostRun() {}
    virtual void ResetTask() {}
    virtual void Reset() {}

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

    Channel GetChannel(const std::string& name, int index = 0) const
    {
        const fmq_channel* c = fmq_context_channel(fCtx, name.c_str(), static_cast<size_t>(index));
        if (!c) throw std::out_of_range("GetChannel(): '" + name + "[" + std::to_string(index) + "]' does not exist.");
        return Channel(c);
    }
    size_t GetNumSubChannels(const std::string& name) const { return fmq_context_num_sub_channels(fCtx, name.c_str()); }
    int64_t Send(MessagePtr& m, const std::string& ch, int i = 0, int timeoutMs = -1) const { return GetChannel(ch, i).Send(m, timeoutMs); }
    int64_t Receive(MessagePtr& m, const std::string& ch, int i = 0, int timeoutMs = -1) const { return GetChannel(ch, i).Receive(m, timeoutMs); }
    int64_t Send(Parts& p, const std::string& ch, int i = 0, int timeoutMs = -1) const { return GetChannel(ch, i).Send(p, timeoutMs); }
    int64_t Receive(Parts& p, const std::string& ch, int i = 0, int timeoutMs = -1) const { return GetChannel(ch, i).Receive(p, timeoutMs); }
    MessagePtr NewMessage(size_t size = 0) const { return fair::mq::NewMessage(fmq_context_transport(fCtx), size); }
    MessagePtr NewMessageFor(const std::string& ch, int i, size_t size = 0) const { return GetChannel(ch, i).NewMessage(size); }
    template<typename T>
    MessagePtr NewSimpleMessage(const T& v) const
    {
        return fair::mq::NewSimpleMessage(fmq_context_transport(fCtx), &v, sizeof(T));
    }
    MessagePtr NewSimpleMessage(const std::string& s) const { return fair::mq::NewSimpleMessage(fmq_context_transport(fCtx), s.data(), s.size()); }
    bool NewStatePending() const { return fmq_context_new_state_pending(fCtx); }
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

  private:
    friend struct detail::Hooks;
    ProgOptions fOptions;
    const fmq_context* fCtx = nullptr;
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
        return d;
    }
    static void Register(Device* d)
    {
        for (auto& p : d->fPending) {
            p.second ? fmq_context_on_data_parts(d->fCtx, p.first.c_str()) : fmq_context_on_data(d->fCtx, p.first.c_str());
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
        return Guarded("Init", [&] { Device* d = Dev(c, u); Register(d); d->Init(); Register(d); return 0; });
    }
    static int32_t InitTask(const fmq_context* c, void* u)
    {
        return Guarded("InitTask", [&] { Device* d = Dev(c, u); d->InitTask(); Register(d); return 0; });
    }
    static int32_t PreRun(const fmq_context* c, void* u) { return Guarded("PreRun", [&] { Dev(c, u)->PreRun(); return 0; }); }
    static int32_t ConditionalRun(const fmq_context* c, void* u)
    {
        return Guarded("ConditionalRun", [&] { return Dev(c, u)->ConditionalRun() ? 1 : 0; });
    }
    static int32_t Run(const fmq_context* c, void* u) { return Guarded("Run", [&] { Dev(c, u)->Run(); return 0; }); }
    static int32_t PostRun(const fmq_context* c, void* u) { return Guarded("PostRun", [&] { Dev(c, u)->PostRun(); return 0; }); }
    static int32_t ResetTask(const fmq_context* c, void* u) { return Guarded("ResetTask", [&] { Dev(c, u)->ResetTask(); return 0; }); }
    static int32_t Reset(const fmq_context* c, void* u) { return Guarded("Reset", [&] { Dev(c, u)->Reset(); return 0; }); }
    static int32_t Data(const fmq_context* c, const char* ch, fmq_message* m, int32_t i, void* u)
    {
        return Guarded("HandleData", [&] {
            Device* d = Dev(c, u);
            MessagePtr msg = std::make_unique<Message>(m, false);
            return d->fMsgHandlers.at(ch)(msg, i) ? 1 : 0;
        });
    }
    static int32_t PartsData(const fmq_context* c, const char* ch, fmq_parts* p, int32_t i, void* u)
    {
        return Guarded("HandleData", [&] {
            Device* d = Dev(c, u);
            Parts parts(p, false);
            return d->fPartsHandlers.at(ch)(parts, i) ? 1 : 0;
        });
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
        h.conditional_run = ConditionalRun;
        (void)d;
        h.handle_data = Data; // called only for channels registered with OnData
        h.handle_parts = PartsData;
        return h;
    }
};
} // namespace detail

} // namespace mq
} // namespace fair

#define LOG(severity) ::fair::mq::LogLine(#severity)

/// The part of boost::program_options that FairMQ devices' addCustomOptions use.
namespace boost {
namespace program_options {

struct value_semantic {
    virtual ~value_semantic() = default;
    fmq_option_type type = FMQ_OPTION_STRING;
    bool has_default = false;
    std::string default_text;
};

template<typename T>
struct typed_value : value_semantic {
    typed_value()
    {
        if (std::is_same<T, bool>::value) type = FMQ_OPTION_BOOL;
        else if (std::is_floating_point<T>::value) type = FMQ_OPTION_FLOAT;
        else if (std::is_integral<T>::value && std::is_unsigned<T>::value) type = FMQ_OPTION_UINT64;
        else if (std::is_integral<T>::value) type = FMQ_OPTION_INT;
    }
    typed_value* default_value(const T& v)
    {
        std::ostringstream o;
        o << std::boolalpha << v;
        default_text = o.str();
        has_default = true;
        return this;
    }
    typed_value* required() { return this; }
};

template<typename T>
typed_value<T>* value()
{
    return new typed_value<T>();
}

class options_description {
  public:
    struct Option {
        std::string name, description;
        std::unique_ptr<value_semantic> value;
    };
    class init {
      public:
        explicit init(options_description* d) : fD(d) {}
        init& operator()(const char* name, value_semantic* v, const char* description)
        {
            fD->fOptions.push_back(Option{name, description, std::unique_ptr<value_semantic>(v)});
            return *this;
        }
        init& operator()(const char* name, const char* description)
        {
            fD->fOptions.push_back(Option{name, description, std::unique_ptr<value_semantic>(new typed_value<bool>())});
            return *this;
        }

      private:
        options_description* fD;
    };
    explicit options_description(const std::string& caption = "") : fCaption(caption) {}
    init add_options() { return init(this); }
    const std::vector<Option>& options() const { return fOptions; }

  private:
    std::string fCaption;
    std::vector<Option> fOptions;
};

} // namespace program_options
} // namespace boost

#endif
