// fairmq-rs: Boost.ProgramOptions declarations as the C ABI's fmq_option table (see
// fairmq_rs/boost_options.hpp). Needs -lboost_program_options.
#ifndef FAIRMQ_RS_BOOST_OPTIONS_HPP
#define FAIRMQ_RS_BOOST_OPTIONS_HPP

#include "fairmq_rs.hpp"

#endif
