// fairmq-rs compatibility header: FairMQ's <fairmq/tools/Process.h>, running a command and
// collecting its output (the test suite starts its devices with it).
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern "C" char** environ; // POSIX; <unistd.h> declares it only with _GNU_SOURCE

namespace fair::mq::tools {

/// What execute() returns: everything it printed (each line with its prefix) and the exit code.
struct execute_result
{
    std::string console_out;
    int exit_code;
};

namespace process_detail {

/// An owned file descriptor, closed on every way out (no descriptor leaks on exceptions).
class Fd
{
  public:
    Fd() = default;
    explicit Fd(int fd) : fFd(fd) {}
    Fd(Fd&& other) noexcept : fFd(std::exchange(other.fFd, -1)) {}
    Fd& operator=(Fd&& other) noexcept
    {
        if (this != &other) {
            Close();
            fFd = std::exchange(other.fFd, -1);
        }
        return *this;
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() { Close(); }

    int Get() const { return fFd; }
    bool Open() const { return fFd >= 0; }
    void Close()
    {
        if (fFd >= 0) {
            ::close(fFd); // not retried on EINTR: on Linux the descriptor is gone either way
            fFd = -1;
        }
    }

  private:
    int fFd = -1;
};

[[noreturn]] inline void ThrowErrno(const char* what)
{
    const int err = errno; // before building the message can change it
    throw std::system_error(err, std::generic_category(), std::string("fair::mq::tools::execute: ") + what);
}

/// A pipe whose two ends are close-on-exec, so that children other threads spawn meanwhile do not
/// inherit them (a stray write end in another process would keep our read end from seeing EOF).
/// Both ends are kept above 0-2: the child gets its ends dup2()ed onto 0-2, and a dup2 onto the
/// same number would leave the close-on-exec flag set.
inline void MakePipe(Fd& readEnd, Fd& writeEnd)
{
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        ThrowErrno("pipe2");
    }
    Fd r(fds[0]);
    Fd w(fds[1]);
    for (Fd* end : {&r, &w}) {
        if (end->Get() <= STDERR_FILENO) {
            const int moved = ::fcntl(end->Get(), F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
            if (moved < 0) {
                ThrowErrno("fcntl(F_DUPFD_CLOEXEC)");
            }
            *end = Fd(moved); // closes the low-numbered one
        }
    }
    readEnd = std::move(r);
    writeEnd = std::move(w);
}

inline void SetNonBlocking(int fd)
{
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
        ThrowErrno("fcntl(O_NONBLOCK)");
    }
}

/// Whether `word` names an executable file: a path, or a name found on $PATH.
inline bool IsProgram(const std::string& word)
{
    auto isExecutableFile = [](const std::string& path) {
        struct stat st{};
        return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
    };
    if (word.find('/') != std::string::npos) {
        return isExecutableFile(word);
    }
    const char* env = std::getenv("PATH");
    const std::string path = env != nullptr ? env : "/bin:/usr/bin";
    std::size_t begin = 0;
    while (begin <= path.size()) {
        std::size_t end = path.find(':', begin);
        if (end == std::string::npos) {
            end = path.size();
        }
        const std::string dir = path.substr(begin, end - begin);
        if (isExecutableFile((dir.empty() ? std::string(".") : dir) + "/" + word)) {
            return true;
        }
        begin = end + 1;
    }
    return false;
}

/// The script given to `sh -c`. A plain "program arg arg ..." (no quoting, expansion, redirection,
/// lists, assignments) runs as "exec program arg ...", so that the pid execute() signals is the
/// program's own: dash, for one, keeps itself between and does not pass the signal on (FairMQ's
/// boost::process runs such commands without a shell). Anything else runs through the shell as is.
inline std::string ShellScript(const std::string& cmd)
{
    const bool plain = std::all_of(cmd.begin(), cmd.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == ' ' || c == '\t'
               || std::strchr("_-./:,=+@%", c) != nullptr;
    });
    if (!plain) {
        return cmd;
    }
    const std::size_t begin = cmd.find_first_not_of(" \t");
    if (begin == std::string::npos) {
        return cmd;
    }
    const std::string first = cmd.substr(begin, cmd.find_first_of(" \t", begin) - begin);
    // "A=b prog" is an assignment, and a word that is no program is a builtin ("exit 3") or a
    // keyword: exec would look for a program of that name.
    if (first.find('=') != std::string::npos || !IsProgram(first)) {
        return cmd;
    }
    return "exec " + cmd;
}

/// Prints lines with the prefix to std::cout and keeps them: one insertion per line, so lines of
/// concurrent execute() calls do not interleave within a line.
class LinePrinter
{
  public:
    LinePrinter(std::string& out, const std::string& prefix) : fOut(out), fPrefix(prefix) {}

