// The receiving side of FairMQ's n-m pattern: every two-part message (id, payload) from
// --num-senders senders has its payload moved out of the received Parts into the Parts kept for
// its id; an id is complete once every sender's payload is there. Ends after --max-iterations
// complete ids.
#include <fairlogger/Logger.h>
#include <fairmq/Device.h>
#include <fairmq/Parts.h>
#include <fairmq/runDevice.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>

namespace bpo = boost::program_options;

class Assembler : public fair::mq::Device
{
  public:
    Assembler() { OnData("data", &Assembler::HandleData); }

  protected:
    void InitTask() override
    {
        fNumSenders = fConfig->GetProperty<std::uint64_t>("num-senders");
        fMaxIterations = fConfig->GetProperty<std::uint64_t>("max-iterations");
    }

    bool HandleData(fair::mq::Parts& parts, int /*index*/)
    {
        std::uint64_t id = 0;
        if (parts.Size() != 2 || parts[0].GetSize() != sizeof(id)) {
            ++fMalformed;
            return true;
        }
        std::memcpy(&id, parts[0].GetData(), sizeof(id));
        auto& kept = fBuffer[id];
        kept.AddPart(std::move(parts.At(1)));
        if (kept.Size() == fNumSenders) {
            for (const auto& p : kept) {
                auto* b = static_cast<const unsigned char*>(p->GetData());
                if (p->GetSize() == 0 || b[0] != id % 251 || b[p->GetSize() - 1] != id % 251) ++fMalformed;
            }
            fBuffer.erase(id);
            ++fComplete;
        }
        return fComplete < fMaxIterations;
    }

    void PostRun() override
    {
        LOG(info) << "compat assembler completed " << fComplete << " ids, " << fMalformed << " malformed, "
                  << fBuffer.size() << " incomplete";
    }

  private:
    std::uint64_t fNumSenders = 1;
    std::uint64_t fMaxIterations = 0;
    std::uint64_t fComplete = 0;
    std::uint64_t fMalformed = 0;
    std::map<std::uint64_t, fair::mq::Parts> fBuffer;
};

void addCustomOptions(bpo::options_description& options)
{
    options.add_options()
        ("num-senders", bpo::value<std::uint64_t>()->default_value(1), "Senders whose payloads make an id complete")
        ("max-iterations", bpo::value<std::uint64_t>()->default_value(1), "Complete ids to wait for");
}

std::unique_ptr<fair::mq::Device> getDevice(fair::mq::ProgOptions& /*config*/) { return std::make_unique<Assembler>(); }
