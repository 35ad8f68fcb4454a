// fairmq-rs C++ API: channels (FairMQ's fair::mq::Channel and its Socket). Part of fairmq_rs.hpp,
// which includes it after the message, transport and multipart types it uses.
//
// A Channel is first a configuration (type, method, address, sizes, ...) that Validate() checks as
// FairMQ does. Made with a transport (Channel(name, type, factory)) it has a socket at once, whose
// options can be set before Bind(address) or Connect(address). A device's sub-channels are
// Channels over the device's own sockets (borrowed: valid until RESETTING DEVICE).
#pragma once

namespace fair {
namespace mq {

/// A channel's socket (FairMQ's Socket, as Channel::GetSocket() gives it): its options, peers and
/// counters. Options can be set only on a socket the program made (Channel(name, type, factory)).
class Socket {
  public:
    Socket() = default;
    Socket(fmq_channel* owned, const fmq_channel* raw) : fOwned(owned), fRaw(raw) {}

    /// FairMQ's option names: "linger" (ms), "snd-hwm"/"rcv-hwm" (queue lengths in messages),
    /// "snd-size"/"rcv-size" (kernel buffers in bytes); values are ints.
    void SetOption(const std::string& option, const void* value, size_t valueSize)
    {
        if (!value || valueSize != sizeof(int)) throw SocketError("SetOption(" + option + "): the value must be an int");
        int v = 0;
        std::memcpy(&v, value, sizeof v);
        Set(option, v);
    }
    void GetOption(const std::string& option, void* value, size_t* valueSize) const
    {
        if (!value || !valueSize || *valueSize < sizeof(int)) throw SocketError("GetOption(" + option + "): room for an int is needed");
        const int v = Get(option);
        std::memcpy(value, &v, sizeof v);
        *valueSize = sizeof v;
    }
    void SetLinger(int value) { Set("linger", value); }
    int GetLinger() const { return Get("linger"); }
    void SetSndBufSize(int value) { Set("snd-hwm", value); }
    int GetSndBufSize() const { return Get("snd-hwm"); }
    void SetRcvBufSize(int value) { Set("rcv-hwm", value); }
    int GetRcvBufSize() const { return Get("rcv-hwm"); }
    void SetSndKernelSize(int value) { Set("snd-size", value); }
    int GetSndKernelSize() const { return Get("snd-size"); }
    void SetRcvKernelSize(int value) { Set("rcv-size", value); }
    int GetRcvKernelSize() const { return Get("rcv-size"); }

    unsigned long GetNumberOfConnectedPeers() const { return fRaw ? fmq_channel_connected_peers(fRaw) : 0; }
    unsigned long GetBytesTx() const { return Counters().bytes_tx; }
    unsigned long GetBytesRx() const { return Counters().bytes_rx; }
    unsigned long GetMessagesTx() const { return Counters().messages_tx; }
    unsigned long GetMessagesRx() const { return Counters().messages_rx; }

  private:
    void Set(const std::string& option, int value)
    {
        if (!fOwned) throw SocketError("SetOption(" + option + "): the socket is not the program's own");
        if (fmq_channel_set_option(fOwned, option.c_str(), value) != FMQ_OK) {
            throw SocketError("SetOption(" + option + "): " + detail::last_error());
        }
    }
    int Get(const std::string& option) const
    {
        int v = 0;
        if (!fRaw || fmq_channel_get_option(fRaw, option.c_str(), &v) != FMQ_OK) {
            throw SocketError("GetOption(" + option + "): " + (fRaw ? detail::last_error() : "no socket"));
        }
        return v;
    }
    fmq_counters Counters() const
    {
        fmq_counters c{};
        c.struct_size = sizeof(fmq_counters);
        if (fRaw) detail::check(fmq_channel_counters(fRaw, &c), "Counters");
        return c;
    }
    fmq_channel* fOwned = nullptr;
    const fmq_channel* fRaw = nullptr;
};

/// A channel (FairMQ's fair::mq::Channel): a configuration, and a socket once it has a transport.
class Channel {
  public:
    /// Thrown by Validate() for a configuration that can never work.
    struct ChannelConfigurationError : std::runtime_error {
        using std::runtime_error::runtime_error;
    };

