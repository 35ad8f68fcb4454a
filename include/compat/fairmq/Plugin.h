// fairmq-rs compatibility header: FairMQ's <fairmq/Plugin.h>, the plugin base class and REGISTER_FAIRMQ_PLUGIN.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
//
// A FairMQ plugin source builds into a library that fairmq-rs loads with -P NAME:
//   c++ -std=c++17 -fPIC -shared -I<prefix>/include/compat -I<prefix>/include my_plugin.cpp
//       -o libfairmq-plugin-NAME.so -lboost_program_options
// REGISTER_FAIRMQ_PLUGIN exports the C ABI's descriptor (fmq_plugin_NAME, see fairmq_rs.h) instead
// of FairMQ's Boost.DLL aliases; the plugin talks to the device only through the services table
// it is given, so the library does not link libfairmq_rs. Boost.ProgramOptions is needed for the
// plugin's options, as in FairMQ (a plugin with NoProgramOptions does not need it at run time).
// LOG in a plugin source goes through the device's logger via that table (see LOG below).
#pragma once
#include <fairmq/PluginServices.h>
#include <fairmq_rs_boost_options.hpp>
#include <fairmq/tools/Version.h>

#include <boost/any.hpp>
#include <boost/optional.hpp>
#include <boost/program_options.hpp>

#include <atomic>
#include <cstdint>
#include <exception>
#include <iostream>
#include <limits>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace fair::mq {


/// Base class of plugins: their metadata, and the device's services with the plugin's name as
/// controller and subscriber id. The device logs "Loaded plugin: ..." and "Unloaded plugin: ...".
class Plugin
{
  public:
    using ProgOptions = boost::optional<boost::program_options::options_description>;
    using Version = tools::Version;

    Plugin() = delete;
    Plugin(std::string name, Version version, std::string maintainer, std::string homepage, PluginServices* pluginServices)
        : fkName(std::move(name))
        , fkVersion(version)
        , fkMaintainer(std::move(maintainer))
        , fkHomepage(std::move(homepage))
        , fPluginServices(pluginServices)
    {}

    Plugin(const Plugin&) = delete;
    Plugin(Plugin&&) = delete;
    Plugin& operator=(const Plugin&) = delete;
    Plugin& operator=(Plugin&&) = delete;

    virtual ~Plugin() = default;

    auto GetName() const -> const std::string& { return fkName; }
    auto GetVersion() const -> const Version { return fkVersion; }
    auto GetMaintainer() const -> const std::string& { return fkMaintainer; }
    auto GetHomepage() const -> const std::string& { return fkHomepage; }

    friend auto operator==(const Plugin& lhs, const Plugin& rhs) -> bool
    {
        return std::make_tuple(lhs.GetName(), lhs.GetVersion()) == std::make_tuple(rhs.GetName(), rhs.GetVersion());
    }
    friend auto operator!=(const Plugin& lhs, const Plugin& rhs) -> bool { return !(lhs == rhs); }
    friend auto operator<<(std::ostream& os, const Plugin& p) -> std::ostream&
    {
        return os << "'" << p.GetName() << "', "
                  << "version '" << p.GetVersion() << "', "
                  << "maintainer '" << p.GetMaintainer() << "', "
                  << "homepage '" << p.GetHomepage() << "'";
    }
    static auto NoProgramOptions() -> ProgOptions { return boost::none; }

    // device control API, see <fairmq/PluginServices.h>
    using DeviceState = fair::mq::PluginServices::DeviceState;
    using DeviceStateTransition = fair::mq::PluginServices::DeviceStateTransition;
    auto ToDeviceState(const std::string& state) const -> DeviceState { return PluginServices::ToDeviceState(state); }
    auto ToDeviceStateTransition(const std::string& transition) const -> DeviceStateTransition
    {
        return PluginServices::ToDeviceStateTransition(transition);
    }
    auto ToStr(DeviceState state) const -> std::string { return PluginServices::ToStr(state); }
    auto ToStr(DeviceStateTransition transition) const -> std::string { return PluginServices::ToStr(transition); }
    auto GetCurrentDeviceState() const -> DeviceState { return fPluginServices->GetCurrentDeviceState(); }
    auto TakeDeviceControl() -> void { fPluginServices->TakeDeviceControl(fkName); }
    auto StealDeviceControl() -> void { fPluginServices->StealDeviceControl(fkName); }
    auto ReleaseDeviceControl() -> void { fPluginServices->ReleaseDeviceControl(fkName); } // no-op without control
    auto ChangeDeviceState(const DeviceStateTransition next) -> bool { return fPluginServices->ChangeDeviceState(fkName, next); }
    auto SubscribeToDeviceStateChange(std::function<void(DeviceState)> callback) -> void
    {
        fPluginServices->SubscribeToDeviceStateChange(fkName, std::move(callback));
    }
    auto UnsubscribeFromDeviceStateChange() -> void { fPluginServices->UnsubscribeFromDeviceStateChange(fkName); }
    // Not in FairMQ's Plugin (only in its PluginServices): here for convenience.
    auto GetDeviceController() const -> boost::optional<std::string> { return fPluginServices->GetDeviceController(); }
    auto WaitForReleaseDeviceControl() -> void { fPluginServices->WaitForReleaseDeviceControl(); }