    void Print(const std::string& line)
    {
        std::string l;
        l.reserve(fPrefix.size() + line.size() + 1);
        l.append(fPrefix).append(line).push_back('\n');
        std::cout << l << std::flush;
        fOut += l;
    }

  private:
    std::string& fOut;
    const std::string& fPrefix;
};

/// Splits what comes out of one of the child's output pipes into lines for the printer; `marker`
/// goes in front of each line ("error: " for stderr, as FairMQ marks them).
class LineReader
{
  public:
    LineReader(Fd fd, const char* marker, LinePrinter& printer)
        : fFd(std::move(fd))
        , fMarker(marker)
        , fPrinter(printer)
    {}

    bool Open() const { return fFd.Open(); }
    int Get() const { return fFd.Get(); }

    /// Reads what is there; at EOF (or a read error) prints the unterminated rest and closes.
    void OnReadable()
    {
        char buf[4096];
        for (;;) {
            const ssize_t n = ::read(fFd.Get(), buf, sizeof(buf));
            if (n > 0) {
                fPending.append(buf, static_cast<std::size_t>(n));
                PrintLines();
                continue;
            }
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                return;
            }
            if (n < 0) {
                fPrinter.Print(std::string("fair::mq::tools::execute: read: ") + std::strerror(errno));
            }
            if (!fPending.empty()) {
                fPrinter.Print(fMarker + fPending);
                fPending.clear();
            }
            fFd.Close();
            return;
        }
    }

  private:
    void PrintLines()
    {
        std::size_t begin = 0;
        for (std::size_t nl = fPending.find('\n'); nl != std::string::npos; nl = fPending.find('\n', begin)) {
            fPrinter.Print(fMarker + fPending.substr(begin, nl - begin));
            begin = nl + 1;
        }
        fPending.erase(0, begin);
    }

    Fd fFd;
    std::string fMarker;
    LinePrinter& fPrinter;
    std::string fPending;
};