    Channel() : Channel("", "unspecified", "unspecified", "unspecified", nullptr) {}
    explicit Channel(const std::string& name) : Channel(name, "unspecified", "unspecified", "unspecified", nullptr) {}
    Channel(const std::string& type, const std::string& method, const std::string& address)
        : Channel("", type, method, address, nullptr)
    {}
    /// With a socket of `factory` at once (not bound nor connected: see Bind and Connect).
    Channel(const std::string& name, const std::string& type, std::shared_ptr<TransportFactory> factory)
        : Channel(name, type, "unspecified", "unspecified", std::move(factory))
    {}
    Channel(std::string name, std::string type, std::string method, std::string address,
            std::shared_ptr<TransportFactory> factory)
        : fName(std::move(name))
        , fType(std::move(type))
        , fMethod(std::move(method))
        , fAddress(std::move(address))
        , fFactory(std::move(factory))
    {
        if (fFactory) {
            fTransportName = fFactory->GetType() == Transport::SHM ? "shmem" : "zeromq";
            fmq_channel* c = nullptr;
            detail::check(fmq_channel_create(fFactory->Raw(), Spec(false).c_str(), &c), "Channel");
            fOwned = std::shared_ptr<fmq_channel>(c, fmq_channel_free);
            fCh = c;
            fSocket = Socket(c, c);
            fTransport = TransportFactory(fFactory->Raw());
        }
    }
    /// A channel of `t` from one --channel-config token (fairmq-rs), bound or connected at once:
    /// `name=data,type=push,method=bind,address=tcp://127.0.0.1:5555,sndBufSize=100`.
    Channel(const TransportFactory& t, const std::string& spec) : fTransport(t)
    {
        fmq_channel* c = nullptr;
        detail::check(fmq_channel_new(t.Raw(), spec.c_str(), &c), "fmq_channel_new");
        fOwned = std::shared_ptr<fmq_channel>(c, fmq_channel_free);
        fCh = c;
        fSocket = Socket(c, c);
        fName = detail::read_text([&](char* b, size_t l, size_t* n) { return fmq_channel_name(c, b, l, n); });
        fAddress = detail::read_text([&](char* b, size_t l, size_t* n) { return fmq_channel_address(c, b, l, n); });
        fValid = true;
    }
    /// A device's sub-channel (borrowed from the device while it runs).
    explicit Channel(const fmq_channel* borrowed)
        : fName(detail::read_text([&](char* b, size_t l, size_t* n) { return fmq_channel_name(borrowed, b, l, n); }))
        , fType("unspecified")
        , fMethod("unspecified")
        , fAddress(detail::read_text([&](char* b, size_t l, size_t* n) { return fmq_channel_address(borrowed, b, l, n); }))
        , fCh(borrowed)
        , fSocket(nullptr, borrowed)
        , fTransport(fmq_channel_transport(borrowed))
        , fValid(true)
    {}
    /// A copy shares the socket (the last copy closes it); it is to be validated again, as in
    /// FairMQ (whose copies have no socket).
    Channel(const Channel& o) { CopyConfiguration(o); }
    Channel& operator=(const Channel& o)
    {
        if (this != &o) {
            *this = Channel();
            CopyConfiguration(o);
        }
        return *this;
    }
    Channel(Channel&&) = default;
    Channel& operator=(Channel&&) = default;
    ~Channel() = default;

    Socket& GetSocket() const
    {
        if (!fCh) throw SocketError("channel '" + fName + "' has no socket (make it with a transport)");
        return fSocket;
    }
    /// Binds the socket to `address` (endpoints separated by ';'); whether it did.
    bool Bind(const std::string& address) { return Attach("bind", address); }
    /// Connects the socket to `address`; whether it did.
    bool Connect(const std::string& address) { return Attach("connect", address); }