    // device config API, see <fairmq/PluginServices.h>
    auto PropertyExists(const std::string& key) -> int { return fPluginServices->PropertyExists(key); }
    template<typename T>
    T GetProperty(const std::string& key) const
    {
        return fPluginServices->GetProperty<T>(key);
    }
    template<typename T>
    T GetProperty(const std::string& key, const T& ifNotFound) const
    {
        return fPluginServices->GetProperty(key, ifNotFound);
    }
    std::string GetPropertyAsString(const std::string& key) const { return fPluginServices->GetPropertyAsString(key); }
    std::string GetPropertyAsString(const std::string& key, const std::string& ifNotFound) const
    {
        return fPluginServices->GetPropertyAsString(key, ifNotFound);
    }
    template<typename T>
    auto SetProperty(const std::string& key, T val) -> void
    {
        fPluginServices->SetProperty(key, std::move(val));
    }
    template<typename T>
    bool UpdateProperty(const std::string& key, T val)
    {
        return fPluginServices->UpdateProperty(key, std::move(val));
    }

  private:
    const std::string fkName;
    const Version fkVersion;
    const std::string fkMaintainer;
    const std::string fkHomepage;
    PluginServices* fPluginServices;
};

namespace detail {

// --- LOG in a plugin library -------------------------------------------------------------------

// A plugin library does not link libfairmq_rs: its LOG reaches the library's logger only where
// the process has it (a program with its own PluginManager), else the device's table or std::clog.
#pragma weak fmq_log_at
// PluginServices' own kind (over a program's ProgOptions and Device, <fairmq/PluginServices.h>)
// calls into the library; a plugin gets the table kind from a device program, which has no
// library: these references stay weak, so the plugin loads there (they are never reached).
#pragma weak fmq_states_change
#pragma weak fmq_states_current
#pragma weak fmq_states_subscribe
#pragma weak fmq_states_unsubscribe
#pragma weak fmq_config_set_value
#pragma weak fmq_config_delete
#pragma weak fmq_channel_connected_peers
#pragma weak fmq_log_cycle_console_severity
#pragma weak fmq_log_cycle_verbosity

// The device loads plugin libraries RTLD_GLOBAL, so a default-visibility inline function of one
// library would serve the others too: what keeps or reads per-library state is hidden.
#define FAIRMQ_RS_PLUGIN_LOCAL __attribute__((visibility("hidden")))

/// The services this library's LOG goes through: its plugin's, from its start until its stop.
FAIRMQ_RS_PLUGIN_LOCAL inline std::atomic<const fmq_plugin_services*> gPluginLogServices{nullptr};

/// FairLogger's severity names as the services' numbers (0 trace .. 6 fatal).
inline int PluginLogSeverity(std::string_view s)
{
    if (s == "trace") return 0;
    if (s.substr(0, 5) == "debug") return 1; // debug, debug1..debug4
    if (s == "state") return 3;
    if (s == "warn" || s == "warning" || s == "alarm") return 4;
    if (s == "error") return 5;
    if (s == "fatal" || s == "critical") return 6;
    return 2; // info, detail, ...
}

/// A LOG line of a plugin: through the device's logger while the plugin runs, else to std::clog.
class FAIRMQ_RS_PLUGIN_LOCAL PluginLogLine
{
  public:
    explicit PluginLogLine(const char* severity)
        : fSeverity(severity)
    {}
    PluginLogLine(const PluginLogLine&) = delete;
    PluginLogLine& operator=(const PluginLogLine&) = delete;
    ~PluginLogLine()
    {
        try {
            const std::string text = fText.str();
            if (const fmq_plugin_services* s = gPluginLogServices.load()) {
                s->log(s->host, PluginLogSeverity(fSeverity), text.c_str());
            } else if (&fmq_log_at != nullptr) { // a program that links the library (see below)
                fmq_log_at(fSeverity, nullptr, 0, nullptr, text.c_str());
            } else {
                std::clog << "[" << fSeverity << "] " << text << std::endl;
            }
        } catch (...) {
            // A log line must not end the program.
        }
    }
    template<typename T>
    PluginLogLine& operator<<(const T& v)
    {
        fText << v;
        return *this;
    }
    PluginLogLine& operator<<(std::ostream& (*manipulator)(std::ostream&))
    {
        fText << manipulator;
        return *this;
    }

