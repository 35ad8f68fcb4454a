// A sampler written against FairMQ's headers only (FairMQ's include paths, older global names,
// the rate limiter): sends --max-iterations copies of --text at --rate messages a second.
#include <boost/program_options.hpp> // as FairMQ sources often do: the real Boost, no clash
#include <fairlogger/Logger.h>
#include <fairmq/Device.h>
#include <fairmq/runDevice.h>
#include <fairmq/tools/RateLimit.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace bpo = boost::program_options;

class Sampler : public FairMQDevice
{
  protected:
    void InitTask() override
    {
        CheckConfig(*GetConfig());
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
    // ProgOptions as FairMQ's: counts, typed reads with and without defaults, setting, listing.
    static void CheckConfig(fair::mq::ProgOptions& config)
    {
        auto fail = [](const std::string& what) { throw std::runtime_error("config check failed: " + what); };
        if (config.Count("text") != 1 || config.Count("no-such-key") != 0) fail("Count");
        if (config.GetProperty<double>("ratio") != 0.1) fail("a double option's default, every digit");
        if (config.GetProperty<long long>("big") != 5000000000LL) fail("a 64-bit option's default");
        if (config.GetProperty<bool>("switch")) fail("a bool_switch not given");
        if (config.Count("flag") && !config.GetProperty<bool>("flag")) fail("a switch given");
        fair::mq::tools::RateLimiter unlimited(0);
        unlimited.maybe_sleep(); // a rate of 0: no limit, as FairMQ's
        if (config.GetValue<int>("no-such-key") != 0 || config.GetProperty<int>("no-such-key", 7) != 7) fail("defaults");
        // One subscriber listening for text, for uint64_t and for std::string at once.
        std::string heard, text;
        std::uint64_t answer = 0;
        config.SubscribeAsString("compat", [&](const std::string& key, std::string value) { heard += key + "=" + value + ";"; });
        config.Subscribe<std::uint64_t>("compat", [&](const std::string&, std::uint64_t v) { answer = v; });
        config.Subscribe<std::string>("compat", [&](const std::string&, std::string v) { text = v; });
        config.SetProperty<std::uint64_t>("compat-answer", 42);
        config.SetProperty<std::string>("compat-text", "set here");
        config.UnsubscribeAsString("compat");
        config.Unsubscribe<std::uint64_t>("compat");
        config.Unsubscribe<std::string>("compat");
        config.SetProperty<std::uint64_t>("compat-answer", 42);
        if (heard != "compat-answer=42;compat-text=set here;" || answer != 42 || text != "set here") {
            fail("Subscribe: heard '" + heard + "', text '" + text + "'");
        }
        if (config.GetProperty<std::uint64_t>("compat-answer") != 42 || config.GetPropertyAsString("compat-text") != "set here") fail("SetProperty");
        auto chans = config.GetPropertiesAsStringStartingWith("chans.data.0.");
        const std::string method = chans.count("chans.data.0.method") ? chans["chans.data.0.method"] : "";
        if ((method != "connect" && method != "bind") || method != config.GetPropertyAsString("chans.data.0.method")) {
            fail("StartingWith");
        }
        auto compat = config.GetPropertiesAsString("compat-.*"); // the whole key matches, as in FairMQ
        if (compat.size() != 2 || compat["compat-answer"] != "42") fail("GetPropertiesAsString");
        bool threw = false;
        try {
            config.GetProperty<std::string>("no-such-key");
        } catch (const fair::mq::Error&) {
            threw = true;
        }
        if (!threw) fail("a missing key throws");
        // Vectors: several tokens and occurrences, and a default.
        if (config.GetProperty<std::vector<int>>("weights") != std::vector<int>{1, 2}) fail("a vector's default");
        if (config.Count("tags")) {
            std::string tags;
            for (const auto& t : config.GetProperty<std::vector<std::string>>("tags")) tags += "<" + t + ">";
            LOG(info) << "compat vector option: " << tags;
        }
        LOG(info) << "compat config checks passed";
    }

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
        ("msg-rate", bpo::value<float>()->default_value(1000.0f), "Messages per second (a RateLimiter)")
        ("ratio", bpo::value<double>()->default_value(0.1), "A double, read back in InitTask")
        ("big", bpo::value<long long>()->default_value(5000000000LL), "A 64-bit integer, read back in InitTask")
        ("switch", bpo::bool_switch(), "A bool_switch, not given")
        ("flag", "A switch without value")
        ("tags", bpo::value<std::vector<std::string>>()->multitoken()->composing(), "Texts: several tokens, may repeat")
        ("weights", bpo::value<std::vector<int>>()->multitoken()->default_value(std::vector<int>{1, 2}, "1 2"),
         "Integers, with a default");
}

std::unique_ptr<fair::mq::Device> getDevice(fair::mq::ProgOptions& config)
{
    // The configuration is parsed and logging set up before getDevice, as in FairMQ.
    LOG(info) << "getDevice: text is '" << config.GetProperty<std::string>("text") << "'";
    return std::make_unique<Sampler>();
}
