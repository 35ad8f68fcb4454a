/* A program that uses the system's libzmq and fairmq-rs side by side, as a C++ FairMQ program
 * linking both would. Linked statically against the isolated libfairmq_rs.a plus -lzmq: the
 * archive's bundled libzmq is local to it, so zmq_* here resolve to the system library and the two
 * copies never see each other's sockets or contexts.
 * Usage: zmq_clash SESSION DIR (shmem session name, directory for ipc endpoints). */
#include "fairmq_rs.h"

#include <stdio.h>
#include <string.h>
#include <zmq.h>

#define CHECK(cond)                                                                                    \
    do {                                                                                              \
        if (!(cond)) {                                                                                \
            char e[256] = "";                                                                            \
            fmq_last_error(e, sizeof e, NULL);                                                        \
            fprintf(stderr, "%s:%d: check failed: %s (fmq: %s; zmq: %s)\n", __FILE__, __LINE__, #cond, e, \
                    zmq_strerror(zmq_errno()));                                                       \
            return 1;                                                                                 \
        }                                                                                             \
    } while (0)

/* One message through a fairmq-rs PAIR over ipc on transport `kind`. */
static int fmq_round_trip(const char* kind, const char* session, const char* dir)
{
    const char* opts[] = {"--session", session, "--shm-segment-size", "10000000"};
    fmq_transport* t = NULL;
    CHECK(fmq_transport_new(kind, "zmq-clash", 4, opts, &t) == FMQ_OK);
    char spec[512];
    snprintf(spec, sizeof spec, "name=a,type=pair,method=bind,address=ipc://%s/clash-%s,linger=0", dir, kind);
    fmq_channel *a = NULL, *b = NULL;
    CHECK(fmq_channel_new(t, spec, &a) == FMQ_OK);
    snprintf(spec, sizeof spec, "name=b,type=pair,method=connect,address=ipc://%s/clash-%s,linger=0", dir, kind);
    CHECK(fmq_channel_new(t, spec, &b) == FMQ_OK);
    fmq_message *m = NULL, *r = NULL;
    CHECK(fmq_message_new_copy(t, "from fairmq-rs", 14, &m) == FMQ_OK && fmq_message_new(t, &r) == FMQ_OK);
    CHECK(fmq_channel_send(a, m, 5000) == 14);
    CHECK(fmq_channel_receive(b, r, 5000) == 14 && memcmp(fmq_message_data(r), "from fairmq-rs", 14) == 0);
    fmq_message_free(m);
    fmq_message_free(r);
    fmq_channel_free(b);
    fmq_channel_free(a);
    fmq_transport_free(t);
    return 0;
}

int main(int argc, char** argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s SESSION DIR\n", argv[0]);
        return 2;
    }
    /* The system's libzmq: an inproc PUSH/PULL round trip, kept open while fairmq-rs works. */
    int major = 0, minor = 0, patch = 0;
    zmq_version(&major, &minor, &patch);
    void* ctx = zmq_ctx_new();
    CHECK(ctx != NULL);
    void* push = zmq_socket(ctx, ZMQ_PUSH);
    void* pull = zmq_socket(ctx, ZMQ_PULL);
    CHECK(push && pull);
    CHECK(zmq_bind(pull, "inproc://clash") == 0 && zmq_connect(push, "inproc://clash") == 0);
    CHECK(zmq_send(push, "from libzmq", 11, 0) == 11);

    CHECK(fmq_round_trip("zeromq", argv[1], argv[2]) == 0);
    CHECK(fmq_round_trip("shmem", argv[1], argv[2]) == 0);

    char buf[32];
    CHECK(zmq_recv(pull, buf, sizeof buf, 0) == 11 && memcmp(buf, "from libzmq", 11) == 0);
    CHECK(zmq_close(push) == 0 && zmq_close(pull) == 0 && zmq_ctx_term(ctx) == 0);
    printf("system libzmq %d.%d.%d and fairmq-rs %s: ok\n", major, minor, patch, fmq_version());
    return 0;
}
