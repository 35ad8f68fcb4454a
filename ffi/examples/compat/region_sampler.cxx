// Pieces of an unmanaged region as FairMQ's region example sends them, with FairMQ's headers only:
// the region made by the transport factory with a single-block callback, each piece's message
// made with a hint (its index). Per iteration one multipart of 16 pieces; once --max-iterations
// are sent, the device waits for every piece to come back and checks each hint came back once.
#include <fairlogger/Logger.h>
#include <fairmq/Device.h>
#include <fairmq/Parts.h>
#include <fairmq/UnmanagedRegion.h>
#include <fairmq/runDevice.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace bpo = boost::program_options;

class CompatRegionSampler : public fair::mq::Device
{
    static constexpr std::size_t kPieces = 16;
    static constexpr std::size_t kPieceSize = 4096;

  protected:
    void InitTask() override
    {
        fMaxIterations = fConfig->GetProperty<std::uint64_t>("max-iterations");
        fBack.assign(fMaxIterations * kPieces, 0);
        fair::mq::RegionConfig cfg;
        cfg.linger = 2000;
        fRegion = fTransportFactory->CreateUnmanagedRegion(
            kPieces * kPieceSize,
            [this](void* /*data*/, std::size_t size, void* hint) {
                const auto at = reinterpret_cast<std::uintptr_t>(hint);
                std::lock_guard<std::mutex> lock(fBackMutex);
                if (size != kPieceSize || at >= fBack.size()) {
                    ++fBad;
                } else {
                    ++fBack[at];
                }
            },
            cfg);
    }

    bool ConditionalRun() override
    {
        if (fSent == fMaxIterations) return false;
        fair::mq::Parts parts;
        auto* base = static_cast<char*>(fRegion->GetData());
        for (std::size_t j = 0; j < kPieces; ++j) {
            void* hint = reinterpret_cast<void*>(static_cast<std::uintptr_t>(fSent * kPieces + j));
            parts.AddPart(NewMessageFor("data", 0, fRegion, base + j * kPieceSize, kPieceSize, hint));
        }
        if (Send(parts, "data") < 0) return false;
        ++fSent;
        return true;
    }

    void PostRun() override
    {
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (Back() < fSent * kPieces && std::chrono::steady_clock::now() < until) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }

    void ResetTask() override
    {
        fRegion.reset(); // no callback runs after this: the counts are final
        std::lock_guard<std::mutex> lock(fBackMutex);
        std::size_t once = 0;
        for (auto n : fBack) once += n == 1 ? 1 : 0;
        LOG(info) << "compat region sampler: " << fSent << " messages, " << once << " of " << fBack.size()
                  << " pieces came back once, " << fBad << " bad";
        if (once != fBack.size() || fBad != 0) throw std::runtime_error("acknowledgements missing or repeated");
    }

  private:
    std::size_t Back()
    {
        std::lock_guard<std::mutex> lock(fBackMutex);
        std::size_t n = 0;
        for (auto b : fBack) n += b;
        return n;
    }

    std::uint64_t fMaxIterations = 0;
    std::uint64_t fSent = 0;
    std::mutex fBackMutex;
    std::vector<unsigned> fBack;
    unsigned fBad = 0;
    fair::mq::UnmanagedRegionPtr fRegion;
};

void addCustomOptions(bpo::options_description& options)
{
    options.add_options()("max-iterations", bpo::value<std::uint64_t>()->default_value(10), "Multiparts to send");
}

std::unique_ptr<fair::mq::Device> getDevice(fair::mq::ProgOptions& /*config*/)
{
    return std::make_unique<CompatRegionSampler>();
}
