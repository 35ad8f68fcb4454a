// Sends --max-iterations two-part messages on "data" (FairMQ's Parts): an 8-byte id, then a
// payload of --payload-size bytes; ids count from 0.
#include <fairlogger/Logger.h>
#include <fairmq/Device.h>
#include <fairmq/Parts.h>
#include <fairmq/runDevice.h>

#include <cstdint>
#include <cstring>
#include <memory>

namespace bpo = boost::program_options;

class PartsSender : public fair::mq::Device
{
  protected:
    void InitTask() override
    {
        fMaxIterations = fConfig->GetProperty<std::uint64_t>("max-iterations");
        fPayloadSize = fConfig->GetProperty<std::uint64_t>("payload-size");
    }

    bool ConditionalRun() override
    {
        auto payload = NewMessage(fPayloadSize);
        std::memset(payload->GetData(), static_cast<int>(fSent % 251), fPayloadSize);
        fair::mq::Parts parts(NewSimpleMessage(fSent), std::move(payload));
        if (Send(parts, "data") < 0) {
            return false;
        }
        return ++fSent < fMaxIterations;
    }

    void PostRun() override { LOG(info) << "compat parts sender sent " << fSent << " messages"; }

  private:
    std::uint64_t fMaxIterations = 0;
    std::uint64_t fPayloadSize = 0;
    std::uint64_t fSent = 0;
};

void addCustomOptions(bpo::options_description& options)
{
    options.add_options()
        ("max-iterations", bpo::value<std::uint64_t>()->default_value(1), "Messages to send")
        ("payload-size", bpo::value<std::uint64_t>()->default_value(1000), "Bytes of each payload part");
}

std::unique_ptr<fair::mq::Device> getDevice(fair::mq::ProgOptions& /*config*/) { return std::make_unique<PartsSender>(); }
