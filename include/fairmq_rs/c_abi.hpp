// fairmq-rs C++ API: calling the C ABI (include/fairmq_rs.h): its results as exceptions, its text
// out-parameters as strings.
// Part of fairmq_rs.hpp; FairMQ programs reach it through the compatibility headers.
#pragma once

#include "../fairmq_rs.h"
#include "errors.hpp"

#include <functional>
#include <string>
#include <vector>

namespace fair {
namespace mq {

namespace detail {
inline std::string last_error()
{
    size_t n = 0;
    fmq_last_error(nullptr, 0, &n); // asks for the length; the error text stays
    std::vector<char> buf(n + 1);
    if (fmq_last_error(buf.data(), buf.size(), &n) != FMQ_OK) {
        return std::string();
    }
    return std::string(buf.data(), n);
}
/// Throws for a failed call: FairMQ's exception type where there is one (no memory for a message:
/// MessageBadAlloc; a transport's refusal: TransportError), fair::mq::Error otherwise.
inline void check(fmq_result r, const char* what)
{
    if (r == FMQ_OK) return;
    const std::string text = std::string(what) + ": " + fmq_result_message(r) + " (" + last_error() + ")";
    switch (r) {
        case FMQ_ERROR_ALLOC: throw MessageBadAlloc(text);
        case FMQ_ERROR_TRANSPORT: throw TransportError(text);
        default: throw Error(text);
    }
}
inline std::string read_text(const std::function<fmq_result(char*, size_t, size_t*)>& f)
{
    std::vector<char> buf(256);
    size_t n = 0;
    fmq_result r = f(buf.data(), buf.size(), &n);
    if (r == FMQ_ERROR_BUFFER) {
        buf.resize(n + 1);
        r = f(buf.data(), buf.size(), &n);
    }
    detail::check(r, "reading text"); // a missing property, say
    return std::string(buf.data(), n);
}
} // namespace detail

} // namespace mq
} // namespace fair
