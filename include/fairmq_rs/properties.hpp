// fairmq-rs C++ API: property values and how they print (FairMQ's <fairmq/Properties.h>).
// Part of fairmq_rs.hpp; FairMQ programs reach it through the compatibility headers.
//
// As in FairMQ 1.10, a Property is a boost::any (FairMQ's tests boost::any_cast them) and prints
// through PropertyHelper's registry of types: the built-in ones of FairMQ's Properties.cxx, plus
// what PropertyHelper::AddType<T>() adds. Differences: the registry is guarded by a mutex, and
// FairMQ's public map fEventEmitters is PropertyHelper::EmitPropertyChange().
#pragma once

// FairMQ's build defines this (1 where std::filesystem exists); code picks its path type by it,
// and the registry below knows std::filesystem::path only.
#ifndef FAIRMQ_HAS_STD_FILESYSTEM
#define FAIRMQ_HAS_STD_FILESYSTEM 1
#endif

#include "errors.hpp"
#include "event_manager.hpp"

#include <boost/any.hpp>
#include <boost/core/demangle.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <typeindex>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <vector>

namespace fair::mq {

using Property = boost::any;
using Properties = std::map<std::string, Property>;

/// Emitted with a property's new value in its own type (subscribers pick the type).
struct PropertyChange : Event<std::string> {};

/// Thrown when a property that does not exist is read (FairMQ declares it in ProgOptions.h).
struct PropertyNotFoundError : Error
{
    using Error::Error;
};

namespace property_detail {

/// <value as text, type name>
using Info = std::pair<std::string, std::string>;
using Describer = std::function<Info(const Property&)>;
using Emitter = void (*)(const EventManager&, const std::string&, const Property&);

struct TypeEntry
{
    Describer describe;
    Emitter emit;
};

using TypeMap = std::unordered_map<std::type_index, std::shared_ptr<const TypeEntry>>;

struct Registry
{
    std::mutex mutex;
    TypeMap types;
};

// How FairMQ prints the built-in types: integers by std::to_string (so the char types as
// numbers, except plain char, which is itself), floating point streamed with the default
// precision (3.2f is "3.2"), bool as true/false, paths streamed (quoted, as std::quoted).
inline std::string Text(char v) { return std::string(1, v); }
inline std::string Text(signed char v) { return std::to_string(v); }
inline std::string Text(unsigned char v) { return std::to_string(v); }
inline std::string Text(short v) { return std::to_string(v); }
inline std::string Text(unsigned short v) { return std::to_string(v); }
inline std::string Text(int v) { return std::to_string(v); }
inline std::string Text(unsigned v) { return std::to_string(v); }
inline std::string Text(long v) { return std::to_string(v); }
inline std::string Text(unsigned long v) { return std::to_string(v); }
inline std::string Text(long long v) { return std::to_string(v); }
inline std::string Text(unsigned long long v) { return std::to_string(v); }
inline std::string Text(bool v) { return v ? "true" : "false"; }
inline std::string Text(const char* v) { return std::string(v); }
inline std::string Text(const std::string& v) { return v; }

template<typename T>
std::string Streamed(const T& v)
{
    std::ostringstream ss;
    ss << v;
    return ss.str();
}
inline std::string Text(float v) { return Streamed(v); }
inline std::string Text(double v) { return Streamed(v); }
inline std::string Text(long double v) { return Streamed(v); }
inline std::string Text(const std::filesystem::path& v) { return Streamed(v); }

/// The items' texts joined by ", " (by value: vector<bool>'s items are proxies).
template<typename T>
std::string Text(const std::vector<T>& v)
{
    std::string out;
    for (auto it = v.begin(); it != v.end(); ++it) {
        if (it != v.begin()) {
            out += ", ";
        }
        out += Text(static_cast<T>(*it));
    }
    return out;
}

/// A built-in type: printed by Text, its change emitted as an E (a const char* as std::string).
template<typename T, typename E = T>
void Register(TypeMap& types, const char* label)
{
    auto entry = std::make_shared<TypeEntry>();
    entry->describe = [label](const Property& p) { return Info{Text(boost::any_cast<const T&>(p)), label}; };
    entry->emit = [](const EventManager& em, const std::string& key, const Property& p) {
        em.Emit<PropertyChange, E>(key, E(boost::any_cast<const T&>(p)));
    };
    types[std::type_index(typeid(T))] = std::move(entry);
}

/// The registry, made on first use: AddType may run in any translation unit's static initializer.
inline Registry& Types()
{
    static Registry r{{}, [] {
        namespace fs = std::filesystem;
        TypeMap b;
        // The types and labels of FairMQ 1.10's Properties.cxx (size_t and the uintN_t are among them).
        Register<char>(b, "char");
        Register<signed char>(b, "signed char");
        Register<unsigned char>(b, "unsigned char");
        Register<const char*, std::string>(b, "string");
        Register<std::string>(b, "string");
        Register<int>(b, "int");
        Register<short>(b, "short");
        Register<long>(b, "long");
        Register<long long>(b, "long long");
        Register<unsigned>(b, "unsigned");
        Register<unsigned short>(b, "unsigned short");
        Register<unsigned long>(b, "unsigned long");
        Register<unsigned long long>(b, "unsigned long long");
        Register<float>(b, "float");
        Register<double>(b, "double");
        Register<long double>(b, "long double");
        Register<bool>(b, "bool");
        Register<fs::path>(b, "std::filesystem::path");
        Register<std::vector<bool>>(b, "vector<bool>");
        Register<std::vector<char>>(b, "vector<char>");
        Register<std::vector<signed char>>(b, "vector<signed char>");
        Register<std::vector<unsigned char>>(b, "vector<unsigned char>");
        Register<std::vector<std::string>>(b, "vector<string>");
        Register<std::vector<int>>(b, "vector<int>");
        Register<std::vector<short>>(b, "vector<short>");
        Register<std::vector<long>>(b, "vector<long>");
        Register<std::vector<long long>>(b, "vector<long long>");
        Register<std::vector<unsigned>>(b, "vector<unsigned>");
        Register<std::vector<unsigned short>>(b, "vector<unsigned short>");
        Register<std::vector<unsigned long>>(b, "vector<unsigned long>");
        Register<std::vector<unsigned long long>>(b, "vector<unsigned long long>");
        Register<std::vector<float>>(b, "vector<float>");
        Register<std::vector<double>>(b, "vector<double>");
        Register<std::vector<long double>>(b, "vector<long double>");
        Register<std::vector<fs::path>>(b, "vector<std::filesystem::path>");
        return b;
    }()};
    return r;
}

/// The entry for the property's type, or null (an empty Property has type void: none).
inline std::shared_ptr<const TypeEntry> Find(const Property& p)
{
    Registry& r = Types();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.types.find(std::type_index(p.type()));
    return it == r.types.end() ? nullptr : it->second;
}

} // namespace property_detail

class PropertyHelper
{
  public:
    /// Makes properties of type T printable (and their changes emitted as PropertyChange with a T):
    /// T needs an operator<<. The label defaults to T's demangled name. Replaces an earlier entry.
    template<typename T>
    static void AddType(std::string label = "")
    {
        if (label.empty()) {
            label = boost::core::demangle(typeid(T).name());
        }
        auto entry = std::make_shared<property_detail::TypeEntry>();
        entry->describe = [label](const Property& p) {
            std::ostringstream ss;
            ss << boost::any_cast<const T&>(p);
            return property_detail::Info{ss.str(), label};
        };
        entry->emit = [](const EventManager& em, const std::string& key, const Property& p) {
            em.Emit<PropertyChange, T>(key, boost::any_cast<T>(p));
        };
        property_detail::Registry& r = property_detail::Types();
        std::lock_guard<std::mutex> lock(r.mutex);
        r.types[std::type_index(typeid(T))] = std::move(entry);
    }

    /// The value as text; throws std::out_of_range for a type the registry does not know (FairMQ's).
    static std::string ConvertPropertyToString(const Property& p)
    {
        auto entry = property_detail::Find(p);
        if (!entry) {
            throw std::out_of_range(std::string("PropertyHelper: no printer for type ") + boost::core::demangle(p.type().name()));
        }
        return entry->describe(p).first;
    }

    /// <value as text, type name>; both "[unidentified_type]" for a type the registry does not know.
    static std::pair<std::string, std::string> GetPropertyInfo(const Property& p)
    {
        auto entry = property_detail::Find(p);
        if (!entry) {
            return {"[unidentified_type]", "[unidentified_type]"};
        }
        return entry->describe(p);
    }

    /// Emits PropertyChange for `key` with the value in its own type (a const char* as std::string);
    /// throws std::out_of_range for a type the registry does not know (FairMQ's fEventEmitters.at).
    static void EmitPropertyChange(const EventManager& em, const std::string& key, const Property& p)
    {
        auto entry = property_detail::Find(p);
        if (!entry) {
            throw std::out_of_range(std::string("PropertyHelper: no event emitter for type ") + boost::core::demangle(p.type().name()));
        }
        entry->emit(em, key, p);
    }
};

} // namespace fair::mq
