// The C++ wrapper outside a device, for the transport named on the command line: NewMessage with a
// user buffer and free function, Poller, UnmanagedRegion with single and bulk callbacks, region
// messages received intact, GetRegionInfo and region events. Exit code 0 when every check passed.
// Usage: cpp_api zeromq|shmem SESSION DIR (DIR: where the ipc endpoints go).
#include <fairmq_rs.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <thread>

#define CHECK(cond)                                                                              \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            std::cerr << __FILE__ << ":" << __LINE__ << ": check failed: " #cond << std::endl;   \
            return 1;                                                                            \
        }                                                                                        \
    } while (0)

namespace {
std::atomic<int> gFreed{0};
void FreeBuffer(void* data, void* hint)
{
    std::free(data);
    gFreed += hint == &gFreed ? 1 : 100; // the hint must come back unchanged
}

template<typename F>
bool Eventually(F done)
{
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return done();
}
} // namespace

int main(int argc, char** argv)
{
    if (argc < 4) {
        std::cerr << "usage: cpp_api zeromq|shmem SESSION DIR" << std::endl;
        return 2;
    }
    const std::string kind = argv[1], dir = argv[3];
    try {
        fair::mq::TransportFactory t(kind, "cpp-api", {"--session", argv[2], "--shm-segment-size", "20000000"});
        fair::mq::Channel a(t, "name=a,type=pair,method=bind,address=ipc://" + dir + "/cpp-api-" + kind + ",linger=0");
        fair::mq::Channel b(t, "name=b,type=pair,method=connect,address=ipc://" + dir + "/cpp-api-" + kind + ",linger=0");
        fair::mq::Channel lonely(t, "name=l,type=pull,method=bind,address=ipc://" + dir + "/cpp-api-lonely-" + kind + ",linger=0");
        CHECK(a.Transport()->Raw() != nullptr);

        // NewMessage(data, size, ffn, hint): the buffer is released once, with its hint.
        {
            void* buf = std::malloc(6);
            std::memcpy(buf, "buffer", 6);
            auto m = t.CreateMessage(buf, 6, FreeBuffer, &gFreed);
            CHECK(a.Send(m, 5000) == 6);
            auto r = a.NewMessage();
            CHECK(b.Receive(r, 5000) == 6 && std::memcmp(r->GetData(), "buffer", 6) == 0);
        }
        CHECK(Eventually([] { return gFreed.load() == 1; }));

        // NewSimpleMessage copies: a string literal without its NUL (as FairMQ: "OK" is 2 bytes), a
        // std::string, a trivially copyable value; NewStaticMessage sends a string that outlives it.
        {
            const std::string text = "static text";
            const int32_t value = 0x01020304;
            fair::mq::MessagePtr sent[] = {t.NewSimpleMessage("OK"), a.NewSimpleMessage("OK"),
                                           a.NewSimpleMessage(std::string("a string")), t.NewSimpleMessage(value),
                                           a.NewStaticMessage(text)};
            const std::string expected[] = {"OK", "OK", "a string", std::string(reinterpret_cast<const char*>(&value), 4),
                                            text};
            for (size_t i = 0; i < 5; ++i) {
                const auto size = static_cast<int64_t>(expected[i].size());
                CHECK(a.Send(sent[i], 5000) == size);
                auto r = a.NewMessage();
                CHECK(b.Receive(r, 5000) == size);
                CHECK(std::string(static_cast<const char*>(r->GetData()), r->GetSize()) == expected[i]);
            }
        }

        // Parts, as FairMQ's: built from messages and other Parts, iterated, indexed; a received
        // part moved out into another Parts and sent on; sent parts are left empty, and kept
        // intact by a send that failed.
        {
            auto text = [](const fair::mq::Message& m) { return std::string(static_cast<const char*>(m.GetData()), m.GetSize()); };
            fair::mq::Parts tail(t.NewSimpleMessage("c"), t.NewSimpleMessage("dd"));
            fair::mq::Parts parts(t.NewSimpleMessage("header"));
            parts.AddPart(t.NewSimpleMessage("a"), t.NewSimpleMessage("bb"));
            parts.AddPart(std::move(tail));
            CHECK(parts.Size() == 5 && tail.Empty());
            size_t total = 0;
            for (const auto& m : parts) total += m->GetSize();
            CHECK(total == 12 && text(parts[0]) == "header" && parts.At(4)->GetSize() == 2);
            CHECK(a.Send(parts, 5000) == 12);
            CHECK(parts.Size() == 5 && parts.At(0)->GetSize() == 0);
            fair::mq::Parts got;
            CHECK(b.Receive(got, 5000) == 12 && got.Size() == 5 && text(got[2]) == "bb");
            fair::mq::Parts forward(std::move(got.At(0)), std::move(got.At(3)));
            CHECK(!got.At(0) && forward.Size() == 2 && text(*forward.fParts[1]) == "c");
            CHECK(b.Send(forward, 5000) == 7);
            fair::mq::Parts back;
            CHECK(a.Receive(back, 5000) == 7 && back.Size() == 2 && text(back[0]) == "header" && text(back[1]) == "c");
            // Nobody receives on `lonely`'s peer: a send that times out keeps the parts.
            fair::mq::Channel nowhere(t, "name=n,type=push,method=bind,address=ipc://" + dir + "/cpp-api-nowhere-" + kind + ",linger=0");
            fair::mq::Parts kept(t.NewSimpleMessage("kept"));
            CHECK(nowhere.Send(kept, 100) == -2 && kept.Size() == 1 && text(kept[0]) == "kept");
        }

        // Poller: b has input, lonely has none.
        {
            fair::mq::Poller poller(std::vector<fair::mq::Channel>{b, lonely});
            auto m = a.NewMessage(3);
            CHECK(a.Send(m, 5000) == 3);
            CHECK(Eventually([&] { return poller.Poll(100) >= 0 && poller.CheckInput(0); }));
            CHECK(!poller.CheckInput(1));
            auto r = b.NewMessage();
            CHECK(b.Receive(r, 0) == 3);
        }

        // Region events: the subscription hears of the region made below (known by its user flags:
        // the event may come before the constructor returned the id).
        std::atomic<int> created{0};
        t.SubscribeToRegionEvents([&](fair::mq::RegionInfo info) {
            if (!info.managed && info.event == fair::mq::RegionEvent::created && info.flags == 7) ++created;
        });
        CHECK(t.SubscribedToRegionEvents());

        // A region with a single callback: every piece comes back with its hint.
        std::atomic<int> singles{0};
        std::atomic<uintptr_t> hints{0};
        fair::mq::RegionConfig cfg;
        cfg.userFlags = 7;
        cfg.linger = 2000;
        {
            fair::mq::UnmanagedRegionPtr region = t.CreateUnmanagedRegion(
                1 << 20, [&](void*, size_t size, void* hint) {
                    if (size == 100) ++singles;
                    hints += reinterpret_cast<uintptr_t>(hint);
                },
                cfg);
            CHECK(region->GetSize() == (1u << 20));
            region->SetLinger(3000);
            CHECK(region->GetLinger() == (kind == "shmem" ? 3000u : 0u));
            auto* base = static_cast<char*>(region->GetData());
            bool listed = false;
            for (auto& i : t.GetRegionInfo()) listed |= !i.managed && i.id == region->GetId();
            CHECK(listed);
            for (uintptr_t k = 1; k <= 10; ++k) {
                std::memset(base + k * 1000, static_cast<int>(k), 100);
                auto m = t.CreateMessage(region, base + k * 1000, 100, reinterpret_cast<void*>(k));
                CHECK(a.Send(m, 5000) == 100);
                auto r = b.NewMessage();
                CHECK(b.Receive(r, 5000) == 100);
                CHECK(static_cast<unsigned char*>(r->GetData())[99] == k);
            }
            CHECK(Eventually([&] { return singles.load() == 10; }));
            CHECK(Eventually([&] { return created.load() == 1; }));
        } // the region is freed here: no callback after this
        CHECK(singles.load() == 10 && hints.load() == 55);
        t.UnsubscribeFromRegionEvents();
        CHECK(!t.SubscribedToRegionEvents());

        // A region with a bulk callback, through a multipart message.
        std::atomic<size_t> bulk{0};
        {
            auto region = t.CreateUnmanagedRegion(1 << 20, [&](const std::vector<fair::mq::RegionBlock>& blocks) { bulk += blocks.size(); });
            fair::mq::Parts parts;
            auto* base = static_cast<char*>(region->GetData());
            for (int j = 0; j < 64; ++j) parts.AddPart(t.CreateMessage(region, base + j * 10, 10));
            CHECK(a.Send(parts, 5000) == 640);
            fair::mq::Parts got;
            CHECK(b.Receive(got, 5000) == 640 && got.Size() == 64);
            got.Clear();
            CHECK(Eventually([&] { return bulk.load() == 64; }));
        }
        CHECK(bulk.load() == 64);
    } catch (const std::exception& e) {
        std::cerr << "exception: " << e.what() << std::endl;
        return 1;
    }
    std::cout << kind << ": ok" << std::endl;
    return 0;
}
