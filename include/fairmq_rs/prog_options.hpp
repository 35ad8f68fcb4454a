// fairmq-rs C++ API: a program's configuration (FairMQ's ProgOptions). Part of fairmq_rs.hpp;
// FairMQ programs reach it through <fairmq/ProgOptions.h>.
//
// Two stores kept equal: the library's (an fmq_config, which the Rust device reads and sets:
// channel addresses, the transport, ...) and a map of boost::any values that keeps every value in
// the C++ type it was set with, as FairMQ's GetProperty<T> demands. What C++ sets goes to both;
// what the library sets comes back through a subscription and is typed by its option declaration
// (a custom option's Boost type, a FairMQ option's type) or else by the kind of its value.
#pragma once

#include "boost_options.hpp"
#include "c_abi.hpp"
#include "properties.hpp"

#include <boost/any.hpp>
#include <boost/program_options.hpp>
#include <boost/shared_ptr.hpp>

#include <cstdint>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <vector>

namespace fair {
namespace mq {

class Channel;

namespace detail {
/// A property as the library stores it: its value kind and its text (a list: one item a line).
struct LibraryValue {
    fmq_option_type type;
    std::string text;
};

template<typename T>
bool Holds(const Property& p)
{
    return p.type() == typeid(T);
}

/// Floating point as text that reads back to the same double.
template<typename F>
std::string ExactText(F v)
{
    std::ostringstream out;
    out.precision(std::numeric_limits<double>::max_digits10);
    out << static_cast<double>(v);
    return out.str();
}

/// How the library stores `p`: numbers as numbers, text and lists of text as such, and every other
/// type as the text PropertyHelper prints for it (the library only ever reads it back as text).
inline LibraryValue ToLibrary(const Property& p)
{
    auto integer = [](auto v) { return std::to_string(v); };
    if (Holds<bool>(p)) return {FMQ_OPTION_BOOL, boost::any_cast<bool>(p) ? "true" : "false"};
    if (Holds<char>(p)) return {FMQ_OPTION_STRING, std::string(1, boost::any_cast<char>(p))};
    if (Holds<signed char>(p)) return {FMQ_OPTION_INT, integer(boost::any_cast<signed char>(p))};
    if (Holds<short>(p)) return {FMQ_OPTION_INT, integer(boost::any_cast<short>(p))};
    if (Holds<int>(p)) return {FMQ_OPTION_INT, integer(boost::any_cast<int>(p))};
    if (Holds<long>(p)) return {FMQ_OPTION_INT, integer(boost::any_cast<long>(p))};
    if (Holds<long long>(p)) return {FMQ_OPTION_INT, integer(boost::any_cast<long long>(p))};
    if (Holds<unsigned char>(p)) return {FMQ_OPTION_UINT64, integer(boost::any_cast<unsigned char>(p))};
    if (Holds<unsigned short>(p)) return {FMQ_OPTION_UINT64, integer(boost::any_cast<unsigned short>(p))};
    if (Holds<unsigned>(p)) return {FMQ_OPTION_UINT64, integer(boost::any_cast<unsigned>(p))};
    if (Holds<unsigned long>(p)) return {FMQ_OPTION_UINT64, integer(boost::any_cast<unsigned long>(p))};
    if (Holds<unsigned long long>(p)) return {FMQ_OPTION_UINT64, integer(boost::any_cast<unsigned long long>(p))};
    if (Holds<float>(p)) return {FMQ_OPTION_FLOAT, ExactText(boost::any_cast<float>(p))};
    if (Holds<double>(p)) return {FMQ_OPTION_FLOAT, ExactText(boost::any_cast<double>(p))};
    if (Holds<long double>(p)) return {FMQ_OPTION_FLOAT, ExactText(boost::any_cast<long double>(p))};
    if (Holds<std::string>(p)) return {FMQ_OPTION_STRING, boost::any_cast<const std::string&>(p)};
    if (Holds<const char*>(p)) {
        const char* s = boost::any_cast<const char*>(p);
        return {FMQ_OPTION_STRING, s ? s : ""};
    }
    if (Holds<std::vector<std::string>>(p)) {
        std::string lines;
        for (const auto& item : boost::any_cast<const std::vector<std::string>&>(p)) {
            lines += (lines.empty() ? "" : "\n") + item;
        }
        return {FMQ_OPTION_STRINGS, lines};
    }
    return {FMQ_OPTION_STRING, PropertyHelper::GetPropertyInfo(p).first};
}

inline std::vector<std::string> Lines(const std::string& text)
{
    std::vector<std::string> items;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) items.push_back(line);
    return items;
}

/// A property the library holds, as the C++ type `type` (an FMQ_OPTION_* of a declaration or of
/// the value's kind) names; `exact` tells whether the type came from a declaration.
inline Property FromLibrary(fmq_option_type type, const std::string& text, bool exact)
{
    try {
        switch (type) {
            case FMQ_OPTION_BOOL:
            case FMQ_OPTION_FLAG: return text == "true" || text == "1";
            case FMQ_OPTION_INT: {
                const long long v = std::stoll(text);
                if (exact || (v >= std::numeric_limits<int>::min() && v <= std::numeric_limits<int>::max())) {
                    return static_cast<int>(v);
                }
                return static_cast<long>(v);
            }
            case FMQ_OPTION_UINT16: return static_cast<uint16_t>(std::stoul(text));
            case FMQ_OPTION_UINT64: return static_cast<uint64_t>(std::stoull(text));
            case FMQ_OPTION_FLOAT:
                if (exact) return std::stof(text);
                return std::stod(text);
            case FMQ_OPTION_STRINGS: return Lines(text);
            default: return text;
        }
    } catch (const std::logic_error&) {
        return text; // a value its declaration does not fit (set by other means): kept as text
    }
}

/// The thread's write into the library, which its subscription must not take for the library's.
struct Echo {
    const void* store = nullptr;
    const std::string* key = nullptr;
};
inline Echo& ThreadEcho()
{
    static thread_local Echo echo;
    return echo;
}
} // namespace detail

/// A program's configuration (FairMQ's ProgOptions): every value in the type it was set with.
/// Made standalone it holds FairMQ's defaults (`transport` zeromq, `session` default, ...); a
/// device program's (getDevice's) is the parsed command line. Thread-safe.
class ProgOptions {
  public:
    /// A standalone configuration with the default of every FairMQ option.
    ProgOptions()
    {
        fmq_config* c = nullptr;
        detail::check(fmq_config_new(true, &c), "ProgOptions");
        fOwned = std::shared_ptr<fmq_config>(c, fmq_config_free);
        Attach(c);
    }
    /// The configuration of a running program (borrowed: valid while the program runs).
    explicit ProgOptions(const fmq_config* borrowed) { Attach(borrowed); }
    ~ProgOptions() { Detach(); }
    ProgOptions(const ProgOptions&) = delete;
    ProgOptions& operator=(const ProgOptions&) = delete;
    ProgOptions(ProgOptions&&) = delete;
    ProgOptions& operator=(ProgOptions&&) = delete;

