// FairMQ's copy-push pattern written against FairMQ's headers only: each message is made over a
// buffer of the device's own (NewMessage with a free function, no copy where the transport can
// avoid it), and a copy of it (Message::Copy) goes to every sub-channel of "data".
#include <fairlogger/Logger.h>
#include <fairmq/Device.h>
#include <fairmq/runDevice.h>

#include <cstdint>
#include <memory>
#include <string>

namespace bpo = boost::program_options;

class Copier : public FairMQDevice
{
  protected:
    void InitTask() override
    {
        fText = fConfig->GetProperty<std::string>("text");
        fMaxIterations = fConfig->GetProperty<std::uint64_t>("max-iterations");
    }

    bool ConditionalRun() override
    {
        auto* text = new std::string(fText);
        FairMQMessagePtr msg(NewMessage(
            const_cast<char*>(text->data()), text->size(),
            [](void* /*data*/, void* object) { delete static_cast<std::string*>(object); }, text));
        const int outputs = static_cast<int>(fChannels.at("data").size());
        for (int i = 0; i < outputs; ++i) {
            FairMQMessagePtr copy(NewMessageFor("data", i));
            copy->Copy(*msg);
            if (Send(copy, "data", i) < 0) {
                return false;
            }
        }
        ++fSent;
        return fSent < fMaxIterations;
    }

    void PostRun() override
    {
        LOG(info) << "compat copier sent " << fSent << " messages to each of " << fChannels.at("data").size() << " outputs";
    }

  private:
    std::string fText;
    std::uint64_t fMaxIterations = 0;
    std::uint64_t fSent = 0;
};

void addCustomOptions(bpo::options_description& options)
{
    options.add_options()
        ("text", bpo::value<std::string>()->default_value("copied"), "Text of every message")
        ("max-iterations", bpo::value<std::uint64_t>()->default_value(1), "Messages to send to each output");
}

std::unique_ptr<fair::mq::Device> getDevice(fair::mq::ProgOptions& /*config*/) { return std::make_unique<Copier>(); }
