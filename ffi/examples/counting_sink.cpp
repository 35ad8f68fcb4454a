// A C++ device over libfairmq_rs: receives single messages on "data" until --max-iterations
// arrived, then logs the count and leaves RUNNING.
#include <fairmq_rs.hpp>
#include <fairmq_rs_run_device.hpp>

#include <cstdint>
#include <vector>

namespace bpo = boost::program_options;

struct CountingSink : fair::mq::Device
{
    CountingSink() { OnData("data", &CountingSink::HandleData); }

    void InitTask() override { fMax = fConfig->GetProperty<std::uint64_t>("max-iterations"); }

    bool HandleData(fair::mq::MessagePtr& msg, int /*index*/)
    {
        fBytes += msg->GetSize();
        if (fReceived % 10 == 0) {
            fKept.push_back(std::move(msg)); // FairMQ handlers own their message: keeping it is allowed
        }
        return ++fReceived < fMax;
    }

    void PostRun() override
    {
        LOG(info) << "C++ sink received " << fReceived << " messages, " << fBytes << " bytes";
        std::uint64_t keptBytes = 0;
        for (auto& m : fKept) {
            keptBytes += m->GetSize();
        }
        LOG(info) << "C++ sink kept " << fKept.size() << " messages, " << keptBytes << " bytes";
    }

  private:
    std::uint64_t fMax = 1;
    std::uint64_t fReceived = 0;
    std::uint64_t fBytes = 0;
    std::vector<fair::mq::MessagePtr> fKept;
};

void addCustomOptions(bpo::options_description& options)
{
    options.add_options()("max-iterations", bpo::value<std::uint64_t>()->default_value(1), "Messages to receive");
}

std::unique_ptr<fair::mq::Device> getDevice(fair::mq::ProgOptions&) { return std::make_unique<CountingSink>(); }