    /// Parses a command line (the first item is the program's name) as FairMQ's ParseAll: every
    /// property goes, then the defaults and what the line gives are set. A token that is no option
    /// throws boost::program_options::unknown_option unless `allowUnregistered`.
    void ParseAll(const std::vector<std::string>& cmdArgs, bool allowUnregistered)
    {
        std::vector<const char*> argv;
        for (const auto& a : cmdArgs) argv.push_back(a.c_str());
        ParseAll(static_cast<int>(argv.size()), argv.data(), allowUnregistered);
    }
    void ParseAll(int argc, char const* const* argv, bool allowUnregistered = true);
    /// FairMQ's Notify (runs Boost's notifiers): values here are stored when parsed.
    void Notify() {}
    /// Adds options to those ParseAll knows (FairMQ's AddToCmdLineOptions); their values are read
    /// as the Boost types they declare.
    void AddToCmdLineOptions(const boost::program_options::options_description& optDesc, bool visible = true);
    /// Every option added with AddToCmdLineOptions, in one description.
    boost::program_options::options_description& GetCmdLineOptions();

    /// 1 if `key` is set, else 0.
    int Count(const std::string& key) const
    {
        std::lock_guard<std::mutex> lock(fMtx);
        return fMap.count(key) ? 1 : 0;
    }
    /// Channel name -> number of sub-channels (keys `chans.<name>.<index>.type`).
    std::unordered_map<std::string, int> GetChannelInfo() const
    {
        static const std::regex typeKey(R"(chans\.(.+)\.[0-9]+\.type)");
        std::unordered_map<std::string, int> info;
        std::lock_guard<std::mutex> lock(fMtx);
        for (const auto& kv : fMap) {
            std::smatch m;
            if (std::regex_match(kv.first, m, typeKey)) ++info[m[1]];
        }
        return info;
    }
    std::vector<std::string> GetPropertyKeys() const
    {
        std::vector<std::string> keys;
        std::lock_guard<std::mutex> lock(fMtx);
        for (const auto& kv : fMap) keys.push_back(kv.first);
        return keys;
    }

