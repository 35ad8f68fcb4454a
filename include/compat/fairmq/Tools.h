// fairmq-rs compatibility header: FairMQ's <fairmq/Tools.h>, the tools.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once
#include <fairmq_rs.hpp>
#include <fairmq/LegacyNames.h>

// The same set as FairMQ 1.10's Tools.h. <fairmq/tools/IO.h> is left out there too: it would put
// <termios.h>'s macros (ECHO, B0, ...) into every source that includes this.
#include <fairmq/tools/Compiler.h>
#include <fairmq/tools/CppSTL.h>
#include <fairmq/tools/Exceptions.h>
#include <fairmq/tools/InstanceLimit.h>
#include <fairmq/tools/Network.h>
#include <fairmq/tools/Process.h>
#include <fairmq/tools/RateLimit.h>
#include <fairmq/tools/Semaphore.h>
#include <fairmq/tools/Strings.h>
#include <fairmq/tools/Unique.h>
#include <fairmq/tools/Version.h>