  private:
    const char* fSeverity;
    std::ostringstream fText;
};

// --- program options (as an fmq_option table: fairmq_rs_boost_options.hpp) ----------------------

/// The caption of `d` (Boost offers no getter: it is the first line of its help, "CAPTION:").
inline std::string PluginOptionsCaption(const boost::program_options::options_description& d)
{
    std::ostringstream help;
    help << d;
    std::istringstream lines(help.str());
    std::string first;
    std::getline(lines >> std::ws, first);
    if (first.empty() || first.front() == '-' || first.back() != ':') {
        return std::string(); // no caption: the device's "Plugin 'NAME'"
    }
    first.pop_back();
    return first;
}

// --- the descriptor and the instance ------------------------------------------------------------

/// Whether PROGOPTIONS is Plugin::NoProgramOptions: then no Boost.ProgramOptions code is used.
template<auto F>
inline constexpr bool IsNoProgramOptions = false;
template<>
inline constexpr bool IsNoProgramOptions<&Plugin::NoProgramOptions> = true;

/// A descriptor and what it points to, for the life of the process (never freed: the device
/// reads it until it exits).
struct PluginDescriptor
{
    std::string name, maintainer, homepage, title;
    detail::BoostOptionTable options;
    fmq_plugin descriptor{};
};

/// A running plugin: the services wrapper and the plugin made with it.
/// What an instance starts with, so that a program's PluginManager knows one of these.
inline constexpr std::uint64_t kPluginInstanceMagic = 0x666d717273706c67; // "fmqrsplg"

struct PluginInstance
{
    std::uint64_t magic = kPluginInstanceMagic;
    std::unique_ptr<PluginServices> services;
    std::unique_ptr<Plugin> plugin;
};

/// fmq_plugin_start: makes the services wrapper and the plugin (P is REGISTER_FAIRMQ_PLUGIN's).
/// An exception from the plugin's constructor is logged and fails the start (the program exits 1).
template<typename P>
FAIRMQ_RS_PLUGIN_LOCAL int32_t StartPlugin(const fmq_plugin_services* services, void** instance) noexcept
{
    if (!services || !instance || services->abi_version != FMQ_PLUGIN_ABI_VERSION) {
        return 1;
    }
    const fmq_plugin_services* none = nullptr;
    const bool logs = gPluginLogServices.compare_exchange_strong(none, services); // the first plugin of the library
    try {
        auto inst = std::make_unique<PluginInstance>();
        inst->services = std::make_unique<PluginServices>(services, P::Name());
        inst->plugin = P::Make(inst->services.get());
        *instance = inst.release();
        return 0;
    } catch (const std::exception& e) {
        services->log(services->host, 5, e.what());
    } catch (...) {
        services->log(services->host, 5, "the plugin's constructor threw an exception that is no std::exception");
    }
    if (logs) gPluginLogServices.store(nullptr);
    return 1;
}

/// fmq_plugin_stop: deletes the plugin (its destructor joins its threads), then the wrapper.
FAIRMQ_RS_PLUGIN_LOCAL inline void StopPlugin(void* instance) noexcept
{
    std::unique_ptr<PluginInstance> inst(static_cast<PluginInstance*>(instance));
    if (!inst) return;
    const fmq_plugin_services* services = inst->services->GetServices();
    try {
        inst->plugin.reset();
    } catch (...) {
        // Only a destructor declared noexcept(false) gets here; it must not reach the device.
    }
    inst.reset();
    gPluginLogServices.compare_exchange_strong(services, nullptr);
}

/// The descriptor of plugin P, or NULL (said on stderr) if its options cannot be declared.
template<typename P>
FAIRMQ_RS_PLUGIN_LOCAL const fmq_plugin* MakePluginDescriptor() noexcept
{
    try {
        auto d = std::make_unique<PluginDescriptor>();
        d->name = P::Name();
        d->maintainer = P::Maintainer();
        d->homepage = P::Homepage();
        if constexpr (!P::kNoProgramOptions) {
            if (const Plugin::ProgOptions opts = P::ProgramOptions()) {
                d->title = PluginOptionsCaption(*opts);
                d->options = detail::BoostOptionTable(*opts);
            }
        }
        const Plugin::Version v = P::GetVersion();
        fmq_plugin& c = d->descriptor;
        c.abi_version = FMQ_PLUGIN_ABI_VERSION;
        c.name = d->name.c_str();
        c.version.major = static_cast<uint32_t>(v.fkMajor);
        c.version.minor = static_cast<uint32_t>(v.fkMinor);
        c.version.patch = static_cast<uint32_t>(v.fkPatch);
        c.maintainer = d->maintainer.c_str();
        c.homepage = d->homepage.c_str();
        c.options_title = d->title.empty() ? nullptr : d->title.c_str();
        c.options = d->options.table.empty() ? nullptr : d->options.table.data();
        c.n_options = d->options.table.size();
        c.start = &StartPlugin<P>;
        c.stop = &StopPlugin;
        return &d.release()->descriptor;
    } catch (const std::exception& e) {
        std::cerr << "plugin '" << P::Name() << "': its program options: " << e.what() << std::endl;
    } catch (...) {
        std::cerr << "plugin '" << P::Name() << "': its program options threw an exception that is no std::exception" << std::endl;
    }
    return nullptr;
}

template<typename P>
FAIRMQ_RS_PLUGIN_LOCAL const fmq_plugin* PluginEntry() noexcept
{
    static const fmq_plugin* const descriptor = MakePluginDescriptor<P>();
    return descriptor;
}

} // namespace detail
} // namespace fair::mq