    /// The value of `key`, which must be a T (else boost::bad_any_cast); PropertyNotFoundError if
    /// there is none.
    template<typename T>
    T GetProperty(const std::string& key) const
    {
        std::lock_guard<std::mutex> lock(fMtx);
        auto it = fMap.find(key);
        if (it == fMap.end()) throw PropertyNotFoundError("Config has no key: " + key);
        return Typed<T>(key, it->second);
    }
    template<typename T>
    T GetProperty(const std::string& key, const T& ifNotFound) const
    {
        std::lock_guard<std::mutex> lock(fMtx);
        auto it = fMap.find(key);
        return it == fMap.end() ? ifNotFound : Typed<T>(key, it->second);
    }
    /// FairMQ's older names: GetValue gives a T{} for a missing key, SetValue is SetProperty.
    template<typename T>
    T GetValue(const std::string& key) const
    {
        return GetProperty<T>(key, T{});
    }
    template<typename T>
    void SetValue(const std::string& key, T val)
    {
        SetProperty(key, std::move(val));
    }
    /// The value as FairMQ prints it ("[unidentified_type]" for a type it does not know).
    std::string GetPropertyAsString(const std::string& key) const
    {
        std::lock_guard<std::mutex> lock(fMtx);
        auto it = fMap.find(key);
        if (it == fMap.end()) throw PropertyNotFoundError("Config has no key: " + key);
        return PropertyHelper::GetPropertyInfo(it->second).first;
    }
    std::string GetPropertyAsString(const std::string& key, const std::string& ifNotFound) const
    {
        std::lock_guard<std::mutex> lock(fMtx);
        auto it = fMap.find(key);
        return it == fMap.end() ? ifNotFound : PropertyHelper::GetPropertyInfo(it->second).first;
    }
    /// Every property whose whole key matches the regular expression `q`.
    Properties GetProperties(const std::string& q) const
    {
        const std::regex re(q);
        return Select([&](const std::string& k) { return std::regex_match(k, re); });
    }
    Properties GetPropertiesStartingWith(const std::string& q) const
    {
        return Select([&](const std::string& k) { return k.compare(0, q.size(), q) == 0; });
    }
    std::map<std::string, std::string> GetPropertiesAsString(const std::string& q) const { return AsText(GetProperties(q)); }
    std::map<std::string, std::string> GetPropertiesAsStringStartingWith(const std::string& q) const
    {
        return AsText(GetPropertiesStartingWith(q));
    }

    /// Sets `key` (a `const char*` stays one); subscribers of T and of text hear of it.
    template<typename T>
    void SetProperty(const std::string& key, T val)
    {
        using V = typename std::decay<T>::type;
        Store(key, Property(V(val)));
        fEvents.Emit<PropertyChange, V>(key, V(val));
        fEvents.Emit<PropertyChangeAsString, std::string>(key, GetPropertyAsString(key));
    }
    /// Sets `key` only if it exists; whether it did.
    template<typename T>
    bool UpdateProperty(const std::string& key, T val)
    {
        if (!Count(key)) return false;
        SetProperty(key, std::move(val));
        return true;
    }
    /// Sets every property as it is (each keeps its type); subscribers of registered types hear.
    void SetProperties(const Properties& input)
    {
        for (const auto& kv : input) Store(kv.first, kv.second);
        for (const auto& kv : input) Emit(kv.first, kv.second);
    }
    /// SetProperties if every key exists, else nothing; whether it did.
    bool UpdateProperties(const Properties& input)
    {
        {
            std::lock_guard<std::mutex> lock(fMtx);
            for (const auto& kv : input) {
                if (!fMap.count(kv.first)) return false;
            }
        }
        SetProperties(input);
        return true;
    }
    void DeleteProperty(const std::string& key)
    {
        {
            std::lock_guard<std::mutex> lock(fMtx);
            fMap.erase(key);
        }
        fmq_config_delete(fCfg, key.c_str()); // FMQ_ERROR_NOT_FOUND for an absent key is fine
    }
    /// Adds channel `name`'s next sub-channel with the configuration of `channel` (as FairMQ:
    /// type, method, address, transport, sizes, linger, rate logging, port range, auto-bind).
    void AddChannel(const std::string& name, const Channel& channel);

