// A sampler written against FairMQ's headers only (FairMQ's include paths, older global names,
// the rate limiter): sends --max-iterations copies of --text at --rate messages a second.
#include <fairlogger/Logger.h>
#include <fairmq/Device.h>
#include <fairmq/runDevice.h>
#include <fairmq/tools/RateLimit.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace bpo = boost::program_options;

class Sampler : public FairMQDevice
{
  protected:
    void InitTask() override
    {
        fText = fConfig->GetProperty<std::string>("text");
        fMaxIterations = fConfig->GetProperty<std::uint64_t>("max-iterations");
        fLimiter = std::make_unique<fair::mq::tools::RateLimiter>(fConfig->GetProperty<float>("msg-rate"));
    }

    bool ConditionalRun() override
    {
        FairMQMessagePtr msg(NewSimpleMessage(fText));
        if (Send(msg, "data") < 0) {
            return false;
        }
        ++fSent;
        fLimiter->maybe_sleep();
        return fMaxIterations == 0 || fSent < fMaxIterations;
    }

    void PreRun() override { fStart = std::chrono::steady_clock::now(); }

    void PostRun() override
    {
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - fStart);
        LOG(info) << "compat sampler sent " << fSent << " messages in " << ms.count() << " ms";
    }

  private:
    std::string fText;
    std::uint64_t fMaxIterations = 0;
    std::uint64_t fSent = 0;
    std::unique_ptr<fair::mq::tools::RateLimiter> fLimiter;
    std::chrono::steady_clock::time_point fStart;
};

void addCustomOptions(bpo::options_description& options)
{
    options.add_options()
        ("text", bpo::value<std::string>()->default_value("Hello"), "Text to send")
        ("max-iterations", bpo::value<std::uint64_t>()->default_value(0), "Messages to send (0: until stopped)")
        ("msg-rate", bpo::value<float>()->default_value(1000.0f), "Messages per second (a RateLimiter)");
}

std::unique_ptr<fair::mq::Device> getDevice(fair::mq::ProgOptions& /*config*/) { return std::make_unique<Sampler>(); }
