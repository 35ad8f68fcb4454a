// fairmq-rs compatibility header: FairMQ's <fairmq/MemoryResourceTools.h>: the message behind a
// container built in a transport's memory resource.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairmq/MemoryResources.h>

#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace fair::mq {

using BytePmrAllocator = pmr::polymorphic_allocator<fair::mq::byte>;

/// The message holding `container_`'s elements, which it consumes: without a copy when the
/// container's memory resource made its buffer and no other target is named (or the target is
/// that resource), else a copy into a new message of `targetResource`'s transport. Throws when
/// neither the container's allocator nor `targetResource` is a fair::mq::MemoryResource.
template<typename ContainerT>
MessagePtr getMessage(ContainerT&& container_, MemoryResource* targetResource = nullptr)
{
    auto container = std::move(container_);
    auto* resource = dynamic_cast<MemoryResource*>(container.get_allocator().resource());
    if (!resource && !targetResource) {
        throw std::runtime_error("Neither the container or target resource specified");
    }
    using Element = std::remove_const_t<typename ContainerT::value_type>;
    const size_t bytes = container.size() * sizeof(Element);
    void* data = static_cast<void*>(const_cast<Element*>(container.data()));
    if (resource && (!targetResource || resource->is_equal(*targetResource))) {
        if (MessagePtr message = resource->getMessage(data)) {
            message->SetUsedSize(bytes);
            return message;
        }
        // A container need not allocate (a short string keeps its bytes inside): copy them.
        targetResource = resource;
    }
    MessagePtr message = targetResource->getTransportFactory()->CreateMessage(bytes);
    if (bytes > 0) {
        std::memcpy(message->GetData(), container.data(), bytes);
    }
    return message;
}

} // namespace fair::mq
