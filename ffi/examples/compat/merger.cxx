// A merger written against FairMQ's headers only: polls its two input channels "in1" and "in2"
// (FairMQ's Poller) and receives from whichever has input, until --max-iterations messages came.
#include <fairlogger/Logger.h>
#include <fairmq/Device.h>
#include <fairmq/Poller.h>
#include <fairmq/runDevice.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace bpo = boost::program_options;

class Merger : public fair::mq::Device
{
  protected:
    void InitTask() override
    {
        fMaxIterations = fConfig->GetProperty<std::uint64_t>("max-iterations");
        if (fConfig->GetProperty<int>("sources") != 2) throw std::runtime_error("--sources must be 2");
    }

    void Run() override
    {
        auto poller = NewPoller("in1", "in2");
        const std::string names[2] = {"in1", "in2"};
        while (!NewStatePending() && fReceived[0] + fReceived[1] < fMaxIterations) {
            poller->Poll(100);
            for (int c = 0; c < 2; ++c) {
                if (!poller->CheckInput(names[c], 0)) continue;
                auto msg = NewMessageFor(names[c], 0);
                if (Receive(msg, names[c], 0, 0) >= 0) ++fReceived[c];
            }
        }
    }

    void PostRun() override
    {
        LOG(info) << "compat merger received " << fReceived[0] << " on in1 and " << fReceived[1] << " on in2";
    }

  private:
    std::uint64_t fMaxIterations = 0;
    std::uint64_t fReceived[2] = {0, 0};
};

void addCustomOptions(bpo::options_description& options)
{
    options.add_options()
        ("max-iterations", bpo::value<std::uint64_t>()->default_value(1), "Messages to receive in all")
        ("sources", bpo::value<int>()->required(), "Input channels (must be 2; a required option)");
}

std::unique_ptr<fair::mq::Device> getDevice(fair::mq::ProgOptions& /*config*/) { return std::make_unique<Merger>(); }
