// fairmq-rs compatibility header: FairMQ's <fairmq/PluginServices.h>, what the device offers a plugin.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
//
// Two kinds, one class:
// - PluginServices(config, device): FairMQ's, over a program's own ProgOptions and Device (what
//   fair::mq::PluginManager gives the plugins it starts; tests and controllers use it directly).
//   Controllers are named freely; every FairMQ service is there.
// - PluginServices(table, name): a wrapper around the fmq_plugin_services table a device hands a
//   plugin (include/fairmq_rs.h), so a plugin library needs neither libfairmq_rs nor the device's
//   C++ types. Differences from FairMQ: a plugin acts only as itself (controller ids must be its
//   name); properties travel as text, so GetProperty<T> reads T from text; the table has no
//   GetProperties/SetProperties/DeleteProperty, property subscriptions, channel info, key
//   listing or GetNumberOfConnectedPeers: those throw fair::mq::Error there.
#pragma once
#include <fairmq_rs.hpp>
#include <fairmq/LegacyNames.h>

#include <boost/optional.hpp>
#include <boost/optional/optional_io.hpp>

#include <condition_variable>

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace fair::mq {

namespace plugin_detail {
template<typename T>
struct IsVector : std::false_type {};
template<typename T>
struct IsVector<std::vector<T>> : std::true_type {};

/// A property's text read as a T (a vector: one item per line).
template<typename T>
struct FromText {
    static T Read(const std::string& text, const std::string& key)
    {
        if constexpr (std::is_same<T, std::string>::value) {
            return text;
        } else {
            std::istringstream in(text);
            T v{};
            in >> std::boolalpha >> v;
            if (in.fail()) throw Error("property '" + key + "' has no value of the requested type");
            return v;
        }
    }
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
} // namespace plugin_detail

class PluginServices
{
  public:
    using DeviceState = fair::mq::State;
    using DeviceStateTransition = fair::mq::Transition;

    /// Thrown when another plugin controls the device; the text is the device's (FairMQ's).
    struct DeviceControlError : std::runtime_error
    {
        using std::runtime_error::runtime_error;
    };

    PluginServices() = delete;
    /// FairMQ's services over a program's configuration and device (both outlive this object).
    PluginServices(ProgOptions& config, Device& device)
        : fConfig(&config)
        , fDevice(&device)
    {}
    /// The services of plugin `plugin`; `services` stays valid until the plugin's stop returns,
    /// which outlives this object (REGISTER_FAIRMQ_PLUGIN makes and deletes it).
    PluginServices(const fmq_plugin_services* services, std::string plugin)
        : fServices(services)
        , fPlugin(std::move(plugin))
    {}
    // The device keeps a pointer to this object while it is subscribed to states.
    ~PluginServices()
    {
        std::lock_guard<std::mutex> lock(fSubscribersMtx);
        if (fSubscribed) {
            fServices->unsubscribe_from_state_change(fServices->host);
        }
    }
    PluginServices(const PluginServices&) = delete;
    PluginServices(PluginServices&&) = delete;
    PluginServices& operator=(const PluginServices&) = delete;
    PluginServices& operator=(PluginServices&&) = delete;

    // Control API

    /// @throw std::out_of_range for a name that is no state (as FairMQ's)
    static auto ToDeviceState(const std::string& state) -> DeviceState
    {
        try {
            return GetState(state);
        } catch (const Error& e) {
            throw std::out_of_range(e.what());
        }
    }
    /// @throw std::out_of_range for a name that is no transition (as FairMQ's)
    static auto ToDeviceStateTransition(const std::string& transition) -> DeviceStateTransition
    {
        try {
            return GetTransition(transition);
        } catch (const Error& e) {
            throw std::out_of_range(e.what());
        }
    }
    static auto ToStr(DeviceState state) -> std::string { return GetStateName(state); }
    static auto ToStr(DeviceStateTransition transition) -> std::string { return GetTransitionName(transition); }

    auto GetCurrentDeviceState() const -> DeviceState
    {
        if (fDevice) return fDevice->GetCurrentState();
        const int32_t s = fServices->current_state(fServices->host);
        return s >= 0 && s <= static_cast<int32_t>(DeviceState::Exiting) ? static_cast<DeviceState>(s) : DeviceState::Undefined;
    }

    /// Becomes the device's controller.
    /// @throw DeviceControlError if another plugin is
    auto TakeDeviceControl(const std::string& controller) -> void
    {
        if (fDevice) {
            std::lock_guard<std::mutex> lock(fControlMtx);
            if (fController && *fController != controller) {
                throw DeviceControlError("Plugin '" + controller + "' is not allowed to take over control. Currently, plugin '" +
                                         *fController + "' has taken control.");
            }
            fController = controller;
            return;
        }
        Self(controller);
        Check(fServices->take_device_control(fServices->host), "TakeDeviceControl");
    }
    /// Becomes the controller whoever is (e.g. to shut the device down on a signal).
    auto StealDeviceControl(const std::string& controller) -> void
    {
        if (fDevice) {
            std::lock_guard<std::mutex> lock(fControlMtx);
            fController = controller;
            return;
        }
        Self(controller);
        Check(fServices->steal_device_control(fServices->host), "StealDeviceControl");
    }
    /// Ends the plugin's control; nothing happens if it has none (as FairMQ's, which only logs).
    auto ReleaseDeviceControl(const std::string& controller) -> void
    {
        if (fDevice) {
            {
                std::lock_guard<std::mutex> lock(fControlMtx);
                if (fController == controller) {
                    fController.reset();
                } else {
                    LOG(debug) << "Plugin '" << controller << "' cannot release control because it has not taken over control.";
                }
            }
            fControlReleased.notify_all();
            return;
        }
        Self(controller);
        Check(fServices->release_device_control(fServices->host), "ReleaseDeviceControl");
    }
    auto GetDeviceController() const -> boost::optional<std::string>
    {
        if (fDevice) {
            std::lock_guard<std::mutex> lock(fControlMtx);
            return fController ? boost::optional<std::string>(*fController) : boost::none;
        }
        auto c = ReadText([this](char* buf, size_t cap, size_t* len) { return fServices->device_controller(fServices->host, buf, cap, len); },
                          "GetDeviceController");
        return c ? boost::optional<std::string>(std::move(*c)) : boost::none;
    }
    /// Blocks until no plugin controls the device.
    auto WaitForReleaseDeviceControl() -> void
    {
        if (fDevice) {
            std::unique_lock<std::mutex> lock(fControlMtx);
            fControlReleased.wait(lock, [this] { return !fController; });
            return;
        }
        Check(fServices->wait_for_release_device_control(fServices->host, -1), "WaitForReleaseDeviceControl");
    }
    /// Requests a transition: false if the current state does not take it (or another one is
    /// pending). With no controller, the plugin becomes it.
    /// @throw DeviceControlError if another plugin controls the device
    auto ChangeDeviceState(const std::string& controller, DeviceStateTransition next) -> bool
    {
        if (fDevice) {
            {
                std::lock_guard<std::mutex> lock(fControlMtx);
                if (!fController) fController = controller; // control taken implicitly
                if (*fController != controller) {
                    throw DeviceControlError("Plugin '" + controller + "' is not allowed to change device states. Currently, plugin '" +
                                             *fController + "' has taken control.");
                }
            }
            return fDevice->ChangeState(next);
        }
        Self(controller);
        const fmq_plugin_result r = fServices->change_state(fServices->host, static_cast<int32_t>(next));
        if (r == FMQ_PLUGIN_REFUSED) {
            return false;
        }
        Check(r, "ChangeDeviceState");
        return true;
    }

    /// Calls `callback` at the start of every new state, on the device's state thread; a second
    /// subscription of `subscriber` replaces its first. An exception from `callback` is logged
    /// and goes no further (it must not cross into the device).
    auto SubscribeToDeviceStateChange(const std::string& subscriber, std::function<void(DeviceState)> callback) -> void
    {
        if (fDevice) {
            fDevice->SubscribeToStateChange(subscriber, std::move(callback));
            return;
        }
        std::lock_guard<std::mutex> lock(fSubscribersMtx);
        fSubscribers[subscriber] = std::make_shared<std::function<void(DeviceState)>>(std::move(callback));
        if (!fSubscribed) {
            Check(fServices->subscribe_to_state_change(fServices->host, &PluginServices::OnState, this), "SubscribeToDeviceStateChange");
            fSubscribed = true;
        }
    }
    /// Ends `subscriber`'s subscription (a callback already running may still finish).
    auto UnsubscribeFromDeviceStateChange(const std::string& subscriber) -> void
    {
        if (fDevice) {
            fDevice->UnsubscribeFromStateChange(subscriber);
            return;
        }
        std::lock_guard<std::mutex> lock(fSubscribersMtx);
        fSubscribers.erase(subscriber);
        if (fSubscribers.empty() && fSubscribed) {
            Check(fServices->unsubscribe_from_state_change(fServices->host), "UnsubscribeFromDeviceStateChange");
            fSubscribed = false;
        }
    }

    // Config API: values travel as text (lists: one item per line).

    auto PropertyExists(const std::string& key) const -> bool
    {
        if (fConfig) return fConfig->Count(key) > 0;
        return fServices->property_exists(fServices->host, key.c_str());
    }

    /// Sets `key`, read as the type the property has (a new property is text).
    template<typename T>
    auto SetProperty(const std::string& key, T val) -> void
    {
        if (fConfig) {
            fConfig->SetProperty(key, std::move(val));
            return;
        }
        const std::string text = ToText(val);
        Check(fServices->set_property(fServices->host, key.c_str(), text.c_str()), "SetProperty");
    }
    /// Sets `key` if it exists; false if it does not.
    template<typename T>
    bool UpdateProperty(const std::string& key, T val)
    {
        if (fConfig) return fConfig->UpdateProperty(key, std::move(val));
        if (!PropertyExists(key)) {
            return false;
        }
        SetProperty(key, std::move(val));
        return true;
    }

    /// @throw fair::mq::Error if there is no such key or its value is no T
    template<typename T>
    auto GetProperty(const std::string& key) const -> T
    {
        if (fConfig) return fConfig->GetProperty<T>(key);
        auto text = Property(key);
        if (!text) {
            throw Error("Config has no key: " + key);
        }
        return plugin_detail::FromText<T>::Read(*text, key);
    }
    template<typename T>
    T GetProperty(const std::string& key, const T& ifNotFound) const
    {
        if (fConfig) return fConfig->GetProperty<T>(key, ifNotFound);
        auto text = Property(key);
        return text ? plugin_detail::FromText<T>::Read(*text, key) : ifNotFound;
    }
    auto GetPropertyAsString(const std::string& key) const -> std::string
    {
        if (fConfig) return fConfig->GetPropertyAsString(key);
        return GetProperty<std::string>(key);
    }
    auto GetPropertyAsString(const std::string& key, const std::string& ifNotFound) const -> std::string
    {
        if (fConfig) return fConfig->GetPropertyAsString(key, ifNotFound);
        return GetProperty<std::string>(key, ifNotFound);
    }
    // The rest of FairMQ's configuration services: a program's own services only.
    auto SetProperties(const fair::mq::Properties& props) -> void { Config("SetProperties").SetProperties(props); }
    auto UpdateProperties(const fair::mq::Properties& input) -> bool { return Config("UpdateProperties").UpdateProperties(input); }
    auto DeleteProperty(const std::string& key) -> void { Config("DeleteProperty").DeleteProperty(key); }
    auto GetProperties(const std::string& q) const -> fair::mq::Properties { return Config("GetProperties").GetProperties(q); }
    auto GetPropertiesStartingWith(const std::string& q) const -> fair::mq::Properties
    {
        return Config("GetPropertiesStartingWith").GetPropertiesStartingWith(q);
    }
    auto GetPropertiesAsString(const std::string& q) const -> std::map<std::string, std::string>
    {
        return Config("GetPropertiesAsString").GetPropertiesAsString(q);
    }
    auto GetPropertiesAsStringStartingWith(const std::string& q) const -> std::map<std::string, std::string>
    {
        return Config("GetPropertiesAsStringStartingWith").GetPropertiesAsStringStartingWith(q);
    }
    auto GetChannelInfo() const -> std::unordered_map<std::string, int> { return Config("GetChannelInfo").GetChannelInfo(); }
    auto GetPropertyKeys() const -> std::vector<std::string> { return Config("GetPropertyKeys").GetPropertyKeys(); }
    template<typename T>
    auto SubscribeToPropertyChange(const std::string& subscriber, std::function<void(const std::string& key, T)> callback) const
        -> void
    {
        Config("SubscribeToPropertyChange").template Subscribe<T>(subscriber, std::move(callback));
    }
    template<typename T>
    auto UnsubscribeFromPropertyChange(const std::string& subscriber) -> void
    {
        Config("UnsubscribeFromPropertyChange").template Unsubscribe<T>(subscriber);
    }
    auto SubscribeToPropertyChangeAsString(const std::string& subscriber,
                                           std::function<void(const std::string& key, std::string)> callback) const -> void
    {
        Config("SubscribeToPropertyChangeAsString").SubscribeAsString(subscriber, std::move(callback));
    }
    auto UnsubscribeFromPropertyChangeAsString(const std::string& subscriber) -> void
    {
        Config("UnsubscribeFromPropertyChangeAsString").UnsubscribeAsString(subscriber);
    }
    auto GetNumberOfConnectedPeers(const std::string& channelName, int index = 0) -> unsigned long
    {
        if (!fDevice) throw Error("GetNumberOfConnectedPeers: not available to a plugin of a fairmq-rs device program");
        return fDevice->GetNumberOfConnectedPeers(channelName, index);
    }
    auto CycleLogConsoleSeverityUp() -> void { fmq_log_cycle_console_severity(true); }
    auto CycleLogConsoleSeverityDown() -> void { fmq_log_cycle_console_severity(false); }
    auto CycleLogVerbosityUp() -> void { fmq_log_cycle_verbosity(true); }
    auto CycleLogVerbosityDown() -> void { fmq_log_cycle_verbosity(false); }

    /// The plugin's name (fairmq-rs).
    auto GetPluginName() const -> const std::string& { return fPlugin; }
    /// The device's services table (fairmq-rs: for what this class does not wrap).
    auto GetServices() const -> const fmq_plugin_services* { return fServices; }

  private:
    using Callback = std::shared_ptr<std::function<void(DeviceState)>>;

    /// The program's configuration; Error in a plugin of a device program (its table has none).
    ProgOptions& Config(const char* what) const
    {
        if (!fConfig) throw Error(std::string(what) + ": not available to a plugin of a fairmq-rs device program");
        return *fConfig;
    }

    /// The C ABI acts for the plugin that was started: it cannot act as another.
    void Self(const std::string& id) const
    {
        if (id != fPlugin) {
            throw DeviceControlError("Plugin '" + fPlugin + "' cannot act as '" + id + "': in fairmq-rs a plugin controls the device only as itself.");
        }
    }
    std::string LastError() const
    {
        const char* e = fServices->last_error();
        return e ? e : "";
    }
    void Check(fmq_plugin_result r, const char* what) const
    {
        if (r == FMQ_PLUGIN_OK) {
            return;
        }
        if (r == FMQ_PLUGIN_ERROR_CONTROL) {
            throw DeviceControlError(LastError());
        }
        throw Error(std::string(what) + ": " + LastError());
    }
    /// Text a service writes into a buffer; none for FMQ_PLUGIN_ERROR_NOT_FOUND.
    template<typename F>
    std::optional<std::string> ReadText(F&& read, const char* what) const
    {
        std::string buf(256, '\0');
        for (;;) {
            size_t len = 0;
            const fmq_plugin_result r = read(buf.data(), buf.size(), &len);
            if (r == FMQ_PLUGIN_OK) {
                buf.resize(len);
                return buf;
            }
            if (r == FMQ_PLUGIN_ERROR_NOT_FOUND) {
                return std::nullopt;
            }
            if (r == FMQ_PLUGIN_ERROR_BUFFER && len + 1 > buf.size()) {
                buf.resize(len + 1);
                continue;
            }
            Check(r, what);
        }
    }
    std::optional<std::string> Property(const std::string& key) const
    {
        return ReadText([&](char* buf, size_t cap, size_t* len) { return fServices->get_property(fServices->host, key.c_str(), buf, cap, len); },
                        "GetProperty");
    }

    template<typename T>
    static std::string ToText(const T& v)
    {
        if constexpr (plugin_detail::IsVector<T>::value) {
            std::string lines;
            for (size_t i = 0; i < v.size(); ++i) {
                lines += (i ? "\n" : "") + ToText(v[i]);
            }
            return lines;
        } else if constexpr (std::is_convertible<const T&, std::string>::value) {
            return std::string(v);
        } else {
            std::ostringstream text;
            if constexpr (std::is_floating_point<T>::value) {
                text.precision(std::numeric_limits<T>::max_digits10);
            }
            text << std::boolalpha << v;
            return text.str();
        }
    }

    /// The device's state callback (fmq_plugin_state_callback): calls the subscribers outside the
    /// lock, so that they may subscribe, unsubscribe or change the state. A subscriber that throws
    /// is logged and makes the callback fail, which takes the device to ERROR (as in FairMQ).
    static int32_t OnState(int32_t state, void* user) noexcept
    {
        auto* self = static_cast<PluginServices*>(user);
        std::vector<Callback> callbacks;
        try {
            std::lock_guard<std::mutex> lock(self->fSubscribersMtx);
            for (auto& s : self->fSubscribers) {
                callbacks.push_back(s.second);
            }
        } catch (...) {
            return 1; // out of memory: this state goes unheard
        }
        if (state < 0 || state > static_cast<int32_t>(DeviceState::Exiting)) {
            return 0;
        }
        const auto s = static_cast<DeviceState>(state);
        int32_t failed = 0;
        for (auto& cb : callbacks) {
            try {
                (*cb)(s);
            } catch (const std::exception& e) {
                self->LogCallbackError(s, e.what());
                failed = 1;
            } catch (...) {
                self->LogCallbackError(s, "an exception that is no std::exception");
                failed = 1;
            }
        }
        return failed;
    }
    void LogCallbackError(DeviceState s, const char* what) const noexcept
    {
        try {
            const std::string text = "state callback entering " + ToStr(s) + " threw: " + what;
            fServices->log(fServices->host, 5, text.c_str());
        } catch (...) {
            fServices->log(fServices->host, 5, what);
        }
    }

    // A program's own services (FairMQ's kind).
    ProgOptions* fConfig = nullptr;
    Device* fDevice = nullptr;
    mutable std::mutex fControlMtx;
    std::condition_variable fControlReleased;
    std::optional<std::string> fController;
    // A plugin's view of a device program's table.
    const fmq_plugin_services* fServices = nullptr;
    const std::string fPlugin;
    std::mutex fSubscribersMtx;
    std::map<std::string, Callback> fSubscribers;
    bool fSubscribed = false;
};

} // namespace fair::mq
