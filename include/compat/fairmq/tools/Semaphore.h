// fairmq-rs compatibility header: FairMQ's <fairmq/tools/Semaphore.h>, counting semaphores.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>

namespace fair::mq::tools {

/// A blocking counting semaphore: Wait() takes one count (blocking while there is none),
/// Signal() adds one. Neither copyable nor movable (it owns a mutex), as FairMQ's.
struct Semaphore
{
    Semaphore() : Semaphore(0) {}
    explicit Semaphore(std::size_t initial_count) : fCount(initial_count) {}

    auto Wait() -> void
    {
        std::unique_lock<std::mutex> lk(fMutex);
        fCv.wait(lk, [this] { return fCount > 0; });
        --fCount;
    }

    auto Signal() -> void
    {
        {
            std::lock_guard<std::mutex> lk(fMutex);
            ++fCount;
        }
        // Notified outside the lock so the woken waiter does not block on the mutex at once.
        fCv.notify_one();
    }

    auto GetCount() const -> std::size_t
    {
        std::lock_guard<std::mutex> lk(fMutex);
        return fCount;
    }

  private:
    std::size_t fCount;
    mutable std::mutex fMutex;
    std::condition_variable fCv;
};

/// A Semaphore that can be copied: the copies share one count (e.g. to hand into callbacks
/// captured by value).
struct SharedSemaphore
{
    SharedSemaphore() : fSemaphore(std::make_shared<Semaphore>()) {}
    explicit SharedSemaphore(std::size_t initial_count) : fSemaphore(std::make_shared<Semaphore>(initial_count)) {}

    auto Wait() -> void { fSemaphore->Wait(); }
    auto Signal() -> void { fSemaphore->Signal(); }
    auto GetCount() const -> std::size_t { return fSemaphore->GetCount(); }

  private:
    std::shared_ptr<Semaphore> fSemaphore;
};

} // namespace fair::mq::tools
