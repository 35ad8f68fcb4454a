// fairmq-rs compatibility header: FairLogger's <fairlogger/Logger.h>, LOG(severity) and the static
// fair::Logger settings, over the fairmq-rs logger.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
//
// LOG's severities are FairLogger's names (trace, debug4..debug1, debug, detail, info, state, warn,
// important, alarm, error, fatal): the finer debug levels print below debug, detail at debug,
// important and alarm as warnings. LOGF and LOGP format with fmt-style "{}" fields.
#pragma once
#include <fairmq_rs.hpp>

#include <cstdio>
#include <sstream>
#include <string>
#include <utility>

namespace fair {

/// FairLogger's severities, lowest first.
enum class Severity : int {
    nolog = 0,
    trace,
    debug4,
    debug3,
    debug2,
    debug1,
    debug,
    detail,
    info,
    state,
    warn,
    important,
    alarm,
    error,
    fatal,
    warning = warn
};

/// FairLogger's verbosities.
enum class Verbosity : int { verylow, low, medium, high, veryhigh, user1, user2, user3, user4 };

/// FairLogger's static settings, applied to the fairmq-rs logger.
class Logger {
  public:
    static std::string SeverityName(Severity s)
    {
        static const char* const names[] = {"nolog", "trace", "debug4", "debug3", "debug2", "debug1", "debug", "detail",
                                            "info",  "state", "warn",   "important", "alarm", "error", "fatal"};
        const int i = static_cast<int>(s);
        return i >= 0 && i < 15 ? names[i] : "info";
    }
    static std::string VerbosityName(Verbosity v)
    {
        static const char* const names[] = {"verylow", "low", "medium", "high", "veryhigh"};
        const int i = static_cast<int>(v);
        return i >= 0 && i < 5 ? names[i] : "veryhigh"; // user verbosities: everything
    }

    static void SetConsoleSeverity(const Severity s) { SetConsoleSeverity(SeverityName(s)); }
    static void SetConsoleSeverity(const std::string& s) { Check(fmq_log_set_console_severity(s.c_str()), "severity", s); }
    static void SetFileSeverity(const Severity s) { SetFileSeverity(SeverityName(s)); }
    static void SetFileSeverity(const std::string& s) { Check(fmq_log_set_file_severity(s.c_str()), "severity", s); }
    static std::string GetConsoleSeverity() { return fmq_log_console_severity(); }
    static void SetVerbosity(const Verbosity v) { SetVerbosity(VerbosityName(v)); }
    static void SetVerbosity(const std::string& v) { Check(fmq_log_set_verbosity(v.c_str()), "verbosity", v); }
    static void SetConsoleColor(const bool colored = true) { fmq_log_set_color(colored); }
    /// Logs to a file named from `filename` (as --log-to-file), at `severity`.
    static std::string InitFileSink(const std::string& severity, const std::string& filename, bool /*customizeName*/ = true)
    {
        SetFileSeverity(severity);
        Check(fmq_log_to_file(filename.c_str()), "log file", filename);
        return filename;
    }
    static std::string InitFileSink(const Severity severity, const std::string& filename, bool customizeName = true)
    {
        return InitFileSink(SeverityName(severity), filename, customizeName);
    }
    static void CycleConsoleSeverityUp() { fmq_log_cycle_console_severity(true); }
    static void CycleConsoleSeverityDown() { fmq_log_cycle_console_severity(false); }
    static void CycleVerbosityUp() { fmq_log_cycle_verbosity(true); }
    static void CycleVerbosityDown() { fmq_log_cycle_verbosity(false); }
    /// Whether a line of `s` would print on the console.
    static bool Logging(const Severity s)
    {
        if (s == Severity::nolog) return false;
        const std::string current = GetConsoleSeverity();
        return Rank(SeverityName(s)) >= Rank(current);
    }
    static bool Logging(const std::string& s) { return Rank(s) >= Rank(GetConsoleSeverity()); }

  private:
    static void Check(fmq_result r, const char* what, const std::string& name)
    {
        if (r != FMQ_OK) throw std::runtime_error(std::string("unknown ") + what + " '" + name + "'");
    }
    /// Where a severity name prints in the library's order (trace .. fatal, nolog highest).
    static int Rank(const std::string& s)
    {
        if (s == "trace" || (s.rfind("debug", 0) == 0 && s.size() == 6)) return 0;
        if (s == "debug" || s == "detail") return 1;
        if (s == "info") return 2;
        if (s == "state") return 3;
        if (s == "warn" || s == "warning" || s == "important" || s == "alarm") return 4;
        if (s == "error") return 5;
        if (s == "fatal") return 6;
        return 7;
    }
};

namespace logger_detail {
/// fmt's "{}" fields replaced by the arguments in order (LOGP, LOGF), without fmt.
inline void Format(std::ostringstream& out, const char* f)
{
    out << f;
}
template<typename T, typename... Ts>
void Format(std::ostringstream& out, const char* f, T&& first, Ts&&... rest)
{
    for (; *f; ++f) {
        if (f[0] == '{' && f[1] == '{') {
            out << '{';
            ++f;
        } else if (f[0] == '}' && f[1] == '}') {
            out << '}';
            ++f;
        } else if (f[0] == '{') {
            while (*f && *f != '}') ++f; // a field's spec is ignored: the value prints as <<
            out << std::forward<T>(first);
            if (*f) Format(out, f + 1, std::forward<Ts>(rest)...);
            return;
        } else {
            out << *f;
        }
    }
}
template<typename... Ts>
std::string Formatted(const char* f, Ts&&... args)
{
    std::ostringstream out;
    Format(out, f, std::forward<Ts>(args)...);
    return out.str();
}

/// A printf argument: a std::string as its characters.
template<typename T>
T CArg(T v)
{
    return v;
}
inline const char* CArg(const std::string& s) { return s.c_str(); }

/// printf-style text (LOGF).
template<typename... Ts>
std::string Printf(const char* f, const Ts&... args)
{
    const int n = std::snprintf(nullptr, 0, f, CArg(args)...);
    if (n < 0) return f;
    std::string out(static_cast<size_t>(n) + 1, '\0');
    std::snprintf(out.data(), out.size(), f, CArg(args)...);
    out.resize(static_cast<size_t>(n));
    return out;
}
inline std::string Printf(const char* f) { return f; }
} // namespace logger_detail

} // namespace fair

/// FairLogger's conditional, fmt-formatted and printf-formatted lines.
#define LOG_IF(severity, condition) \
    if (!(condition)) {             \
    } else                          \
        LOG(severity)
#define LOGP(severity, ...) LOG(severity) << ::fair::logger_detail::Formatted(__VA_ARGS__)
#define LOGF(severity, ...) LOG(severity) << ::fair::logger_detail::Printf(__VA_ARGS__)
#define LOGV(severity, verbosity) LOG(severity)
#define LOGN(severity) LOG(severity)
