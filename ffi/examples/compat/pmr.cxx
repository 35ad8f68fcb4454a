// fair::mq::pmr as O2-style code uses it, with FairMQ's headers only: a container built in a
// transport's memory resource becomes a message without a copy; into another transport's, with
// one. Prints "pmr ok" or why not; exit code 1 on any difference.
#include <fairmq/MemoryResourceTools.h>
#include <fairmq/TransportFactory.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace {
int failures = 0;
void check(bool ok, const char* what)
{
    if (!ok) {
        std::printf("pmr: %s\n", what);
        ++failures;
    }
}
} // namespace

int main(int argc, char** argv)
{
    // argv: the transport to build in, and a shared-memory session of the test's own.
    const std::string type = argc > 1 ? argv[1] : "zeromq";
    const std::string other = type == "zeromq" ? "shmem" : "zeromq";
    const std::vector<std::string> session{"--session", argc > 2 ? argv[2] : "pmr"};
    check(fair::mq::TransportFactory::CreateTransportFactory("zeromq") != nullptr, "FairMQ's factory");
    auto factory = std::make_shared<fair::mq::TransportFactory>(type, "pmr-a", session);
    auto second = std::make_shared<fair::mq::TransportFactory>(other, "pmr-b", session);
    fair::mq::ChannelResource* resource = factory->GetMemoryResource();
    check(resource == factory->GetMemoryResource(), "one resource per transport");
    check(resource != second->GetMemoryResource(), "each transport its own resource");
    check(resource->getTransportFactory() != nullptr, "the resource names its transport");

    std::vector<int, fair::mq::pmr::polymorphic_allocator<int>> v(resource);
    v.reserve(1000);
    for (int i = 0; i < 1000; ++i) v.push_back(i * 3);
    const void* data = v.data();
    check(resource->getNumberOfMessages() == 1, "the buffer is one message");
    fair::mq::MessagePtr m = fair::mq::getMessage(std::move(v));
    check(m && m->GetData() == data, "the message is the container's buffer (no copy)");
    check(m && m->GetSize() == 1000 * sizeof(int), "the message has the container's size");
    check(m && static_cast<const int*>(m->GetData())[999] == 2997, "the message holds the elements");
    check(resource->getNumberOfMessages() == 0, "the resource let the message go");

    std::vector<char, fair::mq::pmr::polymorphic_allocator<char>> w(resource);
    w.assign({'a', 'b', 'c'});
    fair::mq::MessagePtr copied = fair::mq::getMessage(std::move(w), *second);
    check(copied && copied->GetSize() == 3 && std::string(static_cast<const char*>(copied->GetData()), 3) == "abc",
          "into another transport: a copy");
    check(resource->getNumberOfMessages() == 0, "the copied container's buffer went back");

    {
        std::vector<double, fair::mq::pmr::polymorphic_allocator<double>> gone(resource);
        gone.resize(10);
        check(resource->getNumberOfMessages() == 1, "an allocation is a message");
    }
    check(resource->getNumberOfMessages() == 0, "a container that goes gives its message back");

    if (failures == 0) std::printf("pmr ok\n");
    return failures == 0 ? 0 : 1;
}
