/* A FairMQ device in C that sends pieces of an unmanaged region (as FairMQ's region example):
 * it creates a 10,000,000-byte region on the transport of channel "data", fills it in place, and
 * sends --max-iterations multipart messages of 64 parts, part j of message k the --msg-size bytes
 * at offset j * msg-size with hint k * 64 + j. The region's callback (--callback bulk or single)
 * counts every released piece and checks its address and hint; before leaving RUNNING the device
 * waits for all of them. After freeing the region (no callback can run after that) it checks the
 * count is exactly iterations * 64 and the hints add up, and that a region event announced the
 * region; otherwise the device goes to ERROR (exit code 1). */
#include "fairmq_rs.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define REGION_SIZE 10000000u
#define PARTS 64u

typedef struct {
    int64_t max;
    int64_t size;
    int64_t linger;
    int bulk;
    int64_t sent;
    fmq_region* region;
    unsigned char* base;
    /* Written by the region's callback, which runs on a library thread (shmem). */
    atomic_uint_fast64_t acked;
    atomic_uint_fast64_t hint_sum;
    atomic_uint_fast64_t bad;
    /* Written by the event callback (the transport's event thread). */
    atomic_int created_seen;
    int region_id;
} sampler;

static void count(sampler* s, const fmq_region_block* b)
{
    /* Each piece comes back at the address it was sent from, with its hint. */
    if ((unsigned char*)b->ptr != s->base + b->offset || b->size != (size_t)s->size ||
        b->offset != (b->hint % PARTS) * (uint64_t)s->size) {
        atomic_fetch_add(&s->bad, 1);
    }
    atomic_fetch_add(&s->hint_sum, b->hint);
    atomic_fetch_add(&s->acked, 1);
}

static void on_release(const fmq_region_block* block, void* user) { count(user, block); }

static void on_release_bulk(const fmq_region_block* blocks, size_t n, void* user)
{
    for (size_t i = 0; i < n; i++) count(user, &blocks[i]);
}

static void on_event(const fmq_region_info* info, void* user)
{
    sampler* s = user;
    if (!info->managed && info->event == FMQ_REGION_CREATED && info->id == s->region_id) atomic_store(&s->created_seen, 1);
}

static int32_t fail(const char* what)
{
    char e[256] = ""; /* left empty if the text does not fit */
    fmq_last_error(e, sizeof e, NULL);
    char line[400];
    snprintf(line, sizeof line, "C region sampler: %s: %s", what, e);
    fmq_log("error", line);
    return -1;
}

static int32_t init_task(const fmq_context* ctx, void* user)
{
    sampler* s = user;
    char cb[16];
    if (fmq_context_property_int(ctx, "max-iterations", &s->max) != FMQ_OK ||
        fmq_context_property_int(ctx, "msg-size", &s->size) != FMQ_OK ||
        fmq_context_property_int(ctx, "region-linger", &s->linger) != FMQ_OK ||
        fmq_context_property(ctx, "callback", cb, sizeof cb, NULL) != FMQ_OK) {
        return fail("options");
    }
    if (s->size <= 0 || (uint64_t)s->size * PARTS > REGION_SIZE) return fail("--msg-size does not fit 64 times into the region");
    s->bulk = strcmp(cb, "single") != 0;
    const fmq_channel* ch = fmq_context_channel(ctx, "data", 0);
    if (!ch) return fail("channel data");
    const fmq_transport* t = fmq_channel_transport(ch);

    fmq_region_config cfg;
    if (fmq_region_config_init(&cfg) != FMQ_OK) return fail("region config");
    cfg.linger_ms = (uint32_t)s->linger;
    cfg.user_flags = 42;
    fmq_result r = fmq_region_new(t, REGION_SIZE, &cfg, s->bulk ? NULL : on_release, s->bulk ? on_release_bulk : NULL, s,
                                  &s->region);
    if (r != FMQ_OK) return fail("fmq_region_new");
    s->region_id = fmq_region_id(s->region);
    /* Subscribed after the region exists: the subscription starts with what is already known. */
    if (fmq_transport_subscribe_region_events(t, on_event, s) != FMQ_OK) return fail("subscribe to region events");
    if (fmq_region_size(s->region) != REGION_SIZE) return fail("region size");
    if (fmq_region_set_linger(s->region, (uint32_t)s->linger) != FMQ_OK) return fail("set linger");

    /* Fill in place: part j is bytes j*size .. (j+1)*size, each byte (offset % 251). */
    s->base = fmq_region_data(s->region);
    if (!s->base) return fail("region data");
    for (uint64_t i = 0; i < PARTS * (uint64_t)s->size; i++) s->base[i] = (unsigned char)(i % 251);

    /* The transport lists the new region. */
    fmq_region_info infos[64];
    size_t n = 0;
    if (fmq_transport_region_info(t, infos, 64, sizeof(fmq_region_info), &n) != FMQ_OK) return fail("region info");
    int listed = 0;
    for (size_t i = 0; i < n; i++) listed |= !infos[i].managed && infos[i].id == s->region_id && infos[i].flags == 42;
    if (!listed) return fail("the region is not in fmq_transport_region_info");
    return 0;
}

