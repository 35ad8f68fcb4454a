/* A FairMQ device written in C against libfairmq_rs: sends --max-iterations multipart messages
 * (a 4-byte header with stopFlag 0, then --msg-size bytes of payload) on channel "data", then an
 * end message (the header alone, stopFlag 1), and leaves RUNNING. */
#include "fairmq_rs.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    int64_t max;
    int64_t size;
    int64_t sent;
} sampler;

static int add_part(fmq_parts* parts, const fmq_transport* t, const void* data, size_t size)
{
    fmq_message* m = NULL;
    if (fmq_message_new_copy(t, data, size, &m) != FMQ_OK) return -1;
    return fmq_parts_add(parts, m) == FMQ_OK ? 0 : -1;
}

static int32_t init_task(const fmq_context* ctx, void* user)
{
    sampler* s = user;
    if (fmq_context_property_int(ctx, "max-iterations", &s->max) != FMQ_OK) return -1;
    if (fmq_context_property_int(ctx, "msg-size", &s->size) != FMQ_OK) return -1;
    return 0;
}

static int32_t conditional_run(const fmq_context* ctx, void* user)
{
    sampler* s = user;
    const fmq_channel* ch = fmq_context_channel(ctx, "data", 0);
    if (!ch) return -1;
    const fmq_transport* t = fmq_channel_transport(ch);
    int32_t stop = s->sent >= s->max ? 1 : 0;
    fmq_parts* parts = fmq_parts_new();
    if (!parts || add_part(parts, t, &stop, sizeof stop) != 0) {
        fmq_parts_free(parts);
        fprintf(stderr, "could not build the header part\n");
        return -1;
    }
    if (!stop) {
        fmq_message* payload = NULL;
        if (fmq_message_new_size(t, (size_t)s->size, &payload) != FMQ_OK) {
            fmq_parts_free(parts);
            fprintf(stderr, "could not allocate a payload of %llu bytes\n", (unsigned long long)s->size);
            return -1;
        }
        void* d = fmq_message_data(payload);
        if (d) memset(d, (int)(s->sent & 0xff), (size_t)s->size); /* NULL only for size 0 */
        if (fmq_parts_add(parts, payload) != FMQ_OK) { /* consumes payload even on failure */
            fmq_parts_free(parts);
            return -1;
        }
    }
    int64_t sent = fmq_channel_send_parts(ch, parts, -1);
    fmq_parts_free(parts);
    if (sent < 0) {
        fprintf(stderr, "send failed: %s\n", fmq_transfer_message(sent));
        return stop ? -1 : 0; /* the end message must go out (interrupted: a controller stops us) */
    }
    if (stop) {
        char line[128];
        snprintf(line, sizeof line, "C sampler sent %lld data messages and the end message", (long long)s->sent);
        fmq_log("info", line);
        return 0;
    }
    s->sent++;
    return 1;
}

int main(int argc, char** argv)
{
    sampler s = {0, 0, 0};
    fmq_device_hooks hooks;
    memset(&hooks, 0, sizeof hooks);
    hooks.init_task = init_task;
    hooks.conditional_run = conditional_run;
    fmq_option options[] = {
        {"max-iterations", FMQ_OPTION_UINT64, "10", "Data messages to send"},
        {"msg-size", FMQ_OPTION_UINT64, "1000", "Payload size in bytes"},
    };
    return fmq_run_device(argc, (const char* const*)argv, &hooks, options, 2, &s);
}
