// A C++ device sending pieces of an unmanaged region through the FairMQ-named wrapper
// (NewUnmanagedRegionFor, NewMessageFor with a region, SubscribeToRegionEvents): per iteration one
// multipart of 64 parts, each --msg-size bytes of the region. The bulk callback counts the pieces
// that came back; ResetTask frees the region (no callback after that) and checks the count is
// exactly iterations * 64, else the device goes to ERROR.
#include <fairmq_rs.hpp>
#include <fairmq_rs_run_device.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>

namespace bpo = boost::program_options;

struct RegionSampler : fair::mq::Device
{
    static constexpr size_t kRegionSize = 10000000;
    static constexpr int kParts = 64;

    void InitTask() override
    {
        fMsgSize = fConfig->GetProperty<int>("msg-size");
        fMaxIterations = fConfig->GetProperty<uint64_t>("max-iterations");
        if (fMsgSize <= 0 || static_cast<size_t>(fMsgSize) * kParts > kRegionSize) throw std::runtime_error("--msg-size too large");

        fair::mq::RegionConfig cfg;
        cfg.linger = fConfig->GetProperty<uint32_t>("region-linger");
        cfg.zero = true;
        fRegion = NewUnmanagedRegionFor("data", 0, kRegionSize,
            [this](const std::vector<fair::mq::RegionBlock>& blocks) { fAcked += blocks.size(); }, cfg);
        GetChannel("data", 0).Transport()->SubscribeToRegionEvents([this](fair::mq::RegionInfo info) {
            if (!info.managed && info.id == fRegion->GetId() && info.event == fair::mq::RegionEvent::created) fCreatedSeen = true;
        });
        auto* bytes = static_cast<unsigned char*>(fRegion->GetData());
        for (size_t i = 0; i < static_cast<size_t>(fMsgSize) * kParts; ++i) bytes[i] = static_cast<unsigned char>(i % 251);
    }

    bool ConditionalRun() override
    {
        if (fSent < fMaxIterations) {
            fair::mq::Parts parts;
            auto* base = static_cast<char*>(fRegion->GetData());
            for (int j = 0; j < kParts; ++j) {
                parts.AddPart(NewMessageFor("data", 0, fRegion, base + j * fMsgSize, static_cast<size_t>(fMsgSize)));
            }
            int64_t rc = Send(parts, "data");
            if (rc == static_cast<int64_t>(fair::mq::TransferCode::interrupted)) return false; // a state change is pending
            if (rc < 0) throw std::runtime_error("send failed"); // the device goes to ERROR
            ++fSent;
            return true;
        }
        // Everything sent: wait up to 20 s for the pieces to come back.
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (fAcked < fSent * kParts && std::chrono::steady_clock::now() < until && !NewStatePending()) {
            WaitFor(std::chrono::milliseconds(10));
        }
        return false;
    }

    void ResetTask() override
    {
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (!fCreatedSeen && std::chrono::steady_clock::now() < until) WaitFor(std::chrono::milliseconds(10));
        GetChannel("data", 0).Transport()->UnsubscribeFromRegionEvents();
        fRegion.reset(); // no callback runs after this: the count is final
        LOG(info) << "C++ region sampler: " << fSent << " messages of " << kParts << " parts sent, " << fAcked << " of "
                  << fSent * kParts << " pieces acknowledged, region event " << (fCreatedSeen ? "seen" : "missing");
        if (fAcked != fSent * kParts || fSent != fMaxIterations || !fCreatedSeen) throw std::runtime_error("acknowledgements missing");
    }

  private:
    int fMsgSize = 1000;
    uint64_t fMaxIterations = 0;
    uint64_t fSent = 0;
    std::atomic<uint64_t> fAcked{0};
    std::atomic<bool> fCreatedSeen{false};
    fair::mq::UnmanagedRegionPtr fRegion;
};

void addCustomOptions(bpo::options_description& options)
{
    options.add_options()
        ("msg-size", bpo::value<int>()->default_value(1000), "Size of each piece in bytes")
        ("region-linger", bpo::value<uint32_t>()->default_value(2000), "Linger period for the region (ms)")
        ("max-iterations", bpo::value<uint64_t>()->default_value(10), "Multipart messages to send");
}

std::unique_ptr<fair::mq::Device> getDevice(fair::mq::ProgOptions&) { return std::make_unique<RegionSampler>(); }
