// fairmq-rs compatibility header: FairMQ's <fairmq/PluginManager.h>, loading and running plugins in
// a program's own process (as FairMQ's DeviceRunner and tests do).
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
//
// Plugins are what REGISTER_FAIRMQ_PLUGIN builds (<fairmq/Plugin.h>): a library exporting the C
// ABI's descriptor fmq_plugin_NAME, found as FairMQ finds its plugins (`-S` search paths, then
// the system's; libfairmq-plugin-NAME.so or libFairMQPlugin_NAME.so; `p:` prelinked, `s:`
// builtin). Each started plugin gets a services table over the program's PluginServices, under its
// own name. The builtin `control` plugin drives the device in static mode (the interactive and
// dynamic controllers are those of fairmq-rs device programs, <fairmq/runDevice.h>); `config`
// declares the channel configuration options, which the device reads itself.
#pragma once
#include <fairmq/Plugin.h>
#include <fairmq/PluginServices.h>
#include <fairmq/tools/Strings.h>

#include <filesystem>
namespace fs = std::filesystem;

#include <boost/make_shared.hpp>
#include <boost/optional.hpp>
#include <boost/program_options.hpp>

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace fair::mq {

namespace plugin_host {

/// A plugin's program options as Boost declares them, from the C ABI's table.
inline boost::program_options::options_description Description(const std::string& title, const fmq_option* options, size_t n)
{
    namespace po = boost::program_options;
    po::options_description d(title);
    for (size_t i = 0; i < n; ++i) {
        const fmq_option& o = options[i];
        const int type = o.ty & ~FMQ_OPTION_REQUIRED;
        const std::string def = o.default_value ? o.default_value : "";
        const bool hasDefault = o.default_value != nullptr;
        po::value_semantic* v = nullptr;
        switch (type) {
            case FMQ_OPTION_BOOL: {
                auto* t = po::value<bool>();
                if (hasDefault) t->default_value(def == "true" || def == "1");
                v = t;
                break;
            }
            case FMQ_OPTION_FLAG: v = po::bool_switch(); break;
            case FMQ_OPTION_INT: {
                auto* t = po::value<int>();
                if (hasDefault) t->default_value(std::stoi(def));
                v = t;
                break;
            }
            case FMQ_OPTION_UINT16: {
                auto* t = po::value<uint16_t>();
                if (hasDefault) t->default_value(static_cast<uint16_t>(std::stoul(def)));
                v = t;
                break;
            }
            case FMQ_OPTION_UINT64: {
                auto* t = po::value<uint64_t>();
                if (hasDefault) t->default_value(std::stoull(def));
                v = t;
                break;
            }
            case FMQ_OPTION_FLOAT: {
                auto* t = po::value<float>();
                if (hasDefault) t->default_value(std::stof(def));
                v = t;
                break;
            }
            case FMQ_OPTION_STRINGS: v = po::value<std::vector<std::string>>()->multitoken()->composing(); break;
            default: {
                auto* t = po::value<std::string>();
                if (hasDefault) t->default_value(def);
                v = t;
                break;
            }
        }
        d.add(boost::make_shared<po::option_description>(o.name, v, o.description ? o.description : ""));
    }
    return d;
}

/// A started plugin's side of the program: the services table it was given, over the program's
/// PluginServices under the plugin's name, and the states it has not waited for yet.
struct Hosted
{
    PluginServices* services = nullptr;
    ProgOptions* config = nullptr;
    std::string name;
    fmq_plugin_services table{};
    std::mutex mtx;
    std::condition_variable changed;
    std::deque<State> states;
    fmq_plugin_state_callback callback = nullptr;
    void* callbackUser = nullptr;

    static Hosted& Of(void* host) { return *static_cast<Hosted*>(host); }
    static std::string& LastError()
    {
        static thread_local std::string e;
        return e;
    }
    /// Runs `f`; an exception becomes the result for it (and the thread's last error).
    template<typename F>
    static fmq_plugin_result Guard(F&& f) noexcept
    {
        try {
            return f();
        } catch (const PluginServices::DeviceControlError& e) {
            LastError() = e.what();
            return FMQ_PLUGIN_ERROR_CONTROL;
        } catch (const std::exception& e) {
            LastError() = e.what();
            return FMQ_PLUGIN_ERROR_INVALID;
        } catch (...) {
            LastError() = "an exception that is no std::exception";
            return FMQ_PLUGIN_ERROR_PANIC;
        }
    }
    static fmq_plugin_result CopyText(const std::string& text, char* buf, size_t cap, size_t* len)
    {
        if (len) *len = text.size();
        if (!buf || cap < text.size() + 1) return FMQ_PLUGIN_ERROR_BUFFER;
        std::memcpy(buf, text.c_str(), text.size() + 1);
        return FMQ_PLUGIN_OK;
    }
    std::string SubscriberKey() const { return "plugin " + name; }
    std::string QueueKey() const { return "plugin queue " + name; }

    static int32_t CurrentState(void* host) { return static_cast<int32_t>(Of(host).services->GetCurrentDeviceState()); }
    static fmq_plugin_result ChangeState(void* host, int32_t t)
    {
        return Guard([&] {
            Hosted& h = Of(host);
            if (t < 0 || t > static_cast<int32_t>(Transition::ErrorFound)) throw std::invalid_argument("no transition " + std::to_string(t));
            return h.services->ChangeDeviceState(h.name, static_cast<Transition>(t)) ? FMQ_PLUGIN_OK : FMQ_PLUGIN_REFUSED;
        });
    }
    static fmq_plugin_result Take(void* host)
    {
        return Guard([&] { Of(host).services->TakeDeviceControl(Of(host).name); return FMQ_PLUGIN_OK; });
    }
    static fmq_plugin_result Steal(void* host)
    {
        return Guard([&] { Of(host).services->StealDeviceControl(Of(host).name); return FMQ_PLUGIN_OK; });
    }
    static fmq_plugin_result Release(void* host)
    {
        return Guard([&] { Of(host).services->ReleaseDeviceControl(Of(host).name); return FMQ_PLUGIN_OK; });
    }
    static fmq_plugin_result Controller(void* host, char* buf, size_t cap, size_t* len)
    {
        return Guard([&] {
            auto c = Of(host).services->GetDeviceController();
            return c ? CopyText(*c, buf, cap, len) : FMQ_PLUGIN_ERROR_NOT_FOUND;
        });
    }
    static fmq_plugin_result WaitForRelease(void* host, int64_t timeoutMs)
    {
        return Guard([&] {
            if (timeoutMs < 0) {
                Of(host).services->WaitForReleaseDeviceControl();
                return FMQ_PLUGIN_OK;
            }
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
            while (Of(host).services->GetDeviceController()) {
                if (std::chrono::steady_clock::now() >= deadline) return FMQ_PLUGIN_ERROR_TIMEOUT;
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
            return FMQ_PLUGIN_OK;
        });
    }
    static fmq_plugin_result WaitForState(void* host, int32_t state, int64_t timeoutMs)
    {
        return Guard([&] {
            Hosted& h = Of(host);
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs < 0 ? 0 : timeoutMs);
            std::unique_lock<std::mutex> lock(h.mtx);
            for (;;) {
                while (!h.states.empty()) {
                    const State s = h.states.front();
                    h.states.pop_front();
                    if (static_cast<int32_t>(s) == state) return FMQ_PLUGIN_OK;
                    if (s == State::Error) return FMQ_PLUGIN_ERROR_DEVICE;
                }
                if (timeoutMs < 0) {
                    h.changed.wait(lock);
                } else if (h.changed.wait_until(lock, deadline) == std::cv_status::timeout && h.states.empty()) {
                    return FMQ_PLUGIN_ERROR_TIMEOUT;
                }
            }
        });
    }
    static fmq_plugin_result Subscribe(void* host, fmq_plugin_state_callback cb, void* user)
    {
        return Guard([&] {
            Hosted& h = Of(host);
            if (!cb) throw std::invalid_argument("the state callback is NULL");
            h.callback = cb;
            h.callbackUser = user;
            h.services->SubscribeToDeviceStateChange(h.SubscriberKey(), [&h](State s) {
                if (h.callback(static_cast<int32_t>(s), h.callbackUser) != 0) {
                    throw std::runtime_error("plugin '" + h.name + "': its state callback failed entering " + GetStateName(s));
                }
            });
            return FMQ_PLUGIN_OK;
        });
    }
    static fmq_plugin_result Unsubscribe(void* host)
    {
        return Guard([&] { Of(host).services->UnsubscribeFromDeviceStateChange(Of(host).SubscriberKey()); return FMQ_PLUGIN_OK; });
    }
    static bool Exists(void* host, const char* key)
    {
        try {
            return key && Of(host).services->PropertyExists(key);
        } catch (...) {
            return false;
        }
    }
    static fmq_plugin_result Get(void* host, const char* key, char* buf, size_t cap, size_t* len)
    {
        return Guard([&] {
            Hosted& h = Of(host);
            if (!key) throw std::invalid_argument("key is NULL");
            if (!h.config->Count(key)) return FMQ_PLUGIN_ERROR_NOT_FOUND;
            auto all = h.config->GetProperties(std::regex_replace(key, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)"));
            auto it = all.find(key);
            if (it != all.end()) {
                if (auto* list = boost::any_cast<std::vector<std::string>>(&it->second)) {
                    std::string lines;
                    for (const auto& item : *list) lines += (lines.empty() ? "" : "\n") + item;
                    return CopyText(lines, buf, cap, len);
                }
            }
            return CopyText(h.config->GetPropertyAsString(key), buf, cap, len);
        });
    }
    /// Sets `key` from text read as the type the property has (a new one: text).
    static fmq_plugin_result Set(void* host, const char* key, const char* value)
    {
        return Guard([&] {
            Hosted& h = Of(host);
            if (!key || !value) throw std::invalid_argument("key or value is NULL");
            const std::string text = value;
            Property now;
            if (h.config->Count(key)) {
                auto all = h.config->GetPropertiesStartingWith(key);
                now = all[key];
            }
            if (now.empty() || now.type() == typeid(std::string)) {
                h.config->SetProperty<std::string>(key, text);
            } else if (now.type() == typeid(bool)) {
                h.config->SetProperty<bool>(key, text == "true" || text == "1");
            } else if (now.type() == typeid(int)) {
                h.config->SetProperty<int>(key, std::stoi(text));
            } else if (now.type() == typeid(float)) {
                h.config->SetProperty<float>(key, std::stof(text));
            } else if (now.type() == typeid(double)) {
                h.config->SetProperty<double>(key, std::stod(text));
            } else if (now.type() == typeid(uint64_t)) {
                h.config->SetProperty<uint64_t>(key, std::stoull(text));
            } else if (now.type() == typeid(uint16_t)) {
                h.config->SetProperty<uint16_t>(key, static_cast<uint16_t>(std::stoul(text)));
            } else if (now.type() == typeid(long)) {
                h.config->SetProperty<long>(key, std::stol(text));
            } else if (now.type() == typeid(std::vector<std::string>)) {
                h.config->SetProperty(key, detail::Lines(text));
            } else {
                throw std::invalid_argument(std::string("property '") + key + "' has a type text cannot set");
            }
            return FMQ_PLUGIN_OK;
        });
    }
    static void Log(void* host, int32_t severity, const char* text)
    {
        static const char* const names[] = {"trace", "debug", "info", "state", "warn", "error", "fatal"};
        try {
            LogLine(severity >= 0 && severity <= 6 ? names[severity] : "info") << Of(host).name << ": " << (text ? text : "");
        } catch (...) {
            // A log line must not end the program.
        }
    }
    static const char* LastErrorText() { return LastError().c_str(); }

    Hosted(PluginServices& s, ProgOptions& c, std::string plugin)
        : services(&s)
        , config(&c)
        , name(std::move(plugin))
    {
        table.abi_version = FMQ_PLUGIN_ABI_VERSION;
        table.host = this;
        table.current_state = &CurrentState;
        table.change_state = &ChangeState;
        table.take_device_control = &Take;
        table.steal_device_control = &Steal;
        table.release_device_control = &Release;
        table.device_controller = &Controller;
        table.wait_for_release_device_control = &WaitForRelease;
        table.wait_for_state = &WaitForState;
        table.subscribe_to_state_change = &Subscribe;
        table.unsubscribe_from_state_change = &Unsubscribe;
        table.property_exists = &Exists;
        table.get_property = &Get;
        table.set_property = &Set;
        table.log = &Log;
        table.last_error = &LastErrorText;
        services->SubscribeToDeviceStateChange(QueueKey(), [this](State s) {
            {
                std::lock_guard<std::mutex> lock(mtx);
                states.push_back(s);
            }
            changed.notify_all();
        });
    }
    ~Hosted()
    {
        try {
            services->UnsubscribeFromDeviceStateChange(QueueKey());
            services->UnsubscribeFromDeviceStateChange(SubscriberKey());
        } catch (...) {
            // gone with the device
        }
    }
    Hosted(const Hosted&) = delete;
    Hosted& operator=(const Hosted&) = delete;
};

/// The builtin `control` plugin: in static mode it takes control, runs the device once through
/// RUNNING and ends it (FairMQ's `--control static`); `none` leaves control to others.
class ControlPlugin : public Plugin
{
  public:
    ControlPlugin(PluginServices* services, ::fair::mq::ProgOptions& config)
        : Plugin("control", Version{1, 0, 2}, "FairRootGroup <fairroot@gsi.de>", "https://github.com/FairRootGroup/FairMQ", services)
        , fServices(services)
    {
        const std::string mode = config.GetProperty<std::string>("control", "dynamic");
        if (mode == "none") return;
        if (mode != "static") {
            throw std::runtime_error("control mode '" + mode + "': a program's own plugin manager offers 'static' and 'none' "
                                     "(the interactive and dynamic controllers are those of <fairmq/runDevice.h> programs)");
        }
        fServices->SubscribeToDeviceStateChange("control queue", [this](State s) {
            {
                std::lock_guard<std::mutex> lock(fMtx);
                fStates.push_back(s);
            }
            fChanged.notify_all();
        });
        TakeDeviceControl();
        fThread = std::thread([this] { RunStatic(); });
    }
    ~ControlPlugin() override
    {
        if (fThread.joinable()) fThread.join();
        try {
            fServices->UnsubscribeFromDeviceStateChange("control queue");
        } catch (...) {
            // gone with the device
        }
    }

    static auto ProgramOptions() -> boost::program_options::options_description
    {
        namespace po = boost::program_options;
        po::options_description d("FairMQ device control options");
        d.add_options()
            ("control", po::value<std::string>()->default_value("dynamic"), "Control mode, 'static' or 'dynamic' (aliases 'interactive' and 'external'), 'gui' or 'none'")
            ("catch-signals", po::value<int>()->default_value(1), "Enable signal handling (1/0).");
        return d;
    }

  private:
    /// Waits for `s` (true) or ERROR / EXITING first (false).
    bool Await(State s)
    {
        std::unique_lock<std::mutex> lock(fMtx);
        for (;;) {
            fChanged.wait(lock, [this] { return !fStates.empty(); });
            const State next = fStates.front();
            fStates.pop_front();
            if (next == s) return true;
            if (next == State::Error || next == State::Exiting) return false;
        }
    }
    void RunStatic()
    {
        try {
            const std::pair<Transition, State> steps[] = {
                {Transition::InitDevice, State::InitializingDevice}, {Transition::CompleteInit, State::Initialized},
                {Transition::Bind, State::Bound},                    {Transition::Connect, State::DeviceReady},
                {Transition::InitTask, State::Ready},                {Transition::Run, State::Running}};
            bool ok = true;
            for (const auto& step : steps) {
                if (!(ok = ChangeDeviceState(step.first) && Await(step.second))) break;
            }
            if (ok && Await(State::Ready)) {
                ok = ChangeDeviceState(Transition::ResetTask) && Await(State::DeviceReady) &&
                     ChangeDeviceState(Transition::ResetDevice) && Await(State::Idle);
            }
            if (ok) {
                ChangeDeviceState(Transition::End);
                Await(State::Exiting);
            }
        } catch (const std::exception& e) {
            LOG(error) << "control plugin: " << e.what();
        }
        ReleaseDeviceControl();
    }

    PluginServices* fServices;
    std::mutex fMtx;
    std::condition_variable fChanged;
    std::deque<State> fStates;
    std::thread fThread;
};

/// The builtin `config` plugin: the channel configuration options (the device reads them itself
/// when it enters INITIALIZING DEVICE).
class ConfigPlugin : public Plugin
{
  public:
    explicit ConfigPlugin(PluginServices* services)
        : Plugin("config", Version{1, 0, 0}, "FairRootGroup <fairroot@gsi.de>", "https://github.com/FairRootGroup/FairMQ", services)
    {}
    static auto ProgramOptions() -> boost::program_options::options_description
    {
        namespace po = boost::program_options;
        po::options_description d("FairMQ device options");
        d.add_options()
            ("id", po::value<std::string>()->default_value(""), "Device ID.")
            ("transport", po::value<std::string>()->default_value("zeromq"), "Transport ('zeromq'/'shmem').")
            ("config-key", po::value<std::string>(), "Use provided value instead of device id for fetching the configuration from JSON file")
            ("mq-config", po::value<std::string>(), "JSON input as file.")
            ("channel-config", po::value<std::vector<std::string>>()->multitoken()->composing(), "Configuration of single or multiple channel(s) by comma separated key=value list");
        return d;
    }
};

/// The marker every instance of REGISTER_FAIRMQ_PLUGIN's starts with.
inline detail::PluginInstance* AsInstance(void* instance)
{
    auto* i = static_cast<detail::PluginInstance*>(instance);
    return i && i->magic == detail::kPluginInstanceMagic ? i : nullptr;
}

} // namespace plugin_host

/// Loads plugins, keeps their program options and runs them (FairMQ's PluginManager).
class PluginManager
{
  public:
    using PluginFactory = std::unique_ptr<fair::mq::Plugin>(PluginServices&);

    struct BadSearchPath : std::invalid_argument { using std::invalid_argument::invalid_argument; };
    struct PluginNotFound : std::runtime_error { using std::runtime_error::runtime_error; };
    struct PluginLoadError : std::runtime_error { using std::runtime_error::runtime_error; };
    struct PluginInstantiationError : std::runtime_error { using std::runtime_error::runtime_error; };
    struct ProgramOptionsParseError : std::runtime_error { using std::runtime_error::runtime_error; };

    PluginManager() = default;
    /// Reads `-S`/`--plugin-search-path` (`<dir` prepends, `>dir` appends, others replace) and
    /// loads `-P`/`--plugin` plugins; other arguments are left alone.
    explicit PluginManager(const std::vector<std::string>& args)
    {
        std::vector<std::string> paths, plugins;
        std::vector<std::string>* into = nullptr;
        for (const auto& a : args) {
            if (a == "-S" || a == "--plugin-search-path") {
                into = &paths;
            } else if (a == "-P" || a == "--plugin") {
                into = &plugins;
            } else if (!a.empty() && a[0] == '-') {
                into = nullptr;
            } else if (into) {
                into->push_back(a);
            }
        }
        std::vector<fs::path> base, prepend, append;
        for (const auto& p : paths) {
            if (p.size() > 1 && p[0] == '<') {
                prepend.emplace_back(p.substr(1));
            } else if (p.size() > 1 && p[0] == '>') {
                append.emplace_back(p.substr(1));
            } else {
                base.emplace_back(p);
            }
        }
        SetSearchPaths(base);
        for (const auto& p : prepend) PrependSearchPath(p);
        for (const auto& p : append) AppendSearchPath(p);
        LoadPlugins(plugins);
    }
    PluginManager(const PluginManager&) = delete;
    PluginManager(PluginManager&&) = delete;
    PluginManager& operator=(const PluginManager&) = delete;
    PluginManager& operator=(PluginManager&&) = delete;
    /// Stops the plugins, the last started first.
    ~PluginManager()
    {
        for (auto it = fPlugins.rbegin(); it != fPlugins.rend(); ++it) {
            if (it->instance && it->descriptor && it->descriptor->stop) it->descriptor->stop(it->instance);
            it->instance = nullptr;
            it->builtin.reset();
            it->hosted.reset();
        }
    }

    auto SetSearchPaths(const std::vector<fs::path>& searchPaths) -> void
    {
        for (const auto& p : searchPaths) Validate(p);
        fSearchPaths = searchPaths;
    }
    auto AppendSearchPath(const fs::path& path) -> void
    {
        Validate(path);
        fSearchPaths.push_back(path);
    }
    auto PrependSearchPath(const fs::path& path) -> void
    {
        Validate(path);
        fSearchPaths.insert(fSearchPaths.begin(), path);
    }
    auto SearchPaths() const -> const std::vector<fs::path>& { return fSearchPaths; }

    /// `p:NAME` prelinked, `s:NAME` builtin (control, config), `d:NAME` or `NAME` dynamic.
    auto LoadPlugin(const std::string& pluginName) -> void
    {
        if (pluginName.rfind("p:", 0) == 0) {
            LoadPrelinked(pluginName.substr(2));
        } else if (pluginName.rfind("s:", 0) == 0) {
            LoadStatic(pluginName.substr(2));
        } else if (pluginName.rfind("d:", 0) == 0) {
            LoadDynamic(pluginName.substr(2));
        } else {
            LoadDynamic(pluginName);
        }
    }
    auto LoadPlugins(const std::vector<std::string>& pluginNames) -> void
    {
        for (const auto& n : pluginNames) LoadPlugin(n);
    }
    static auto ProgramOptions() -> boost::program_options::options_description
    {
        namespace po = boost::program_options;
        po::options_description d("Plugin Manager");
        d.add_options()
            ("plugin-search-path,S", po::value<std::vector<std::string>>()->multitoken(), "List of plugin search paths (<dir to prepend, >dir to append, plain to replace).")
            ("plugin,P", po::value<std::vector<std::string>>()->multitoken(), "List of plugin names to load in order.");
        return d;
    }
    static auto LibPrefix() -> const std::string&
    {
        static const std::string prefix = "fairmq-plugin-";
        return prefix;
    }

    /// Every started plugin, in load order.
    auto ForEachPlugin(std::function<void(Plugin&)> func) -> void
    {
        for (auto& p : fPlugins) {
            if (p.builtin) {
                func(*p.builtin);
            } else if (auto* i = plugin_host::AsInstance(p.instance)) {
                func(*i->plugin);
            }
        }
    }
    /// Every loaded plugin's program options, by plugin name.
    auto ForEachPluginProgOptions(std::function<void(boost::program_options::options_description)> func) const -> void
    {
        for (const auto& kv : fOptions) func(kv.second);
    }
    template<typename... Args>
    auto EmplacePluginServices(Args&&... args) -> void
    {
        fPluginServices = std::make_unique<PluginServices>(std::forward<Args>(args)...);
        Remember(std::forward<Args>(args)...);
    }
    /// Starts every loaded plugin, in load order (after EmplacePluginServices).
    auto InstantiatePlugins() -> void
    {
        if (!fPluginServices || !fConfig) throw PluginInstantiationError("InstantiatePlugins: no plugin services (EmplacePluginServices(config, device) first)");
        for (auto& p : fPlugins) {
            if (p.builtin || p.instance) continue;
            try {
                if (p.name == "control" && !p.descriptor) {
                    p.builtin = std::make_unique<plugin_host::ControlPlugin>(fPluginServices.get(), *fConfig);
                } else if (p.name == "config" && !p.descriptor) {
                    p.builtin = std::make_unique<plugin_host::ConfigPlugin>(fPluginServices.get());
                } else if (p.descriptor->start) {
                    p.hosted = std::make_unique<plugin_host::Hosted>(*fPluginServices, *fConfig, p.name);
                    void* instance = nullptr;
                    if (p.descriptor->start(&p.hosted->table, &instance) != 0) {
                        throw std::runtime_error(plugin_host::Hosted::LastError().empty() ? "its start failed" : plugin_host::Hosted::LastError());
                    }
                    p.instance = instance;
                }
            } catch (const std::exception& e) {
                throw PluginInstantiationError("failed to instantiate plugin " + p.name + ": " + e.what());
            }
        }
    }
    auto WaitForPluginsToReleaseDeviceControl() -> void
    {
        if (fPluginServices) fPluginServices->WaitForReleaseDeviceControl();
    }

  private:
    struct Loaded
    {
        std::string name;
        const fmq_plugin* descriptor = nullptr; // none for a builtin
        std::unique_ptr<plugin_host::Hosted> hosted;
        void* instance = nullptr;
        std::unique_ptr<Plugin> builtin;
    };

    void Remember(ProgOptions& config, Device&) { fConfig = &config; }
    template<typename... Args>
    void Remember(Args&&...)
    {}

    static void Validate(const fs::path& path)
    {
        if (path.empty()) throw BadSearchPath("Specified path is empty.");
        if (fs::exists(path) && !fs::is_directory(path)) throw BadSearchPath(path.string() + " is not a directory.");
    }
    bool Loaded_(const std::string& name) const
    {
        for (const auto& p : fPlugins) {
            if (p.name == name) return true;
        }
        return false;
    }
    /// Reads a library's (or the program's) descriptor of `name`.
    void Add(const std::string& name, void* scope)
    {
        const std::string symbol = "fmq_plugin_" + name;
        auto* entry = reinterpret_cast<fmq_plugin_entry>(dlsym(scope, symbol.c_str()));
        if (!entry) throw PluginLoadError("plugin " + name + ": no " + symbol + " (was it built with REGISTER_FAIRMQ_PLUGIN?)");
        const fmq_plugin* d = entry();
        if (!d || d->abi_version != FMQ_PLUGIN_ABI_VERSION) {
            throw PluginLoadError("plugin " + name + ": its descriptor is missing or of another plugin ABI version");
        }
        if (d->n_options > 0 && d->options) {
            const std::string title = d->options_title ? d->options_title : "Plugin '" + name + "'";
            fOptions.emplace(name, plugin_host::Description(title, d->options, d->n_options));
        }
        Loaded l;
        l.name = name;
        l.descriptor = d;
        fPlugins.push_back(std::move(l));
    }
    void LoadPrelinked(const std::string& name)
    {
        if (!Loaded_(name)) Add(name, RTLD_DEFAULT);
    }
    void LoadStatic(const std::string& name)
    {
        if (Loaded_(name)) return;
        if (name == "control" || name == "config") {
            fOptions.emplace(name, name == "control" ? plugin_host::ControlPlugin::ProgramOptions() : plugin_host::ConfigPlugin::ProgramOptions());
            Loaded l;
            l.name = name;
            fPlugins.push_back(std::move(l));
            return;
        }
        Add(name, RTLD_DEFAULT);
    }
    void LoadDynamic(const std::string& name)
    {
        if (Loaded_(name)) return;
        const std::string prefixes[] = {LibPrefix(), "FairMQPlugin_"};
        void* lib = nullptr;
        std::string tried;
        for (const auto& dir : fSearchPaths) {
            for (const auto& prefix : prefixes) {
                const fs::path file = dir / ("lib" + prefix + name + ".so");
                if (fs::exists(file) && !lib) {
                    lib = dlopen(file.c_str(), RTLD_NOW | RTLD_GLOBAL);
                    if (!lib) tried += std::string(" ") + dlerror() + ";";
                }
            }
        }
        for (const auto& prefix : prefixes) {
            if (!lib) lib = dlopen(("lib" + prefix + name + ".so").c_str(), RTLD_NOW | RTLD_GLOBAL); // the system's lookup
        }
        if (!lib) {
            throw PluginLoadError("Could not load dynamic plugin " + name + " from configured search paths (-S) nor with system lookup." + tried);
        }
        // Libraries stay loaded for the program's life (their code may still run in threads).
        Add(name, lib);
    }

    std::vector<fs::path> fSearchPaths;
    std::vector<Loaded> fPlugins;
    std::map<std::string, boost::program_options::options_description> fOptions;
    std::unique_ptr<PluginServices> fPluginServices;
    ProgOptions* fConfig = nullptr;
};

} // namespace fair::mq
