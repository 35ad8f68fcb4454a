// A request-reply client written against FairMQ's headers only: sends --max-iterations requests on
// "data" (a REQ channel), each waiting for its reply, and checks each reply answers its request.
#include <fairlogger/Logger.h>
#include <fairmq/Device.h>
#include <fairmq/runDevice.h>

#include <cstdint>
#include <memory>
#include <string>

namespace bpo = boost::program_options;

class Client : public fair::mq::Device
{
  protected:
    void InitTask() override { fMaxIterations = fConfig->GetProperty<std::uint64_t>("max-iterations"); }

    bool ConditionalRun() override
    {
        const std::string request = "request " + std::to_string(fSent);
        auto req = NewSimpleMessage(request);
        auto rep = NewMessage();
        if (Send(req, "data") < 0 || Receive(rep, "data") < 0) {
            return false;
        }
        ++fSent;
        if (std::string(static_cast<const char*>(rep->GetData()), rep->GetSize()) == "reply to " + request) {
            ++fAnswered;
        }
        return fSent < fMaxIterations;
    }

    void PostRun() override { LOG(info) << "compat client sent " << fSent << " requests, " << fAnswered << " answered"; }

  private:
    std::uint64_t fMaxIterations = 0;
    std::uint64_t fSent = 0;
    std::uint64_t fAnswered = 0;
};

void addCustomOptions(bpo::options_description& options)
{
    options.add_options()("max-iterations", bpo::value<std::uint64_t>()->default_value(1), "Requests to send");
}

std::unique_ptr<fair::mq::Device> getDevice(fair::mq::ProgOptions& /*config*/) { return std::make_unique<Client>(); }
