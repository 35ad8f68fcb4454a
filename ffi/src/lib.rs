//! The C ABI: filled by the issue "C ABI: libfairmq_rs.so, include/fairmq_rs.h".
