// The round-trip devices of the bench harness (benches/src/harness/device_ping.rs), written against
// C++ FairMQ so that its round trip can be measured beside fairmq-rs's: the same options, the same
// protocol on channel "data" and the same report line.
//
// - ping: sends a fresh message of --msg-size bytes, waits for the answer, and times each round
//   trip; by time (--warmup-ms, then --measure-ms) or exactly --round-trips of them. It then sends
//   an empty message and logs "Round trip median: <ns> ns, p99: <ns> ns, over <n> round trips."
// - pong: answers each message with a fresh one of the same size, and ends at an empty one.
//
// Built once per role (FAIRMQ_RS_PONG defined: the pong) by benches/cpp/build-pingpong.sh.

#include <fairmq/Device.h>
#include <fairmq/runDevice.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace bpo = boost::program_options;

namespace {

using Clock = std::chrono::steady_clock;

// Receives into msg: without blocking, over and over, when busy; else in slices of 100 ms, so
// that a state change ends the wait. False when a state change is pending or the transfer failed.
bool ReceiveOne(fair::mq::Device& device, fair::mq::Channel& channel, fair::mq::MessagePtr& msg, bool busy)
{
    while (true) {
        auto got = channel.Receive(msg, busy ? 0 : 100);
        if (got >= 0) {
            return true;
        }
        if (got != static_cast<int64_t>(fair::mq::TransferCode::timeout) || device.NewStatePending()) {
            return false;
        }
    }
}

// The sample at quantile q of sorted samples (as the harness's workload module picks it).
double At(std::vector<uint64_t> const& sorted, double q)
{
    if (sorted.empty()) {
        return 0;
    }
    auto index = static_cast<size_t>(std::llround((static_cast<double>(sorted.size()) - 1.0) * q));
    return static_cast<double>(sorted[std::min(index, sorted.size() - 1)]);
}

class Ping : public fair::mq::Device
{
  protected:
    void InitTask() override
    {
        fSize = fConfig->GetProperty<uint64_t>("msg-size");
        fBusy = fConfig->GetProperty<bool>("busy-poll");
        fWarmup = std::chrono::milliseconds(fConfig->GetProperty<uint64_t>("warmup-ms"));
        fMeasure = std::chrono::milliseconds(fConfig->GetProperty<uint64_t>("measure-ms"));
        fRoundTrips = fConfig->GetProperty<uint64_t>("round-trips");
    }

    void Run() override
    {
        auto& channel = GetChannel("data", 0);
        bool failed = false;
        auto roundTrip = [&]() {
            if (failed) {
                return;
            }
            auto out = channel.NewMessage(fSize);
            if (channel.Send(out) < 0) {
                failed = true;
                return;
            }
            auto in = channel.NewMessage();
            failed = !ReceiveOne(*this, channel, in, fBusy);
        };
        std::vector<uint64_t> times;
        auto timed = [&]() {
            auto start = Clock::now();
            roundTrip();
            times.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
        };
        if (fRoundTrips > 0) {
            // A count from the command line: reserved up to a bound, as the harness's own ping does.
            times.reserve(std::min<uint64_t>(fRoundTrips, uint64_t{1} << 20));
            for (uint64_t i = 0; i < fRoundTrips; ++i) {
                timed();
            }
        } else {
            auto warm = Clock::now();
            for (uint64_t n = 0; n < 100 || Clock::now() - warm < fWarmup; ++n) {
                roundTrip();
            }
            auto start = Clock::now();
            while (Clock::now() - start < fMeasure) {
                timed();
            }
        }
        if (failed) {
            LOG(error) << "a round trip failed";
            return;
        }
        auto end = channel.NewMessage();
        channel.Send(end);
        std::sort(times.begin(), times.end());
        LOG(info) << "Round trip median: " << At(times, 0.5) << " ns, p99: " << At(times, 0.99) << " ns, over "
                  << times.size() << " round trips.";
    }

  private:
    uint64_t fSize = 64;
    bool fBusy = false;
    std::chrono::milliseconds fWarmup{250};
    std::chrono::milliseconds fMeasure{1000};
    uint64_t fRoundTrips = 0;
};

class Pong : public fair::mq::Device
{
  protected:
    void InitTask() override { fBusy = fConfig->GetProperty<bool>("busy-poll"); }

    void Run() override
    {
        auto& channel = GetChannel("data", 0);
        while (true) {
            auto in = channel.NewMessage();
            if (!ReceiveOne(*this, channel, in, fBusy) || in->GetSize() == 0) {
                return;
            }
            auto size = in->GetSize();
            in.reset();
            auto out = channel.NewMessage(size);
            if (channel.Send(out) < 0) {
                return;
            }
        }
    }

  private:
    bool fBusy = false;
};

} // namespace

void addCustomOptions(bpo::options_description& options)
{
    options.add_options()("busy-poll", bpo::value<bool>()->default_value(false), "Receive by polling without blocking");
#ifndef FAIRMQ_RS_PONG
    options.add_options()
        ("msg-size", bpo::value<uint64_t>()->default_value(64), "Message size in bytes")
        ("warmup-ms", bpo::value<uint64_t>()->default_value(250), "Round trips before measuring (ms, at least 100 round trips)")
        ("measure-ms", bpo::value<uint64_t>()->default_value(1000), "Round trips measured (ms)")
        ("round-trips", bpo::value<uint64_t>()->default_value(0), "Exactly this many round trips, no warm-up (0: by time)");
#endif
}

std::unique_ptr<fair::mq::Device> getDevice(fair::mq::ProgOptions& /* config */)
{
#ifdef FAIRMQ_RS_PONG
    return std::make_unique<Pong>();
#else
    return std::make_unique<Ping>();
#endif
}
