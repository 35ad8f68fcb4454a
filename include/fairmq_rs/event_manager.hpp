// fairmq-rs C++ API: typed events and their subscribers (FairMQ's <fairmq/EventManager.h>).
// Part of fairmq_rs.hpp; FairMQ programs reach it through the compatibility headers.
//
// Standalone (no fairmq_rs.hpp, no boost::signals2). As in FairMQ 1.10: a subscription is keyed by
// (subscriber, event type, callback signature), so one subscriber may listen to one event with
// several value types, and subscribing again with the same key replaces the earlier callback;
// callbacks run in subscription order on the emitting thread; Unsubscribe of a subscription that
// does not exist throws std::out_of_range; the manager is thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <typeindex>
#include <typeinfo>
#include <utility>
#include <vector>

namespace fair::mq {

/// Base of event types: `struct MyEvent : Event<KeyType> {};`. The key is the callbacks' first argument.
template<typename K>
struct Event
{
    using KeyType = K;
};

class EventManager
{
  public:
    template<typename E, typename... Args>
    void Subscribe(const std::string& subscriber, std::function<void(typename E::KeyType, Args...)> callback)
    {
        auto slot = std::make_shared<Slot>();
        slot->subscriber = subscriber;
        slot->callback = std::make_shared<Callback<E, Args...>>(std::move(callback));

        std::lock_guard<std::mutex> lock(fMutex);
        auto& slots = fSignals[Key<E, Args...>()];
        Disconnect(slots, subscriber);
        slots.push_back(std::move(slot));
    }

    template<typename E, typename... Args>
    void Unsubscribe(const std::string& subscriber)
    {
        std::lock_guard<std::mutex> lock(fMutex);
        auto it = fSignals.find(Key<E, Args...>());
        if (it == fSignals.end() || !Disconnect(it->second, subscriber)) {
            // FairMQ's lookup of the connection (unordered_map::at) throws this too.
            throw std::out_of_range("EventManager: '" + subscriber + "' has no such subscription");
        }
        if (it->second.empty()) {
            fSignals.erase(it);
        }
    }

    /// Calls every callback subscribed to E with exactly these value types.
    template<typename E, typename... Args>
    void Emit(typename E::KeyType key, Args... args) const
    {
        // A snapshot, called without the lock: a callback may subscribe, unsubscribe or emit itself.
        std::vector<std::shared_ptr<Slot>> slots;
        {
            std::lock_guard<std::mutex> lock(fMutex);
            auto it = fSignals.find(Key<E, Args...>());
            if (it == fSignals.end()) {
                return;
            }
            slots = it->second;
        }
        for (const auto& slot : slots) {
            // One disconnected by an earlier callback of this emission is skipped (as in signals2).
            if (!slot->connected.load()) {
                continue;
            }
            // Every callback gets the same values (lvalues: none can move them away from the next).
            (*static_cast<Callback<E, Args...>*>(slot->callback.get()))(key, args...);
        }
    }

  private:
    template<typename E, typename... Args>
    using Callback = std::function<void(typename E::KeyType, Args...)>;

    struct Slot
    {
        std::string subscriber;
        std::shared_ptr<void> callback;  // a Callback<E, Args...>, the type being part of the key
        std::atomic<bool> connected{true};
    };

    // (event type, callback signature)
    using SignalKey = std::pair<std::type_index, std::type_index>;

    template<typename E, typename... Args>
    static SignalKey Key()
    {
        return {std::type_index(typeid(E)), std::type_index(typeid(Callback<E, Args...>))};
    }

    /// Removes the subscriber's slot (the caller holds the lock); false if it had none.
    static bool Disconnect(std::vector<std::shared_ptr<Slot>>& slots, const std::string& subscriber)
    {
        for (auto it = slots.begin(); it != slots.end(); ++it) {
            if ((*it)->subscriber == subscriber) {
                (*it)->connected.store(false);
                slots.erase(it);
                return true;
            }
        }
        return false;
    }

    std::map<SignalKey, std::vector<std::shared_ptr<Slot>>> fSignals;
    mutable std::mutex fMutex;
};

/// Emitted with every property's new value as text (FairMQ declares it here, not in Properties.h).
struct PropertyChangeAsString : Event<std::string> {};

} // namespace fair::mq
