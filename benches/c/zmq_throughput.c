/* One-way PUSH -> PULL throughput of a libzmq build, as FairMQ's zeromq transport moves messages:
 * a fresh message per send, received into a fresh message and dropped. Built twice by run.sh, once
 * against the system's libzmq and once against the libzmq cargo vendors for fairmq-zmq, so the two
 * builds of the same libzmq version are compared side by side.
 *
 *   zmq_throughput recv <address> <messages> <size>   prints "<messages/s>" (first to last message)
 *   zmq_throughput send <address> <messages> <size>
 */
#include <zmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "%s: %s\n", what, zmq_strerror(zmq_errno()));
        exit(1);
    }
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s send|recv <address> <messages> <size>\n", argv[0]);
        return 1;
    }
    const int receiving = strcmp(argv[1], "recv") == 0;
    const long count = atol(argv[3]);
    const size_t size = (size_t) atol(argv[4]);
    void *ctx = zmq_ctx_new();
    void *s = zmq_socket(ctx, receiving ? ZMQ_PULL : ZMQ_PUSH);
    check(s != NULL, "zmq_socket");
    int linger = -1;
    check(zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger) == 0, "ZMQ_LINGER");
    if (receiving) {
        check(zmq_bind(s, argv[2]) == 0, "zmq_bind");
        zmq_msg_t m;
        double first = 0;
        for (long i = 0; i < count; i++) {
            zmq_msg_init(&m);
            check(zmq_msg_recv(&m, s, 0) >= 0, "zmq_msg_recv");
            if (i == 0)
                first = now();
            zmq_msg_close(&m);
        }
        printf("%.0f\n", (count - 1) / (now() - first));
    } else {
        check(zmq_connect(s, argv[2]) == 0, "zmq_connect");
        for (long i = 0; i < count; i++) {
            zmq_msg_t m;
            check(zmq_msg_init_size(&m, size) == 0, "zmq_msg_init_size");
            check(zmq_msg_send(&m, s, 0) >= 0, "zmq_msg_send");
        }
    }
    zmq_close(s);
    zmq_ctx_term(ctx);
    return 0;
}
