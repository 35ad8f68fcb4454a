// A device plugin in C++ as FairMQ users write it (FairMQ's examples/custom-controller), built
// against the compatibility headers and loaded with `-P mycontroller`:
//   c++ -std=c++17 -fPIC -shared -I<prefix>/include/compat -I<prefix>/include cpp_plugin.cpp
//       -o libfairmq-plugin-mycontroller.so -lboost_program_options
//   <device> --id x -S <dir of the library> -P mycontroller --mycontroller-run-time 500
// It takes control of the device, drives it to RUNNING, keeps it there --mycontroller-run-time
// ms (or until the device ends RUNNING itself), then shuts it down to EXITING and releases control.
// On a signal the builtin control plugin steals control and shuts the device down itself.
#include <fairmq/Plugin.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <queue>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

namespace example {

/// The states the device entered, in order (a small FairMQ StateQueue).
class StateQueue
{
  public:
    using State = fair::mq::State;

    auto Push(State state) -> void
    {
        {
            std::lock_guard<std::mutex> lock(fMtx);
            fStates.push(state);
        }
        fCV.notify_one();
    }

    auto WaitForNext() -> State
    {
        std::unique_lock<std::mutex> lock(fMtx);
        fCV.wait(lock, [this] { return !fStates.empty(); });
        return Pop();
    }

    /// The next state, if one comes within `timeout`.
    auto WaitForNext(std::chrono::milliseconds timeout) -> std::pair<bool, State>
    {
        std::unique_lock<std::mutex> lock(fMtx);
        if (!fCV.wait_for(lock, timeout, [this] { return !fStates.empty(); })) {
            return {false, State::Undefined};
        }
        return {true, Pop()};
    }

  private:
    auto Pop() -> State
    {
        State s = fStates.front();
        fStates.pop();
        return s;
    }

    std::queue<State> fStates;
    std::mutex fMtx;
    std::condition_variable fCV;
};

/// The device went to ERROR or EXITING while the controller waited for another state.
struct DeviceErrorState : std::runtime_error
{
    using std::runtime_error::runtime_error;
};

class MyController : public fair::mq::Plugin
{
  public:
    MyController(const std::string& name,
                 const Plugin::Version version,
                 const std::string& maintainer,
                 const std::string& homepage,
                 fair::mq::PluginServices* pluginServices)
        : Plugin(name, version, maintainer, homepage, pluginServices)
        , fRunTime(GetProperty<int>("mycontroller-run-time"))
    {
        TakeDeviceControl();
        SubscribeToDeviceStateChange([this](DeviceState newState) { fStateQueue.Push(newState); });
        fControllerThread = std::thread(&MyController::Control, this);
    }

    ~MyController() override
    {
        if (fControllerThread.joinable()) {
            fControllerThread.join();
        }
        UnsubscribeFromDeviceStateChange();
        ReleaseDeviceControl();
    }

  private:
    auto Control() -> void
    try {
        using Transition = DeviceStateTransition;
        using State = DeviceState;

        WaitForState(State::Idle);
        Step(Transition::InitDevice, State::InitializingDevice);
        Step(Transition::CompleteInit, State::Initialized);
        Step(Transition::Bind, State::Bound);
        Step(Transition::Connect, State::DeviceReady);
        Step(Transition::InitTask, State::Ready);
        Step(Transition::Run, State::Running);

        LOG(info) << "MyController: device is " << ToStr(GetCurrentDeviceState()) << ", stopping it in " << fRunTime << " ms";
        auto next = fStateQueue.WaitForNext(std::chrono::milliseconds(fRunTime));
        if (!next.first) {
            Step(Transition::Stop, State::Ready);
        } else if (next.second != State::Ready) {
            throw DeviceErrorState("device left RUNNING for " + ToStr(next.second));
        } // else the device ended RUNNING itself

        Step(Transition::ResetTask, State::DeviceReady);
        Step(Transition::ResetDevice, State::Idle);
        Step(Transition::End, State::Exiting);
        LOG(info) << "MyController: device is " << ToStr(State::Exiting) << ", releasing control";
        ReleaseDeviceControl();
    } catch (fair::mq::PluginServices::DeviceControlError const& e) {
        // Another plugin took control (the builtin control plugin on a signal): it shuts down.
        LOG(debug) << e.what();
    } catch (std::exception const& e) {
        LOG(error) << "MyController: " << e.what();
        ReleaseDeviceControl();
    }

    /// Requests `transition` and waits until the device entered `state`.
    auto Step(DeviceStateTransition transition, DeviceState state) -> void
    {
        if (!ChangeDeviceState(transition)) {
            throw std::runtime_error("transition " + ToStr(transition) + " refused in " + ToStr(GetCurrentDeviceState()));
        }
        WaitForState(state);
    }

    auto WaitForState(DeviceState state) -> void
    {
        for (auto s = fStateQueue.WaitForNext(); s != state; s = fStateQueue.WaitForNext()) {
            if (s == DeviceState::Error || s == DeviceState::Exiting) {
                throw DeviceErrorState("device entered " + ToStr(s) + " while waiting for " + ToStr(state));
            }
        }
    }

    const int fRunTime;
    StateQueue fStateQueue;
    std::thread fControllerThread;
};

auto MyControllerProgramOptions() -> fair::mq::Plugin::ProgOptions
{
    namespace po = boost::program_options;
    auto pluginOptions = po::options_description{"MyController Plugin"};
    pluginOptions.add_options()
        ("mycontroller-run-time", po::value<int>()->default_value(1000), "How long to keep the device in RUNNING (ms).");
    return pluginOptions;
}

} // namespace example

REGISTER_FAIRMQ_PLUGIN(example::MyController,                    // Class name
                       mycontroller,                             // Plugin name (string, lower case chars only)
                       (fair::mq::Plugin::Version{0, 42, 0}),    // Version
                       "Mr. Dummy <dummy@test.net>",             // Maintainer
                       "https://git.test.net/mycontroller.git",  // Homepage
                       example::MyControllerProgramOptions)      // Free function which declares custom program options for the plugin
