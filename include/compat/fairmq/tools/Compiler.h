// fairmq-rs compatibility header: FairMQ's <fairmq/tools/Compiler.h>, compiler attributes.
// Installed in its own include directory (see ffi/install.sh): it never shadows a real FairMQ.
#pragma once

// FairMQ's spelling of a forced-inline function (GCC and Clang).
#ifndef __FAIRMQ_ALWAYS_INLINE
#define __FAIRMQ_ALWAYS_INLINE __attribute__((always_inline)) inline
#endif