    /// Calls `func(key, value)` whenever a property of type T is set, on the thread that sets
    /// it; a subscriber's second subscription for T replaces its first.
    template<typename T>
    void Subscribe(const std::string& subscriber, std::function<void(typename PropertyChange::KeyType, T)> func) const
    {
        fEvents.Subscribe<PropertyChange, T>(subscriber, std::move(func));
    }
    template<typename T>
    void Unsubscribe(const std::string& subscriber) const
    {
        fEvents.Unsubscribe<PropertyChange, T>(subscriber);
    }
    /// Calls `func(key, value as text)` whenever any property is set.
    void SubscribeAsString(const std::string& subscriber,
                           std::function<void(typename PropertyChange::KeyType, std::string)> func) const
    {
        fEvents.Subscribe<PropertyChangeAsString, std::string>(subscriber, std::move(func));
    }
    void UnsubscribeAsString(const std::string& subscriber) const
    {
        fEvents.Unsubscribe<PropertyChangeAsString, std::string>(subscriber);
    }

    /// The options and what they do (FairMQ's --help).
    void PrintHelp() const;
    /// Every property with its value and type, in the log (FairMQ's PrintOptions, at debug).
    void PrintOptions() const;
    /// Every property as `key:value:type:` lines (FairMQ's --print-options).
    void PrintOptionsRaw() const;

    /// The library's store (for the C ABI: a device run with this configuration shares it).
    const fmq_config* Raw() const { return fCfg; }

    /// Makes this the view of another store (a device program's): what it held goes. Used by the
    /// program around a device; nullptr detaches (the store's program ended).
    void SetConfig(const fmq_config* borrowed)
    {
        if (borrowed) {
            Detach();
            fOwned.reset();
            Attach(borrowed);
            return;
        }
        // The store is gone (its program ended) or goes with fOwned: nothing to unsubscribe from.
        fCfg = nullptr;
        fOwned.reset();
        std::lock_guard<std::mutex> lock(fMtx);
        fMap.clear();
        fGuessed.clear();
    }

  private:
    template<typename T>
    T Typed(const std::string& key, const Property& p) const
    {
        if (const T* v = boost::any_cast<T>(&p)) return *v;
        // A value the library set without a declaration has a guessed type: read as T if it can.
        if (fGuessed.count(key)) {
            if constexpr (std::is_same<T, std::string>::value) {
                return PropertyHelper::GetPropertyInfo(p).first;
            } else if constexpr (std::is_arithmetic<T>::value) {
                std::istringstream in(PropertyHelper::GetPropertyInfo(p).first);
                T v{};
                in >> std::boolalpha >> v;
                if (!in.fail()) return v;
            }
        }
        return boost::any_cast<T>(p); // throws boost::bad_any_cast, as FairMQ's does
    }

    template<typename Pred>
    Properties Select(Pred pred) const
    {
        Properties out;
        std::lock_guard<std::mutex> lock(fMtx);
        for (const auto& kv : fMap) {
            if (pred(kv.first)) out.emplace(kv.first, kv.second);
        }
        return out;
    }
    static std::map<std::string, std::string> AsText(const Properties& props)
    {
        std::map<std::string, std::string> out;
        for (const auto& kv : props) out.emplace(kv.first, PropertyHelper::GetPropertyInfo(kv.second).first);
        return out;
    }

