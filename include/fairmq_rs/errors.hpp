// fairmq-rs C++ API: the exception types and error codes of FairMQ's API (<fairmq/Error.h> and the
// error structs FairMQ declares beside its classes), so C++ code catches them by type.
// Part of fairmq_rs.hpp; FairMQ programs reach it through the compatibility headers.
#pragma once

#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>

namespace fair {
namespace mq {

/// An error of the fairmq-rs library (the base of what its C++ API throws beyond FairMQ's types).
class Error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

/// FairMQ's generic runtime error.
struct RuntimeError : Error {
    using Error::Error;
};

/// A transport refused an operation (region ids, transport names, ...).
struct TransportError : Error {
    using Error::Error;
};

/// A transport could not be created (an unknown transport name).
struct TransportFactoryError : Error {
    using Error::Error;
};

/// A message operation failed.
struct MessageError : Error {
    using Error::Error;
};

/// Shared memory for a message could not be allocated (`--shm-throw-bad-alloc`).
struct MessageBadAlloc : MessageError {
    using MessageError::MessageError;
};

/// A socket operation failed (an unknown option, say).
struct SocketError : Error {
    using Error::Error;
};

/// A poller could not be made or used.
struct PollerError : Error {
    using Error::Error;
};

/// A device's state machine went to ERROR while it was awaited.
struct DeviceErrorState : Error {
    using Error::Error;
};

/// FairMQ's error codes for std::system_error (category "fairmq").
enum class ErrorCode {
    OperationInProgress = 10,
    OperationTimeout,
    OperationCanceled,
    DeviceChangeStateFailed,
    DeviceGetPropertiesFailed,
    DeviceSetPropertiesFailed
};

/// The "fairmq" error category.
struct ErrorCategory : std::error_category {
    const char* name() const noexcept override { return "fairmq"; }
    std::string message(int ev) const override
    {
        switch (static_cast<ErrorCode>(ev)) {
            case ErrorCode::OperationInProgress: return "async operation already in progress";
            case ErrorCode::OperationTimeout: return "async operation timed out";
            case ErrorCode::OperationCanceled: return "async operation canceled";
            case ErrorCode::DeviceChangeStateFailed: return "failed to change state of a fairmq device";
            case ErrorCode::DeviceGetPropertiesFailed: return "failed to get fairmq device properties";
            case ErrorCode::DeviceSetPropertiesFailed: return "failed to set fairmq device properties";
        }
        return "(unrecognized error)";
    }
};

/// The category object (one per program: an inline variable).
inline const ErrorCategory& GetErrorCategory()
{
    static const ErrorCategory category;
    return category;
}

inline std::error_code MakeErrorCode(ErrorCode e) { return {static_cast<int>(e), GetErrorCategory()}; }
/// For std::error_code's conversion from an ErrorCode (found by argument-dependent lookup).
inline std::error_code make_error_code(ErrorCode e) { return MakeErrorCode(e); }

} // namespace mq
} // namespace fair

namespace std {
template<>
struct is_error_code_enum<fair::mq::ErrorCode> : true_type {};
} // namespace std
