// fairmq-rs C++ API: log lines through the library's logger (FairMQ's LOG(severity) << ...).
// Part of fairmq_rs.hpp; FairMQ programs reach it through the compatibility headers.
#pragma once

#include "../fairmq_rs.h"

#include <sstream>

namespace fair {
namespace mq {

/// Log lines through the fairmq-rs logger: LOG(info) << "text";
class LogLine {
  public:
    explicit LogLine(const char* severity, const char* file = nullptr, int line = 0, const char* function = nullptr)
        : fSeverity(severity)
        , fFile(file)
        , fLine(line)
        , fFunction(function)
    {}
    ~LogLine() { fmq_log_at(fSeverity, fFile, fLine, fFunction, fText.str().c_str()); }
    template<typename T>
    LogLine& operator<<(const T& v)
    {
        fText << v;
        return *this;
    }

  private:
    const char* fSeverity;
    const char* fFile;
    int fLine;
    const char* fFunction;
    std::ostringstream fText;
};

} // namespace mq
} // namespace fair

/// FairLogger's LOG(severity): the line names its file, line and function (shown at verbosity veryhigh).
#define LOG(severity) ::fair::mq::LogLine(#severity, __FILE__, __LINE__, static_cast<const char*>(__func__))