/// Writes to a pipe without the process dying of SIGPIPE when the reader is gone: SIGPIPE is
/// blocked in this thread for the write, and one it raised is taken off this thread's pending
/// set again. Returns write()'s result (with errno EPIPE instead of the signal).
inline ssize_t WriteNoSigpipe(int fd, const char* data, std::size_t len)
{
    sigset_t pipeSet;
    sigemptyset(&pipeSet);
    sigaddset(&pipeSet, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    ::sigpending(&pending);
    const bool wasPending = sigismember(&pending, SIGPIPE) == 1; // not ours to take away
    sigset_t old;
    ::pthread_sigmask(SIG_BLOCK, &pipeSet, &old);

    ssize_t n = 0;
    do {
        n = ::write(fd, data, len);
    } while (n < 0 && errno == EINTR);
    const int writeErrno = errno;

    if (n < 0 && writeErrno == EPIPE && !wasPending) {
        const timespec zero{0, 0};
        while (::sigtimedwait(&pipeSet, nullptr, &zero) < 0 && errno == EINTR) {
        }
    }
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    errno = writeErrno;
    return n;
}

/// The exit code as FairMQ's boost::process reports it: the exit status, or the number of the
/// signal that killed the process.
inline int ExitCode(int status)
{
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    if (WIFSIGNALED(status)) {
        return WTERMSIG(status);
    }
    return status;
}

/// The spawned child: reaped exactly once. If execute() leaves by an exception before it has
/// reaped the child, the child is killed and reaped (as boost::process's child does), so no
/// process and no zombie outlives the call.
class Child
{
  public:
    explicit Child(pid_t pid) : fPid(pid) {}
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;
    ~Child()
    {
        if (!fReaped) {
            ::kill(fPid, SIGKILL);
            Wait(0);
        }
    }

    pid_t Pid() const { return fPid; }
    bool Reaped() const { return fReaped; }
    int Status() const { return fStatus; }

    /// waitpid with `options` (0 blocks, WNOHANG polls); true once the child is reaped.
    /// An error (ECHILD: SIGCHLD ignored, or reaped elsewhere) counts as reaped, there being
    /// nothing left to wait for; WaitErrno() then tells it, and there is no status.
    bool Wait(int options)
    {
        while (!fReaped) {
            int status = 0;
            const pid_t r = ::waitpid(fPid, &status, options);
            if (r == fPid) {
                fReaped = true;
                fStatus = status;
            } else if (r == 0) {
                return false; // WNOHANG: still running
            } else if (errno != EINTR) {
                fReaped = true;
                fStatus = -1;
                fWaitErrno = errno;
            }
        }
        return true;
    }
    int WaitErrno() const { return fWaitErrno; }

  private:
    pid_t fPid;
    bool fReaped = false;
    int fStatus = -1;
    int fWaitErrno = 0;
};

/// Spawns `/bin/sh -c script` with the given pipe ends as stdin/stdout/stderr. posix_spawn rather
/// than fork: the caller is typically one of several threads (the test suite runs devices from
/// threads), and after fork only async-signal-safe calls would be allowed in the child. The child
/// starts with no blocked signals and default signal actions, whatever the calling thread had, so
/// that the signal execute() sends (and SIGPIPE) acts on it.
inline pid_t Spawn(const std::string& script, int in, int out, int err)
{
    posix_spawn_file_actions_t actions;
    if (int rc = ::posix_spawn_file_actions_init(&actions); rc != 0) {
        throw std::system_error(rc, std::generic_category(), "fair::mq::tools::execute: posix_spawn_file_actions_init");
    }
    posix_spawnattr_t attr;
    if (int rc = ::posix_spawnattr_init(&attr); rc != 0) {
        ::posix_spawn_file_actions_destroy(&actions);
        throw std::system_error(rc, std::generic_category(), "fair::mq::tools::execute: posix_spawnattr_init");
    }

    int rc = ::posix_spawn_file_actions_adddup2(&actions, in, STDIN_FILENO);
    if (rc == 0) {
        rc = ::posix_spawn_file_actions_adddup2(&actions, out, STDOUT_FILENO);
    }
    if (rc == 0) {
        rc = ::posix_spawn_file_actions_adddup2(&actions, err, STDERR_FILENO);
    }
    sigset_t none;
    sigemptyset(&none);
    sigset_t all;
    sigfillset(&all);
    if (rc == 0) {
        rc = ::posix_spawnattr_setsigmask(&attr, &none);
    }
    if (rc == 0) {
        rc = ::posix_spawnattr_setsigdefault(&attr, &all);
    }
    if (rc == 0) {
        rc = ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    }

    pid_t pid = -1;
    if (rc == 0) {
        std::string arg0("sh");
        std::string arg1("-c");
        std::string arg2(script);
        char* argv[] = {arg0.data(), arg1.data(), arg2.data(), nullptr};
        rc = ::posix_spawn(&pid, "/bin/sh", &actions, &attr, argv, ::environ);
    }
    ::posix_spawnattr_destroy(&attr);
    ::posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        throw std::system_error(rc, std::generic_category(), "fair::mq::tools::execute: posix_spawn /bin/sh");
    }
    return pid;
}

} // namespace process_detail