    std::string GetName() const { return fName; }
    /// The name before its index: "data" of "data[0]".
    std::string GetPrefix() const { return fName.substr(0, fName.rfind('[')); }
    std::string GetIndex() const
    {
        const auto open = fName.rfind('[');
        const auto close = fName.rfind(']');
        return open == std::string::npos || close < open ? "" : fName.substr(open + 1, close - open - 1);
    }
    std::string GetType() const { return fType; }
    std::string GetMethod() const { return fMethod; }
    std::string GetAddress() const { return fAddress; }
    std::string GetTransportName() const { return fTransportName; }
    int GetSndBufSize() const { return fSndBufSize; }
    int GetRcvBufSize() const { return fRcvBufSize; }
    int GetSndKernelSize() const { return fSndKernelSize; }
    int GetRcvKernelSize() const { return fRcvKernelSize; }
    int GetSndTimeout() const { return fSndTimeoutMs; }
    int GetRcvTimeout() const { return fRcvTimeoutMs; }
    int GetLinger() const { return fLinger; }
    int GetRateLogging() const { return fRateLogging; }
    int GetPortRangeMin() const { return fPortRangeMin; }
    int GetPortRangeMax() const { return fPortRangeMax; }
    bool GetAutoBind() const { return fAutoBind; }
    unsigned long GetNumberOfConnectedPeers() const { return fCh ? fmq_channel_connected_peers(fCh) : 0; }

    // Each change invalidates the channel until it is validated again (FairMQ's).
    void UpdateName(const std::string& name) { Change(fName, name); }
    void UpdateType(const std::string& type) { Change(fType, type); }
    void UpdateMethod(const std::string& method) { Change(fMethod, method); }
    void UpdateAddress(const std::string& address) { Change(fAddress, address); }
    void UpdateTransport(const std::string& transport) { Change(fTransportName, transport); }
    void UpdateSndBufSize(int v) { Change(fSndBufSize, v); }
    void UpdateRcvBufSize(int v) { Change(fRcvBufSize, v); }
    void UpdateSndKernelSize(int v) { Change(fSndKernelSize, v); }
    void UpdateRcvKernelSize(int v) { Change(fRcvKernelSize, v); }
    void UpdateSndTimeout(int v) { Change(fSndTimeoutMs, v); }
    void UpdateRcvTimeout(int v) { Change(fRcvTimeoutMs, v); }
    void UpdateLinger(int v) { Change(fLinger, v); }
    void UpdateRateLogging(int v) { Change(fRateLogging, v); }
    void UpdatePortRangeMin(int v) { Change(fPortRangeMin, v); }
    void UpdatePortRangeMax(int v) { Change(fPortRangeMax, v); }
    void UpdateAutoBind(bool v) { Change(fAutoBind, v); }

    bool IsValid() const { return fValid; }
    /// FairMQ's checks: true when the channel can attach, false when its address is unspecified or
    /// unusable; ChannelConfigurationError for a bad type, method, name or a negative size.
    bool Validate()
    {
        bool valid = false;
        if (fmq_channel_validate(Spec(true).c_str(), &valid) != FMQ_OK) {
            fValid = false;
            throw ChannelConfigurationError(detail::last_error());
        }
        fValid = valid;
        return valid;
    }
    void Invalidate() { fValid = false; }

    /// Sends `m` within the channel's send timeout (-1: forever) or `timeoutMs`: bytes sent, or
    /// TransferCode error (-1), timeout (-2), interrupted (-3); a sent message is left empty.
    int64_t Send(MessagePtr& m) const { return Send(m, fSndTimeoutMs); }
    int64_t Send(MessagePtr& m, int timeoutMs) const { return fmq_channel_send(Ch(), m->Raw(), timeoutMs); }
    int64_t Receive(MessagePtr& m) const { return Receive(m, fRcvTimeoutMs); }
    int64_t Receive(MessagePtr& m, int timeoutMs) const
    {
        if (!m) m = NewMessage();
        const int64_t r = fmq_channel_receive(Ch(), m->Raw(), timeoutMs);
        if (r >= 0) m->SetTransport(Transport());
        return r;
    }
    int64_t Send(Parts& p) const { return Send(p, fSndTimeoutMs); }
    int64_t Send(Parts& p, int timeoutMs) const
    {
        detail::LentParts lent(p, fTransport.Raw());
        return fmq_channel_send_parts(Ch(), lent.Raw(), timeoutMs);
    }
    int64_t Receive(Parts& p) const { return Receive(p, fRcvTimeoutMs); }
    int64_t Receive(Parts& p, int timeoutMs) const
    {
        fmq_parts* raw = fmq_parts_new();
        auto r = fmq_channel_receive_parts(Ch(), raw, timeoutMs);
        const size_t before = p.Size();
        try {
            detail::TakeParts(raw, p);
        } catch (...) {
            fmq_parts_free(raw);
            throw;
        }
        fmq_parts_free(raw);
        for (size_t i = before; i < p.Size(); ++i) p.At(i)->SetTransport(Transport());
        return r;
    }

