// A sink written against FairMQ's headers only: receives --max-iterations messages on "data",
// checks each is --text, and reports how many came and how many were right.
#include <fairlogger/Logger.h>
#include <fairmq/Device.h>
#include <fairmq/runDevice.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>

namespace bpo = boost::program_options;

class Sink : public fair::mq::Device
{
  public:
    Sink() { OnData("data", &Sink::HandleData); }

  protected:
    void Init() override { fInitState = GetCurrentStateName(); }
    // FairMQ's Bind/Connect hooks and members: this sink binds its only channel.
    void Bind() override { fHooks += "Bind(" + std::to_string(fChannels.at("data").size()) + ")"; }
    void Connect() override { fHooks += "Connect"; }

    void InitTask() override
    {
        // The state API: a subscriber, and a thread that waits for RUNNING.
        SubscribeToStateChange("compat-sink", [this](fair::mq::State s) {
            std::lock_guard<std::mutex> lock(fStatesMutex);
            fStates += (fStates.empty() ? "" : ">") + GetStateName(s);
        });
        fWatcher = std::thread([this] {
            WaitForState(fair::mq::State::Running);
            fWatcherSawRunning = true;
        });
        fText = fConfig->GetProperty<std::string>("text");
        fMaxIterations = fConfig->GetProperty<std::uint64_t>("max-iterations");
        fair::mq::Channel& data = GetChannel("data");
        fData = &data;
        try {
            GetChannel("no-such-channel"); // a miss: must not move the channels referred to
        } catch (const std::out_of_range&) {
        }
        fMembers = "id " + fId + ", channels " + std::to_string(fChannels.size()) + ", transport " +
                   (fTransportFactory ? "set" : "missing") + ", GetChannel " +
                   (&data == &fChannels.at("data").at(0) ? "refers to fChannels" : "copies");
    }

    bool HandleData(FairMQMessagePtr& msg, int /*index*/)
    {
        if (fReceived == 0) {
            // The sender is connected: ZeroMQ's monitor reports it a moment late at most.
            for (int i = 0; i < 500 && GetNumberOfConnectedPeers("data") == 0; ++i) {
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
            fPeers = std::to_string(GetNumberOfConnectedPeers("data")) + " (channel says " +
                     std::to_string(fData->GetNumberOfConnectedPeers()) + ")";
            // RUNNING accepts no BIND: refused, and the OrThrow variant throws.
            fRefused = !ChangeState(fair::mq::Transition::Bind) && GetCurrentState() == fair::mq::State::Running;
            try {
                ChangeStateOrThrow("BIND");
                fRefused = false;
            } catch (const std::system_error&) { // FairMQ's error code DeviceChangeStateFailed
            }
        }
        ++fReceived;
        if (std::string(static_cast<const char*>(msg->GetData()), msg->GetSize()) == fText) {
            ++fRight;
        }
        return fMaxIterations == 0 || fReceived < fMaxIterations;
    }

    void PostRun() override
    {
        fWatcher.join();
        if (fData != &GetChannel("data") || fData->GetAddress().empty()) fMembers += ", the reference went stale";
        UnsubscribeFromStateChange("compat-sink");
        LOG(info) << "compat sink received " << fReceived << " messages, " << fRight << " right";
        LOG(info) << "compat sink hooks " << fHooks << ", members: " << fMembers;
        LOG(info) << "compat sink peers at the first message: " << fPeers;
        std::lock_guard<std::mutex> lock(fStatesMutex);
        LOG(info) << "compat sink states: init in " << fInitState << ", seen " << fStates << ", watcher "
                  << (fWatcherSawRunning ? "saw RUNNING" : "missed RUNNING") << ", BIND while running "
                  << (fRefused ? "refused" : "accepted");
    }

  private:
    fair::mq::Channel* fData = nullptr;
    std::string fHooks;
    std::string fPeers;
    std::string fMembers;
    std::string fInitState;
    std::mutex fStatesMutex;
    std::string fStates;
    std::thread fWatcher;
    std::atomic<bool> fWatcherSawRunning{false};
    bool fRefused = false;
    std::string fText;
    std::uint64_t fMaxIterations = 0;
    std::uint64_t fReceived = 0;
    std::uint64_t fRight = 0;
};

void addCustomOptions(bpo::options_description& options)
{
    options.add_options()
        ("text", bpo::value<std::string>()->default_value("Hello"), "Text every message must carry")
        ("max-iterations", bpo::value<std::uint64_t>()->default_value(0), "Messages to receive (0: until stopped)");
}

std::unique_ptr<fair::mq::Device> getDevice(fair::mq::ProgOptions& /*config*/) { return std::make_unique<Sink>(); }