    /// Sets `key` in both stores, without telling this store's subscribers.
    void Store(const std::string& key, const Property& p)
    {
        {
            std::lock_guard<std::mutex> lock(fMtx);
            fMap[key] = p;
            fGuessed.erase(key);
        }
        const detail::LibraryValue v = detail::ToLibrary(p);
        detail::Echo& echo = detail::ThreadEcho();
        const detail::Echo before = echo;
        echo = detail::Echo{this, &key};
        const fmq_result r = fmq_config_set_value(fCfg, key.c_str(), v.type, v.text.c_str());
        echo = before;
        detail::check(r, "SetProperty");
    }

    /// Tells the subscribers of `p`'s type (when PropertyHelper knows it) and of text.
    void Emit(const std::string& key, const Property& p) const
    {
        if (detail::Holds<const char*>(p)) {
            fEvents.Emit<PropertyChange, const char*>(key, boost::any_cast<const char*>(p));
        } else if (PropertyHelper::GetPropertyInfo(p).second != "[unidentified_type]") {
            PropertyHelper::EmitPropertyChange(fEvents, key, p);
        }
        fEvents.Emit<PropertyChangeAsString, std::string>(key, PropertyHelper::GetPropertyInfo(p).first);
    }

    /// The C++ type a value the library holds gets: its option's declared type, else its kind's.
    Property Declared(const std::string& key, fmq_option_type kind, const std::string& text, bool& guessed) const
    {
        guessed = false;
        auto custom = fCustomOptions.find(key);
        if (custom != fCustomOptions.end()) {
            try {
                boost::any v;
                const auto& semantic = *custom->second->semantic();
                if (semantic.max_tokens() == 0) return text == "true";
                std::vector<std::string> tokens = kind == FMQ_OPTION_STRINGS ? detail::Lines(text) : std::vector<std::string>{text};
                semantic.parse(v, tokens, true);
                return v;
            } catch (const std::exception&) {
                // falls through to the library's declaration or kind
            }
        }
        const fmq_option_type declared = fmq_option_declared_type(key.c_str());
        if (declared >= 0) return detail::FromLibrary(declared, text, true);
        guessed = true;
        return detail::FromLibrary(kind, text, false);
    }

    /// Called for every property the library sets (not for this object's own writes).
    static void OnLibrarySet(const char* key, fmq_option_type kind, const char* value, void* user) noexcept
    {
        auto* self = static_cast<ProgOptions*>(user);
        const detail::Echo& echo = detail::ThreadEcho();
        if (echo.store == self && (!echo.key || *echo.key == key)) return; // no key: all of them
        try {
            bool guessed = false;
            Property p = self->Declared(key, kind, value, guessed);
            {
                std::lock_guard<std::mutex> lock(self->fMtx);
                self->fMap[key] = p;
                if (guessed) {
                    self->fGuessed.insert(key);
                } else {
                    self->fGuessed.erase(key);
                }
            }
            self->Emit(key, p);
        } catch (...) {
            // A subscriber's exception must not cross into the library (FairMQ's would end there).
        }
    }

    /// Reads every property of the library's store into the map (no events).
    void Import()
    {
        std::map<std::string, Property> map;
        std::set<std::string> guessed;
        std::istringstream keys(detail::read_text([&](char* b, size_t l, size_t* n) { return fmq_config_keys(fCfg, "", b, l, n); }));
        for (std::string key; std::getline(keys, key);) {
            const fmq_option_type kind = fmq_config_value_type(fCfg, key.c_str());
            if (kind < 0) continue; // deleted meanwhile
            const std::string text = detail::read_text(
                [&](char* b, size_t l, size_t* n) { return fmq_config_property_lines(fCfg, key.c_str(), b, l, n); });
            bool g = false;
            map[key] = Declared(key, kind, text, g);
            if (g) guessed.insert(key);
        }
        std::lock_guard<std::mutex> lock(fMtx);
        fMap = std::move(map);
        fGuessed = std::move(guessed);
    }

    void Attach(const fmq_config* cfg)
    {
        fCfg = cfg;
        fSubscriber = "fairmq-rs ProgOptions " + std::to_string(reinterpret_cast<uintptr_t>(this));
        detail::check(fmq_config_subscribe(fCfg, fSubscriber.c_str(), &ProgOptions::OnLibrarySet, this), "ProgOptions");
        Import();
    }
    void Detach() noexcept
    {
        if (fCfg) fmq_config_unsubscribe(fCfg, fSubscriber.c_str());
        fCfg = nullptr;
        std::lock_guard<std::mutex> lock(fMtx);
        fMap.clear();
        fGuessed.clear();
    }

