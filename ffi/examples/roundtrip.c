/* Transports, channels, messages (every constructor), multipart, pollers and counters, in one
 * process, for the transport named on the command line. Exit code 0 when every check passed. */
#include "fairmq_rs.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                 \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            char e[256] = "";                                                                      \
            fmq_last_error(e, sizeof e, NULL);                                                     \
            fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, __LINE__, #cond, e); \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

static int freed = 0;
static void free_buffer(void* data, void* hint)
{
    (void)hint;
    free(data);
    freed++;
}

int main(int argc, char** argv)
{
    const char* kind = argc > 1 ? argv[1] : "zeromq";
    const char* session = argc > 2 ? argv[2] : "c-roundtrip";
    char addr[256];
    snprintf(addr, sizeof addr, "name=data,type=pair,method=bind,address=ipc:///tmp/fmqrs-c-%s-%s,linger=0", kind, session);
    const char* opts[] = {"--session", session, "--shm-segment-size", "20000000"};
    fmq_transport* t = NULL;
    CHECK(fmq_transport_new(kind, "c-test", 4, opts, &t) == FMQ_OK);
    fmq_channel *a = NULL, *b = NULL;
    CHECK(fmq_channel_new(t, addr, &a) == FMQ_OK);
    char bound[256];
    CHECK(fmq_channel_address(a, bound, sizeof bound, NULL) == FMQ_OK);
    char spec[320];
    snprintf(spec, sizeof spec, "name=data,type=pair,method=connect,address=%s,linger=0", bound);
    CHECK(fmq_channel_new(t, spec, &b) == FMQ_OK);

    /* Copy, size, aligned, user buffer with free callback, static. */
    fmq_message* m = NULL;
    CHECK(fmq_message_new_copy(t, "hello", 5, &m) == FMQ_OK);
    CHECK(fmq_channel_send(a, m, 5000) == 5);
    CHECK(fmq_message_size(m) == 0);
    fmq_message* r = NULL;
    CHECK(fmq_message_new(t, &r) == FMQ_OK);
    CHECK(fmq_channel_receive(b, r, 5000) == 5);
    CHECK(memcmp(fmq_message_data(r), "hello", 5) == 0);
    CHECK(fmq_message_set_used_size(r, 2) && fmq_message_size(r) == 2 && !fmq_message_set_used_size(r, 9));
    fmq_message* c = NULL;
    CHECK(fmq_message_new(t, &c) == FMQ_OK);
    CHECK(fmq_message_copy(c, r) == FMQ_OK && fmq_message_size(c) == 2);
    CHECK(fmq_message_rebuild_size(c, 100) == FMQ_OK && fmq_message_size(c) == 100);
    CHECK(fmq_message_rebuild(c) == FMQ_OK && fmq_message_size(c) == 0 && fmq_message_data(c) == NULL);
    /* Take: the content moves to a new handle, the old one is left empty; copying onto itself is a no-op. */
    fmq_message* kept = NULL;
    CHECK(fmq_message_copy(c, r) == FMQ_OK && fmq_message_take(c, &kept) == FMQ_OK);
    CHECK(fmq_message_size(c) == 0 && fmq_message_size(kept) == 2 && memcmp(fmq_message_data(kept), "he", 2) == 0);
    CHECK(fmq_message_copy(kept, kept) == FMQ_OK && fmq_message_size(kept) == 2);
    CHECK(fmq_message_take(c, NULL) == FMQ_ERROR_NULL);
    fmq_message_free(kept);
    fmq_message* al = NULL;
    CHECK(fmq_message_new_aligned(t, 100, 64, &al) == FMQ_OK && ((uintptr_t)fmq_message_data(al) % 64) == 0);
    char* buf = malloc(8);
    memcpy(buf, "userbuf!", 8);
    fmq_message* u = NULL;
    CHECK(fmq_message_new_data(t, buf, 8, free_buffer, NULL, &u) == FMQ_OK);
    CHECK(fmq_channel_send(a, u, 5000) == 8);
    CHECK(fmq_channel_receive(b, r, 5000) == 8 && memcmp(fmq_message_data(r), "userbuf!", 8) == 0);
    static const char constant[] = "static";
    fmq_message* s = NULL;
    CHECK(fmq_message_new_static(t, constant, 6, &s) == FMQ_OK);
    CHECK(fmq_channel_send(a, s, 5000) == 6 && fmq_channel_receive(b, r, 5000) == 6);

    /* Multipart. */
    fmq_parts* parts = fmq_parts_new();
    for (int i = 0; i < 3; i++) {
        fmq_message* p = NULL;
        CHECK(fmq_message_new_size(t, (size_t)(10 * (i + 1)), &p) == FMQ_OK);
        CHECK(fmq_parts_add(parts, p) == FMQ_OK);
    }
    CHECK(fmq_channel_send_parts(a, parts, 5000) == 60);
    fmq_parts* got = fmq_parts_new();
    CHECK(fmq_channel_receive_parts(b, got, 5000) == 60 && fmq_parts_size(got) == 3);
    CHECK(fmq_message_size(fmq_parts_at(got, 2)) == 30 && fmq_parts_at(got, 3) == NULL);

    /* Timeouts and pollers. */
    CHECK(fmq_channel_receive(b, r, 0) == -2);
    /* A poller over two pull channels, one fed, one lonely: it waits until the fed one has input. */
    char pspec[320], qspec[320], pbound[256];
    snprintf(pspec, sizeof pspec, "name=out,type=push,method=bind,address=ipc:///tmp/fmqrs-c-poll-%s-%s,linger=0", kind, session);
    fmq_channel *push = NULL, *pull = NULL;
    CHECK(fmq_channel_new(t, pspec, &push) == FMQ_OK);
    CHECK(fmq_channel_address(push, pbound, sizeof pbound, NULL) == FMQ_OK);
    snprintf(qspec, sizeof qspec, "name=in,type=pull,method=connect,address=%s,linger=0", pbound);
    CHECK(fmq_channel_new(t, qspec, &pull) == FMQ_OK);
    char lspec[320];
    snprintf(lspec, sizeof lspec, "name=lonely,type=pull,method=bind,address=ipc:///tmp/fmqrs-c-lonely-%s-%s,linger=0", kind, session);
    fmq_channel* lonely = NULL;
    CHECK(fmq_channel_new(t, lspec, &lonely) == FMQ_OK);
    const fmq_channel* both[] = {pull, lonely};
    fmq_poller* poller = NULL;
    CHECK(fmq_poller_new(both, 2, &poller) == FMQ_OK);
    fmq_message* x = NULL;
    CHECK(fmq_message_new_copy(t, "x", 1, &x) == FMQ_OK && fmq_channel_send(push, x, 5000) == 1);
    int rounds = 0;
    while (!fmq_poller_check_input(poller, 0) && rounds++ < 100) {
        CHECK(fmq_poller_poll(poller, 100) >= 0);
    }
    CHECK(fmq_poller_check_input(poller, 0) && !fmq_poller_check_input(poller, 1));
    CHECK(fmq_channel_receive(pull, r, 0) == 1);

    /* Interruption makes a waiting receive return -3. */
    CHECK(fmq_transport_interrupt(t) == FMQ_OK && fmq_channel_receive(b, r, -1) == -3);
    CHECK(fmq_transport_resume(t) == FMQ_OK);

    /* Counters: 4 messages sent by a (5 + 8 + 6 + 60 bytes), all received by b. */
    fmq_counters ca = {.struct_size = sizeof(fmq_counters)}, cb = {.struct_size = sizeof(fmq_counters)};
    CHECK(fmq_channel_counters(a, &ca) == FMQ_OK && fmq_channel_counters(b, &cb) == FMQ_OK);
    CHECK(ca.messages_tx == 4 && ca.bytes_tx == 79 && cb.messages_rx == 4 && cb.bytes_rx == 79);

    fmq_poller_free(poller);
    fmq_parts_free(parts);
    fmq_parts_free(got);
    fmq_message_free(m);
    fmq_message_free(r);
    fmq_message_free(c);
    fmq_message_free(al);
    fmq_message_free(u);
    fmq_message_free(s);
    fmq_message_free(x);
    fmq_channel_free(push);
    fmq_channel_free(lonely);
    fmq_channel_free(pull);
    fmq_channel_free(b);
    fmq_channel_free(a);
    fmq_transport_free(t);
    CHECK(freed == 1);
    printf("%s: ok\n", kind);
    return 0;
}