static int32_t conditional_run(const fmq_context* ctx, void* user)
{
    sampler* s = user;
    const fmq_channel* ch = fmq_context_channel(ctx, "data", 0);
    const fmq_transport* t = fmq_channel_transport(ch);
    if (s->sent < s->max) {
        fmq_parts* parts = fmq_parts_new();
        for (uint64_t j = 0; j < PARTS; j++) {
            fmq_message* m = NULL;
            uint64_t hint = (uint64_t)s->sent * PARTS + j;
            if (fmq_message_new_region(t, s->region, (size_t)(j * (uint64_t)s->size), (size_t)s->size, hint, &m) != FMQ_OK ||
                fmq_parts_add(parts, m) != FMQ_OK) {
                fmq_parts_free(parts);
                return fail("region message");
            }
        }
        int64_t rc = fmq_channel_send_parts(ch, parts, -1);
        /* Parts a failed send left here are released now, and acknowledged like sent ones. */
        fmq_parts_free(parts);
        if (rc == -3) return 0; /* interrupted: a state change is pending */
        if (rc < 0) return fail(fmq_transfer_message(rc));
        s->sent++;
        return 1;
    }
    /* Everything sent: wait (up to 20 s) until every piece came back. */
    uint64_t expected = (uint64_t)s->max * PARTS;
    for (int i = 0; i < 2000 && atomic_load(&s->acked) < expected; i++) {
        if (!fmq_context_wait_for(ctx, 10)) break;
    }
    return 0;
}

static int32_t reset_task(const fmq_context* ctx, void* user)
{
    sampler* s = user;
    const fmq_transport* t = fmq_channel_transport(fmq_context_channel(ctx, "data", 0));
    /* The event thread polls: give it up to 5 s to announce the region. */
    for (int i = 0; i < 500 && !atomic_load(&s->created_seen); i++) fmq_context_wait_for(ctx, 10);
    if (fmq_transport_unsubscribe_region_events(t) != FMQ_OK || fmq_transport_subscribed_to_region_events(t)) {
        return fail("unsubscribe");
    }
    fmq_region_free(s->region);
    s->region = NULL;
    /* No callback runs any more: the counts are final. */
    uint64_t n = (uint64_t)s->sent * PARTS;
    uint64_t expected_hints = n * (n - 1) / 2;
    char line[300];
    snprintf(line, sizeof line,
             "C region sampler (%s callback): %lld messages of %u parts sent, %llu of %llu pieces acknowledged, "
             "%llu bad, hints %s, region event %s",
             s->bulk ? "bulk" : "single", (long long)s->sent, PARTS, (unsigned long long)atomic_load(&s->acked),
             (unsigned long long)n, (unsigned long long)atomic_load(&s->bad),
             atomic_load(&s->hint_sum) == expected_hints ? "ok" : "wrong", atomic_load(&s->created_seen) ? "seen" : "missing");
    fmq_log("info", line);
    int ok = s->sent == s->max && atomic_load(&s->acked) == n && atomic_load(&s->bad) == 0 &&
             atomic_load(&s->hint_sum) == expected_hints && atomic_load(&s->created_seen);
    return ok ? 0 : -1;
}

int main(int argc, char** argv)
{
    static sampler s; /* static: zero-initialised atomics */
    fmq_device_hooks hooks;
    memset(&hooks, 0, sizeof hooks);
    hooks.init_task = init_task;
    hooks.conditional_run = conditional_run;
    hooks.reset_task = reset_task;
    fmq_option options[] = {
        {"max-iterations", FMQ_OPTION_UINT64, "10", "Multipart messages of 64 region pieces to send"},
        {"msg-size", FMQ_OPTION_INT, "1000", "Size of each piece in bytes"},
        {"region-linger", FMQ_OPTION_UINT64, "2000", "Linger of the region (ms)"},
        {"callback", FMQ_OPTION_STRING, "bulk", "Region callback: bulk or single"},
    };
    return fmq_run_device(argc, (const char* const*)argv, &hooks, options, 4, &s);
}