/// Runs `cmd` with /bin/sh and waits for it to end, as FairMQ's execute():
///  - prints the command, "fair::mq::tools::execute: pid: <pid>", every line the command writes
///    (stderr lines marked "error: ") and finally "fair::mq::tools::execute: exit code: <code>" to
///    std::cout, each line with `prefix` in front, and returns the same lines in console_out;
///  - writes `input` (if not empty) to the command's stdin about 1000 ms after the start; stdin stays
///    open, without EOF, until the command ends;
///  - sends signal `sig` (if not -1) to the command about 2000 ms after the start, if it still runs;
///  - returns when the command has exited and its stdout and stderr are closed; exit_code is its
///    exit status, or the number of the signal that killed it.
/// A command with no shell syntax ("/path/prog --opt x") replaces the shell, so the signal reaches
/// the program itself; in a compound command it reaches only the shell. Throws std::system_error
/// if the command cannot be started. Safe to call from several threads at once.
inline execute_result execute(const std::string& cmd,
                              const std::string& prefix = "",
                              const std::string& input = "",
                              int sig = -1)
{
    using namespace process_detail;
    using Clock = std::chrono::steady_clock;

    std::string out;
    LinePrinter printer(out, prefix);
    printer.Print(cmd);

    Fd inRead, inWrite, outRead, outWrite, errRead, errWrite;
    MakePipe(inRead, inWrite);
    MakePipe(outRead, outWrite);
    MakePipe(errRead, errWrite);

    const Clock::time_point start = Clock::now();
    Child child(Spawn(ShellScript(cmd), inRead.Get(), outWrite.Get(), errWrite.Get()));
    // Our copies of the child's ends go, or we would never see EOF on its output.
    inRead.Close();
    outWrite.Close();
    errWrite.Close();

    printer.Print("fair::mq::tools::execute: pid: " + std::to_string(child.Pid()));

    SetNonBlocking(inWrite.Get());
    SetNonBlocking(outRead.Get());
    SetNonBlocking(errRead.Get());
    LineReader stdOut(std::move(outRead), "", printer);
    LineReader stdErr(std::move(errRead), "error: ", printer);

    const Clock::time_point inputAt = start + std::chrono::milliseconds(1000);
    const Clock::time_point signalAt = start + std::chrono::milliseconds(2000);
    std::size_t inputWritten = 0;
    bool inputPending = !input.empty();
    bool signalPending = sig != -1;

    for (;;) {
        const Clock::time_point now = Clock::now();
        if (signalPending && now >= signalAt) {
            signalPending = false;
            if (!child.Wait(WNOHANG)) { // a reaped pid may already belong to another process
                ::kill(child.Pid(), sig);
            }
        }
        const bool inputDue = inputPending && now >= inputAt;

        if (!stdOut.Open() && !stdErr.Open()) {
            // The output is complete. Only pending input or a pending signal can still matter, and
            // only while the child runs (it may have closed its output and still wait for them).
            if (!inputPending && !signalPending) {
                break;
            }
            if (child.Wait(WNOHANG)) {
                break;
            }
        }

        pollfd fds[3];
        nfds_t nfds = 0;
        for (const LineReader* r : {&stdOut, &stdErr}) {
            if (r->Open()) {
                fds[nfds++] = pollfd{r->Get(), POLLIN, 0};
            }
        }
        if (inputDue) {
            fds[nfds++] = pollfd{inWrite.Get(), POLLOUT, 0};
        }

        // Sleep until there is output, the stdin pipe takes input, or the next deadline; with the
        // output closed, look for the child's exit every 10 ms.
        int timeoutMs = -1;
        auto until = [&](Clock::time_point t) {
            const auto ms = std::chrono::ceil<std::chrono::milliseconds>(t - now).count();
            const int m = static_cast<int>(std::clamp<decltype(ms)>(ms, 0, std::numeric_limits<int>::max()));
            timeoutMs = timeoutMs < 0 ? m : std::min(timeoutMs, m);
        };
        if (inputPending && !inputDue) {
            until(inputAt);
        }
        if (signalPending) {
            until(signalAt);
        }
        if (!stdOut.Open() && !stdErr.Open()) {
            until(now + std::chrono::milliseconds(10));
        }

        const int n = ::poll(fds, nfds, timeoutMs);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            ThrowErrno("poll");
        }
        for (nfds_t i = 0; i < nfds; ++i) {
            if (fds[i].revents == 0) {
                continue;
            }
            if (fds[i].fd == inWrite.Get()) {
                // POLLERR here means the reader is gone: the write reports EPIPE.
                const ssize_t w = WriteNoSigpipe(inWrite.Get(), input.data() + inputWritten, input.size() - inputWritten);
                if (w >= 0) {
                    inputWritten += static_cast<std::size_t>(w);
                    inputPending = inputWritten < input.size();
                } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
                    printer.Print(std::string("fair::mq::tools::execute: writing input: ") + std::strerror(errno));
                    inputPending = false;
                }
            } else if (fds[i].fd == stdOut.Get()) {
                stdOut.OnReadable();
            } else if (fds[i].fd == stdErr.Get()) {
                stdErr.OnReadable();
            }
        }
    }

    child.Wait(0);
    execute_result result{std::string(), -1};
    if (child.WaitErrno() == 0) {
        result.exit_code = ExitCode(child.Status());
    } else { // no status to report: -1, which no exit status or signal number is
        printer.Print(std::string("fair::mq::tools::execute: waitpid: ") + std::strerror(child.WaitErrno()));
    }
    printer.Print("fair::mq::tools::execute: exit code: " + std::to_string(result.exit_code));
    result.console_out = std::move(out);
    return result;
}

} // namespace fair::mq::tools
