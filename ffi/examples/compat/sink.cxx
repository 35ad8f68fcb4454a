// A sink written against FairMQ's headers only: receives --max-iterations messages on "data",
// checks each is --text, and reports how many came and how many were right.
#include <fairlogger/Logger.h>
#include <fairmq/Device.h>
#include <fairmq/runDevice.h>

#include <cstdint>
#include <memory>
#include <string>

namespace bpo = boost::program_options;

class Sink : public fair::mq::Device
{
  public:
    Sink() { OnData("data", &Sink::HandleData); }

  protected:
    void InitTask() override
    {
        fText = fConfig->GetProperty<std::string>("text");
        fMaxIterations = fConfig->GetProperty<std::uint64_t>("max-iterations");
    }

    bool HandleData(FairMQMessagePtr& msg, int /*index*/)
    {
        ++fReceived;
        if (std::string(static_cast<const char*>(msg->GetData()), msg->GetSize()) == fText) {
            ++fRight;
        }
        return fMaxIterations == 0 || fReceived < fMaxIterations;
    }

    void PostRun() override { LOG(info) << "compat sink received " << fReceived << " messages, " << fRight << " right"; }

  private:
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