    /// A message of the channel's transport: NewMessage(), (size), (size, Alignment),
    /// (Alignment), (data, size, ffn, hint), (region, data, size, hint).
    template<typename... Args>
    MessagePtr NewMessage(Args&&... args) const
    {
        return Transport()->CreateMessage(std::forward<Args>(args)...);
    }
    template<typename T>
    MessagePtr NewSimpleMessage(const T& v) const
    {
        return Transport()->NewSimpleMessage(v);
    }
    MessagePtr NewStaticMessage(const std::string& s) const { return Transport()->NewStaticMessage(s); }
    template<typename... Args>
    UnmanagedRegionPtr NewUnmanagedRegion(Args&&... args) const
    {
        return Transport()->CreateUnmanagedRegion(std::forward<Args>(args)...);
    }
    /// The channel's transport (valid while the channel lives), as FairMQ's Transport(): the
    /// factory it was made with, if it was.
    TransportFactory* Transport() const { return fFactory ? fFactory.get() : &fTransport; }

    unsigned long GetBytesTx() const { return fSocket.GetBytesTx(); }
    unsigned long GetBytesRx() const { return fSocket.GetBytesRx(); }
    unsigned long GetMessagesTx() const { return fSocket.GetMessagesTx(); }
    unsigned long GetMessagesRx() const { return fSocket.GetMessagesRx(); }
    fmq_counters Counters() const
    {
        fmq_counters c{};
        c.struct_size = sizeof(fmq_counters);
        detail::check(fmq_channel_counters(Ch(), &c), "Counters");
        return c;
    }
    /// The C handle (NULL for a channel without a socket).
    const fmq_channel* Raw() const { return fCh; }

    friend std::ostream& operator<<(std::ostream& os, const Channel& ch)
    {
        return os << "name: " << ch.fName << ", type: " << ch.fType << ", method: " << ch.fMethod
                  << ", address: " << ch.fAddress;
    }

