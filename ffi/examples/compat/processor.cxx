// A processor written against FairMQ's headers only: every message it receives on "data1" it
// moves, uncopied, into a Parts and sends on "data2"; it reports how many it forwarded.
#include <fairlogger/Logger.h>
#include <fairmq/Device.h>
#include <fairmq/Parts.h>
#include <fairmq/runDevice.h>

#include <cstdint>
#include <memory>

namespace bpo = boost::program_options;

class Processor : public fair::mq::Device
{
  public:
    Processor() { OnData("data1", &Processor::HandleData); }

  protected:
    bool HandleData(fair::mq::MessagePtr& msg, int /*index*/)
    {
        fair::mq::Parts out(std::move(msg));
        if (Send(out, "data2") < 0) {
            return false;
        }
        ++fForwarded;
        return true;
    }

    void PostRun() override { LOG(info) << "compat processor " << fId << " forwarded " << fForwarded << " messages"; }

  private:
    std::uint64_t fForwarded = 0;
};

void addCustomOptions(bpo::options_description& /*options*/) {}

std::unique_ptr<fair::mq::Device> getDevice(fair::mq::ProgOptions& /*config*/) { return std::make_unique<Processor>(); }
