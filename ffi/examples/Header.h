// The multipart example's header (a stand-in for FairMQ's examples/multipart/Header.h).
#pragma once
#include <cstdint>
namespace example_multipart {
struct Header {
    std::int32_t stopFlag;
};
} // namespace example_multipart
