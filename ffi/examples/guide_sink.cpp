// The seed guide's multi-sender Sink, as written for C++ FairMQ: only the include lines (and the
// Header's include) differ.
#include "Header.h" // example_multipart::Header

#include <fairmq_rs.hpp>
#include <fairmq_rs_run_device.hpp>

#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace bpo = boost::program_options;

struct Sink : fair::mq::Device
{
    Sink() { OnData("data", &Sink::HandleData); }

    void InitTask() override { fNumSenders = fConfig->GetProperty<int>("num-senders"); }

    bool HandleData(fair::mq::Parts& parts, int /*index*/)
    {
        if (parts.Size() < 1 || parts.At(0)->GetSize() != sizeof(example_multipart::Header)) {
            throw std::runtime_error("unexpected message format");
        }
        example_multipart::Header header;
        std::memcpy(&header, parts.At(0)->GetData(), sizeof(header));

        if (header.stopFlag == 1) {
            ++fNumEnded;
            LOG(info) << "End message " << fNumEnded << " of " << fNumSenders;
            return fNumEnded < fNumSenders; // false ends RUNNING
        }
        ++fNumReceived;
        return true;
    }

    void PostRun() override { LOG(info) << "Received " << fNumReceived << " data messages"; }

  private:
    int fNumSenders = 1;
    int fNumEnded = 0;
    std::uint64_t fNumReceived = 0;
};

void addCustomOptions(bpo::options_description& options)
{
    options.add_options()
        ("num-senders", bpo::value<int>()->default_value(1), "Number of senders");
}

std::unique_ptr<fair::mq::Device> getDevice(fair::mq::ProgOptions& /*config*/)
{
    return std::make_unique<Sink>();
}