    std::shared_ptr<fmq_config> fOwned;
    const fmq_config* fCfg = nullptr;
    std::string fSubscriber;
    mutable std::mutex fMtx;
    std::map<std::string, Property> fMap;
    std::set<std::string> fGuessed;
    mutable EventManager fEvents;
    // Options added by AddToCmdLineOptions, by name (shared: Boost's own handles).
    std::map<std::string, boost::shared_ptr<boost::program_options::option_description>> fCustomOptions;
    std::vector<boost::shared_ptr<boost::program_options::option_description>> fCustomOrder;
    std::shared_ptr<boost::program_options::options_description> fCmdLineOptions;
};

inline void ProgOptions::ParseAll(int argc, char const* const* argv, bool allowUnregistered)
{
    boost::program_options::options_description custom;
    for (const auto& o : fCustomOrder) custom.add(o);
    const detail::BoostOptionTable table(custom);
    detail::Echo& echo = detail::ThreadEcho();
    const detail::Echo before = echo;
    echo = detail::Echo{this, nullptr}; // what the parse sets is read back whole below
    const fmq_result r = fmq_config_parse(fCfg, argc, argv, table.table.data(), table.table.size(), allowUnregistered);
    echo = before;
    if (r == FMQ_ERROR_UNKNOWN_OPTION) {
        // The library's text: unrecognised option '<token>'
        const std::string text = detail::last_error();
        const auto open = text.find('\'');
        const auto close = text.rfind('\'');
        throw boost::program_options::unknown_option(
            open != std::string::npos && close > open ? text.substr(open + 1, close - open - 1) : text);
    }
    if (r != FMQ_OK) throw boost::program_options::error(detail::last_error());
    Import();
}

inline void ProgOptions::AddToCmdLineOptions(const boost::program_options::options_description& optDesc, bool /*visible*/)
{
    for (const auto& o : optDesc.options()) {
        const std::string& name = o->long_name();
        if (fmq_option_declared_type(name.c_str()) >= 0) continue; // one of FairMQ's own: known already
        if (fCustomOptions.count(name)) {
            throw boost::program_options::duplicate_option_error("option '" + name + "' is already defined");
        }
        fCustomOptions.emplace(name, o);
        fCustomOrder.push_back(o);
        if (fCmdLineOptions) fCmdLineOptions->add(o);
    }
    if (fCfg) Import(); // values already set take their declared types
}

inline boost::program_options::options_description& ProgOptions::GetCmdLineOptions()
{
    if (!fCmdLineOptions) {
        fCmdLineOptions = std::make_shared<boost::program_options::options_description>();
        for (const auto& o : fCustomOrder) fCmdLineOptions->add(o);
    }
    return *fCmdLineOptions;
}

inline void ProgOptions::PrintHelp() const
{
    boost::program_options::options_description custom;
    for (const auto& o : fCustomOrder) custom.add(o);
    const detail::BoostOptionTable table(custom);
    std::cout << detail::read_text([&](char* b, size_t l, size_t* n) {
        return fmq_options_help(table.table.data(), table.table.size(), b, l, n);
    }) << std::flush;
}

inline void ProgOptions::PrintOptionsRaw() const
{
    boost::program_options::options_description custom;
    for (const auto& o : fCustomOrder) custom.add(o);
    const detail::BoostOptionTable table(custom);
    std::cout << detail::read_text([&](char* b, size_t l, size_t* n) {
        return fmq_config_print_options(fCfg, table.table.data(), table.table.size(), b, l, n);
    }) << std::flush;
}

inline void ProgOptions::PrintOptions() const
{
    std::ostringstream table;
    table << "Configuration:";
    for (const auto& kv : GetProperties(".*")) {
        const auto info = PropertyHelper::GetPropertyInfo(kv.second);
        table << "\n" << kv.first << " = " << info.first << " [" << info.second << "]";
    }
    fmq_log("debug", table.str().c_str());
}

} // namespace mq
} // namespace fair