/// LOG(severity) << ...; in a plugin source: through the device's logger (the line names the
/// plugin), as the library does not link libfairmq_rs; before the plugin starts and after it
/// stopped, to std::clog. Include this header in plugin sources only (not in a device's).
#undef LOG
#define LOG(severity) ::fair::mq::detail::PluginLogLine(#severity)

/// Exports plugin KLASS as NAME (the library must be libfairmq-plugin-NAME.so): the C ABI's
/// `const fmq_plugin* fmq_plugin_NAME(void)`, whose start makes KLASS(name, version, maintainer,
/// homepage, services) and whose stop deletes it. PROGOPTIONS: a function returning
/// Plugin::ProgOptions, or fair::mq::Plugin::NoProgramOptions.
#define REGISTER_FAIRMQ_PLUGIN(KLASS, NAME, VERSION, MAINTAINER, HOMEPAGE, PROGOPTIONS)                                  \
    struct FairMQPlugin_##NAME                                                                                         \
    {                                                                                                                  \
        static constexpr bool kNoProgramOptions = ::fair::mq::detail::IsNoProgramOptions<&PROGOPTIONS>;               \
        static auto Name() -> const char* { return #NAME; }                                                            \
        static auto GetVersion() -> ::fair::mq::Plugin::Version { return VERSION; }                                    \
        static auto Maintainer() -> std::string { return MAINTAINER; }                                                 \
        static auto Homepage() -> std::string { return HOMEPAGE; }                                                     \
        static auto ProgramOptions() -> ::fair::mq::Plugin::ProgOptions { return PROGOPTIONS(); }                       \
        static auto Make(::fair::mq::PluginServices* pluginServices) -> std::unique_ptr<::fair::mq::Plugin>            \
        {                                                                                                              \
            return std::make_unique<KLASS>(std::string{#NAME}, VERSION, std::string{MAINTAINER}, std::string{HOMEPAGE}, \
                                           pluginServices);                                                            \
        }                                                                                                              \
    };                                                                                                                 \
    extern "C" __attribute__((visibility("default"))) const fmq_plugin* fmq_plugin_##NAME(void) noexcept               \
    {                                                                                                                  \
        return ::fair::mq::detail::PluginEntry<FairMQPlugin_##NAME>();                                                 \
    }
