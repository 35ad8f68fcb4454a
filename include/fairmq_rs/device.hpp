// fairmq-rs C++ API: devices (FairMQ's fair::mq::Device). Part of fairmq_rs.hpp, which includes it
// after the types it uses.
#pragma once

namespace fair {
namespace mq {

class Device;

namespace detail {
struct Hooks;
}

/// A device: override the hooks you need (FairMQ's names); register data handlers with OnData.
/// Its state machine is IDLE from construction: a controlling thread may request transitions
/// while another runs RunStateMachine() (FairMQ's in-process use), or a device program
/// (<fairmq/runDevice.h>) runs it.
class Device {
  public:
    Device() : Device(nullptr, tools::Version{0, 0, 0}) {}
    explicit Device(ProgOptions& config) : Device(&config, tools::Version{0, 0, 0}) {}
    explicit Device(tools::Version version) : Device(nullptr, version) {}
    Device(ProgOptions& config, tools::Version version) : Device(&config, version) {}
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;
    Device(Device&&) = delete;
    Device& operator=(Device&&) = delete;
    virtual ~Device()
    {
        if (fStates) fmq_states_unsubscribe(fStates, fStateKey.c_str());
    }

    /// The configuration (FairMQ's GetConfig()): the device's own, or the one given to it.
    ProgOptions* GetConfig() const { return fConfig; }
    /// Uses `config` from now on (FairMQ's SetConfig); it must outlive the device's run.
    void SetConfig(ProgOptions& config)
    {
        fConfig = &config;
        fInternalConfig.reset();
    }
    /// Runs the state machine in this thread until EXITING (FairMQ's RunStateMachine);
    /// transitions come from other threads (ChangeState). Throws DeviceErrorState when the device
    /// ended in ERROR.
    void RunStateMachine()
    {
        if (fmq_device_run(fDevice.get(), fConfig->Raw()) != FMQ_OK) throw DeviceErrorState(detail::last_error());
    }
    const tools::Version GetVersion() const { return fVersion; }
    /// The default transport's name in the configuration (FairMQ's SetTransport/GetTransportName).
    void SetTransport(const std::string& transport = "zeromq") { fConfig->SetProperty<std::string>("transport", transport); }
    std::string GetTransportName() const { return fConfig->GetProperty<std::string>("transport", "zeromq"); }
    /// Adds sub-channel `channel` to channel `name` in the configuration (used from INITIALIZING
    /// DEVICE on).
    void AddChannel(const std::string& name, Channel&& channel) { fConfig->AddChannel(name, channel); }

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
    /// A message of the default transport: NewMessage(), (size), (size, Alignment), (Alignment),
    /// (data, size, ffn, hint), (region, data, size, hint).
    template<typename... Args>
    MessagePtr NewMessage(Args&&... args) const
    {
        return Transport()->CreateMessage(std::forward<Args>(args)...);
    }
    template<typename T>
    MessagePtr NewSimpleMessageFor(const std::string& ch, int i, const T& data) const
    {
        return GetChannel(ch, i).NewSimpleMessage(data);
    }
    MessagePtr NewStaticMessageFor(const std::string& ch, int i, const std::string& data) const
    {
        return GetChannel(ch, i).NewStaticMessage(data);
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
    /// A poller over these sub-channels: CheckInput(i) is about channels[i].
    PollerPtr NewPoller(const std::vector<Channel*>& channels) const
    {
        std::vector<const fmq_channel*> raw;
        for (const Channel* c : channels) raw.push_back(c->Raw());
        return std::make_unique<Poller>(raw);
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
    /// The device's default transport (borrowed; from INITIALIZING DEVICE on), as FairMQ's
    /// Transport().
    TransportFactory* Transport() const
    {
        const fmq_transport* t = fCtx ? fmq_context_transport(fCtx) : nullptr;
        if (!t) throw Error("the device has no transport yet (it has one from INITIALIZING DEVICE on)");
        fTransport = TransportFactory(t);
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
    /// As ChangeState; a refused transition throws std::system_error (FairMQ's code
    /// DeviceChangeStateFailed).
    void ChangeStateOrThrow(Transition t)
    {
        if (!ChangeState(t)) {
            throw std::system_error(MakeErrorCode(ErrorCode::DeviceChangeStateFailed), "Invalid transition: " + GetTransitionName(t));
        }
    }
    void ChangeStateOrThrow(const std::string& t) { ChangeStateOrThrow(GetTransition(t)); }
    /// The next state the device enters after the last one this returned (states are queued from
    /// construction on); DeviceErrorState when it is ERROR.
    State WaitForNextState()
    {
        std::unique_lock<std::mutex> lock(fStateMutex);
        fStateChanged.wait(lock, [this] { return !fStateQueue.empty(); });
        State s = fStateQueue.front();
        fStateQueue.pop_front();
        if (s == State::Error) throw DeviceErrorState("Device transitioned to error state");
        return s;
    }
    /// Returns once the device entered `s` (or entered it since the last wait).
    void WaitForState(State s)
    {
        while (WaitForNextState() != s) {
        }
    }
    void WaitForState(const std::string& s) { WaitForState(GetState(s)); }
    /// Calls `callback` on the state machine's thread for every state entered from now on, before
    /// the state's work.
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
    /// The device id (`--id`, read when INITIALIZING DEVICE completes).
    std::string GetId() const { return fId; }
    void SetId(const std::string& id) { fId = id; }

  public:
    /// The configuration in use (FairMQ's public member).
    ProgOptions* fConfig;
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
    Device(ProgOptions* config, tools::Version version);
    std::unique_ptr<ProgOptions> fInternalConfig;
    const fmq_context* fCtx = nullptr;
    tools::Version fVersion;
    std::unique_ptr<fmq_device, void (*)(fmq_device*)> fDevice{nullptr, fmq_device_free};
    std::string fStateKey;

  private:
    const fmq_states* States() const { return fStates; }
    /// Follows the state machine `states` from now on (the state queue, subscribers): the device's
    /// own from construction, a device program's from its first hook.
    void AttachStates(const fmq_states* states)
    {
        if (fStates) fmq_states_unsubscribe(fStates, fStateKey.c_str());
        fStates = states;
        detail::check(fmq_states_subscribe(states, fStateKey.c_str(), &Device::OnStateChange, this), "SubscribeToStateChange");
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
        const fmq_states* running = fmq_context_states(ctx);
        if (d->fStates != running) d->AttachStates(running); // a device program's state machine
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
            d->fId = d->fConfig->GetPropertyAsString("id", "");
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
    /// A device program's run ended: its context and state machine are gone; the device follows
    /// its own state machine again.
    static void Detach(Device& d)
    {
        d.fCtx = nullptr;
        d.fStates = nullptr; // the program's state machine is gone: nothing to unsubscribe from
        d.AttachStates(fmq_device_states(d.fDevice.get()));
    }
    static fmq_device_hooks Table()
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
        h.handle_data = Data; // called only for channels registered with OnData
        h.handle_parts = PartsData;
        return h;
    }
};
} // namespace detail

inline Device::Device(ProgOptions* config, tools::Version version)
    : fConfig(config)
    , fVersion(version)
    , fStateKey("fairmq-rs C++ device " + std::to_string(reinterpret_cast<uintptr_t>(this)))
{
    if (!fConfig) {
        fInternalConfig = std::make_unique<ProgOptions>();
        fConfig = fInternalConfig.get();
    }
    const fmq_device_hooks hooks = detail::Hooks::Table();
    fmq_device* d = nullptr;
    detail::check(fmq_device_new(&hooks, this, &d), "Device");
    fDevice.reset(d);
    AttachStates(fmq_device_states(d));
    std::lock_guard<std::mutex> lock(fStateMutex);
    fStateQueue.push_back(GetCurrentState());
}

} // namespace mq
} // namespace fair