  private:
    template<typename T>
    void Change(T& field, const T& value)
    {
        field = value;
        fValid = false;
    }
    const fmq_channel* Ch() const
    {
        if (!fCh) throw Error("channel '" + fName + "' has no socket (make it with a transport, then Bind or Connect)");
        return fCh;
    }
    void CopyConfiguration(const Channel& o)
    {
        fName = o.fName;
        fType = o.fType;
        fMethod = o.fMethod;
        fAddress = o.fAddress;
        fTransportName = o.fTransportName;
        fSndBufSize = o.fSndBufSize;
        fRcvBufSize = o.fRcvBufSize;
        fSndKernelSize = o.fSndKernelSize;
        fRcvKernelSize = o.fRcvKernelSize;
        fSndTimeoutMs = o.fSndTimeoutMs;
        fRcvTimeoutMs = o.fRcvTimeoutMs;
        fLinger = o.fLinger;
        fRateLogging = o.fRateLogging;
        fPortRangeMin = o.fPortRangeMin;
        fPortRangeMax = o.fPortRangeMax;
        fAutoBind = o.fAutoBind;
        fFactory = o.fFactory;
        fOwned = o.fOwned;
        fCh = o.fCh;
        fSocket = o.fSocket;
        fTransport = o.fTransport;
        fValid = false;
    }
    /// The configuration as a --channel-config token (the address only when `withEndpoint`).
    std::string Spec(bool withEndpoint) const
    {
        std::ostringstream s;
        s << "name=" << (fName.empty() ? "unnamed" : fName) << ",type=" << fType << ",transport=" << fTransportName
          << ",sndBufSize=" << fSndBufSize << ",rcvBufSize=" << fRcvBufSize << ",sndKernelSize=" << fSndKernelSize
          << ",rcvKernelSize=" << fRcvKernelSize << ",sndTimeoutMs=" << fSndTimeoutMs
          << ",rcvTimeoutMs=" << fRcvTimeoutMs << ",linger=" << fLinger << ",rateLogging=" << fRateLogging
          << ",portRangeMin=" << fPortRangeMin << ",portRangeMax=" << fPortRangeMax
          << ",autoBind=" << (fAutoBind ? "true" : "false");
        if (withEndpoint) s << ",method=" << fMethod << ",address=" << fAddress;
        return s.str();
    }
    bool Attach(const char* method, const std::string& address)
    {
        fMethod = method;
        fAddress = address;
        if (!fOwned) return false;
        // Changes made since the socket was made apply first.
        for (const auto& o : {std::make_pair("linger", fLinger), std::make_pair("snd-hwm", fSndBufSize),
                              std::make_pair("rcv-hwm", fRcvBufSize), std::make_pair("snd-size", fSndKernelSize),
                              std::make_pair("rcv-size", fRcvKernelSize)}) {
            if (fmq_channel_set_option(fOwned.get(), o.first, o.second) != FMQ_OK) return false;
        }
        if (fmq_channel_attach(fOwned.get(), method, address.c_str()) != FMQ_OK) {
            LogLine("error") << "failed to " << method << " channel " << fName << " to " << address << ": "
                             << detail::last_error();
            return false;
        }
        fValid = true;
        return true;
    }

    std::string fName;
    std::string fType;
    std::string fMethod;
    std::string fAddress;
    std::string fTransportName = "default";
    int fSndBufSize = 1000;
    int fRcvBufSize = 1000;
    int fSndKernelSize = 0;
    int fRcvKernelSize = 0;
    int fSndTimeoutMs = -1;
    int fRcvTimeoutMs = -1;
    int fLinger = 500;
    int fRateLogging = 1;
    int fPortRangeMin = 22000;
    int fPortRangeMax = 23000;
    bool fAutoBind = true;

    std::shared_ptr<TransportFactory> fFactory;
    std::shared_ptr<fmq_channel> fOwned;
    const fmq_channel* fCh = nullptr;
    mutable Socket fSocket;
    mutable TransportFactory fTransport{nullptr};
    bool fValid = false;
};

inline void ProgOptions::AddChannel(const std::string& name, const Channel& channel)
{
    const int index = GetChannelInfo()[name];
    const std::string prefix = "chans." + name + "." + std::to_string(index) + ".";
    Properties p;
    p[prefix + "type"] = channel.GetType();
    p[prefix + "method"] = channel.GetMethod();
    p[prefix + "address"] = channel.GetAddress();
    p[prefix + "transport"] = channel.GetTransportName();
    p[prefix + "sndBufSize"] = channel.GetSndBufSize();
    p[prefix + "rcvBufSize"] = channel.GetRcvBufSize();
    p[prefix + "sndKernelSize"] = channel.GetSndKernelSize();
    p[prefix + "rcvKernelSize"] = channel.GetRcvKernelSize();
    p[prefix + "sndTimeoutMs"] = channel.GetSndTimeout();
    p[prefix + "rcvTimeoutMs"] = channel.GetRcvTimeout();
    p[prefix + "linger"] = channel.GetLinger();
    p[prefix + "rateLogging"] = channel.GetRateLogging();
    p[prefix + "portRangeMin"] = channel.GetPortRangeMin();
    p[prefix + "portRangeMax"] = channel.GetPortRangeMax();
    p[prefix + "autoBind"] = channel.GetAutoBind();
    // The type last: a reader counting sub-channels by their type key sees a whole one.
    const std::string typeKey = prefix + "type";
    for (const auto& kv : p) {
        if (kv.first != typeKey) Store(kv.first, kv.second);
    }
    Store(typeKey, p[typeKey]);
}

} // namespace mq
} // namespace fair
