// A request-reply server written against FairMQ's headers only: answers every request on "data"
// (a REP channel) with "reply to <request>", until --max-iterations requests were answered.
#include <fairlogger/Logger.h>
#include <fairmq/Device.h>
#include <fairmq/runDevice.h>

#include <cstdint>
#include <memory>
#include <string>

namespace bpo = boost::program_options;

class Server : public fair::mq::Device
{
  public:
    Server() { OnData("data", &Server::HandleData); }

  protected:
    void InitTask() override { fMaxIterations = fConfig->GetProperty<std::uint64_t>("max-iterations"); }

    bool HandleData(fair::mq::MessagePtr& req, int /*index*/)
    {
        auto reply = NewSimpleMessage("reply to " + std::string(static_cast<const char*>(req->GetData()), req->GetSize()));
        if (Send(reply, "data") < 0) {
            return false;
        }
        return ++fAnswered < fMaxIterations;
    }

    void PostRun() override { LOG(info) << "compat server answered " << fAnswered << " requests"; }

  private:
    std::uint64_t fMaxIterations = 0;
    std::uint64_t fAnswered = 0;
};

void addCustomOptions(bpo::options_description& options)
{
    options.add_options()("max-iterations", bpo::value<std::uint64_t>()->default_value(1), "Requests to answer");
}

std::unique_ptr<fair::mq::Device> getDevice(fair::mq::ProgOptions& /*config*/) { return std::make_unique<Server>(); }
