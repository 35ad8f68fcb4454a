// fairmq-rs compatibility header: FairMQ's <fairmq/DeviceRunner.h>, running one device in a
// program's own process with its configuration and plugins, and the general options' handling.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
//
// Run() follows FairMQ's sequence (hooks LoadPlugins, SetCustomCmdLineOptions,
// ModifyRawCmdLineArgs, InstantiateDevice; parse; general options; plugins; the state machine in
// this thread). Its controller is the program plugin manager's `control` plugin, which offers
// `--control static` and `none`; <fairmq/runDevice.h> programs have every control mode and
// signal handling.
#pragma once
#include <fairlogger/Logger.h>
#include <fairmq/Device.h>
#include <fairmq/EventManager.h>
#include <fairmq/PluginManager.h>
#include <fairmq/ProgOptions.h>

#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace fair::mq {

class DeviceRunner;

namespace hooks {
struct LoadPlugins : Event<DeviceRunner&> {};
struct SetCustomCmdLineOptions : Event<DeviceRunner&> {};
struct ModifyRawCmdLineArgs : Event<DeviceRunner&> {};
struct InstantiateDevice : Event<DeviceRunner&> {};
} // namespace hooks

class DeviceRunner
{
  public:
    DeviceRunner(int argc, char* const* argv, bool printLogo = true)
        : fRawCmdLineArgs(tools::ToStrVector(argc, argv, false))
        , fConfig()
        , fDevice(nullptr)
        , fPluginManager(fRawCmdLineArgs)
        , fPrintLogo(printLogo)
    {}

    /// FairMQ's launch: returns the exit code (0: the device reached EXITING).
    auto Run() -> int
    {
        fEvents.Emit<hooks::LoadPlugins>(*this);
        fPluginManager.ForEachPluginProgOptions([&](boost::program_options::options_description options) {
            fConfig.AddToCmdLineOptions(options);
        });
        fConfig.AddToCmdLineOptions(PluginManager::ProgramOptions());
        fEvents.Emit<hooks::SetCustomCmdLineOptions>(*this);
        fEvents.Emit<hooks::ModifyRawCmdLineArgs>(*this);
        fConfig.ParseAll(fRawCmdLineArgs, true);
        if (!HandleGeneralOptions(fConfig, fPrintLogo)) return 0;
        fEvents.Emit<hooks::InstantiateDevice>(*this);
        if (!fDevice) {
            LOG(error) << "getDevice(): no valid device provided. Exiting.";
            return 1;
        }
        fDevice->SetConfig(fConfig);
        if (fConfig.Count("print-channels")) {
            LOG(error) << "--print-channels: offered by fairmq-rs device programs (<fairmq/runDevice.h>)";
            return 1;
        }
        fPluginManager.EmplacePluginServices(fConfig, *fDevice);
        fPluginManager.InstantiatePlugins();
        fDevice->RunStateMachine();
        fPluginManager.WaitForPluginsToReleaseDeviceControl();
        return 0;
    }
    /// Run(), with every exception logged and exit code 1.
    auto RunWithExceptionHandlers() -> int
    {
        try {
            return Run();
        } catch (const std::exception& e) {
            LOG(error) << "Uncaught exception reached the top of DeviceRunner: " << e.what();
        } catch (...) {
            LOG(error) << "Uncaught exception reached the top of DeviceRunner.";
        }
        return 1;
    }

    /// --help, --print-options (then false: nothing more to do), --version and --print-channels
    /// (logging off), else the logging options (severity, verbosity, colour, log file;
    /// $FAIRMQ_SEVERITY overrides --severity).
    static bool HandleGeneralOptions(const fair::mq::ProgOptions& config, bool printLogo = true)
    {
        if (config.Count("help")) {
            config.PrintHelp();
            return false;
        }
        if (config.Count("print-options")) {
            config.PrintOptionsRaw();
            return false;
        }
        if (config.Count("print-channels") || config.Count("version")) {
            fair::Logger::SetConsoleSeverity("nolog");
            return true;
        }
        std::string severity = config.GetProperty<std::string>("severity");
        const std::string logFile = config.GetProperty<std::string>("log-to-file");
        const std::string logFileSeverity = config.GetProperty<std::string>("file-severity");
        const bool color = config.GetProperty<bool>("color");
        fair::Logger::SetVerbosity(config.GetProperty<std::string>("verbosity"));
        if (!logFile.empty()) {
            fair::Logger::InitFileSink(logFileSeverity, logFile);
            fair::Logger::SetConsoleSeverity("nolog");
        } else {
            fair::Logger::SetConsoleColor(color);
            if (const char* env = std::getenv("FAIRMQ_SEVERITY")) severity = env;
            if (!severity.empty()) fair::Logger::SetConsoleSeverity(severity);
        }
        if (printLogo) {
            LOG(info) << "fairmq-rs " << fmq_version() << " (FairMQ 1.10 API)";
        }
        return true;
    }

    /// Logs every property change (FairMQ's "device-runner" subscription).
    void SubscribeForConfigChange()
    {
        fConfig.SubscribeAsString("device-runner", [](const std::string& key, std::string value) {
            LOG(debug) << "[config] " << key << " = " << value;
        });
    }
    void UnsubscribeFromConfigChange() { fConfig.UnsubscribeAsString("device-runner"); }

    template<typename H>
    auto AddHook(std::function<void(DeviceRunner&)> hook) -> void
    {
        fEvents.Subscribe<H>("runner", hook);
    }
    template<typename H>
    auto RemoveHook() -> void
    {
        fEvents.Unsubscribe<H>("runner");
    }

    std::vector<std::string> fRawCmdLineArgs;
    fair::mq::ProgOptions fConfig;
    std::unique_ptr<Device> fDevice;
    PluginManager fPluginManager;
    const bool fPrintLogo;

  private:
    EventManager fEvents;
};

} // namespace fair::mq
