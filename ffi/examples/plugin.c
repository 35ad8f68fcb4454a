/* A device plugin written in C (FairMQ's plugin example), loaded with `-P example` from
 * libfairmq-plugin-example.so (`-S <dir>` names where). It needs no library: everything it
 * uses comes through the services table the device hands it.
 *
 * --example-log FILE   appends a line per state the device enters, and what the plugin did
 * --example-drive      takes control of the device and drives it through its whole life
 *                      (up to RUNNING, --example-run-ms there, then down to EXITING)
 * --example-fail-in N  fails its state callback entering state number N (the device goes to ERROR)
 * --example-steal      once the device is RUNNING, steals control from whoever has it and
 *                      drives the device down to EXITING */
#include "fairmq_rs.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const fmq_plugin_services* s;
    FILE* log;
    pthread_mutex_t lock;
    int drive;
    int steal;
    long run_ms;
    long fail_in;
    pthread_t driver;
    int driving;
} example;

static void note(example* e, const char* what, const char* detail)
{
    if (!e->log) return;
    pthread_mutex_lock(&e->lock);
    fprintf(e->log, "%s%s%s\n", what, detail ? " " : "", detail ? detail : "");
    fflush(e->log);
    pthread_mutex_unlock(&e->lock);
}

static int32_t on_state(int32_t state, void* user)
{
    char line[32];
    snprintf(line, sizeof line, "state %d", (int)state);
    note(user, line, NULL);
    return state == ((example*)user)->fail_in ? 1 : 0;
}

/* Requests `t` and waits for `target`; 0 on success. */
static int step(example* e, int32_t t, int32_t target)
{
    const fmq_plugin_services* s = e->s;
    fmq_plugin_result r = s->change_state(s->host, t);
    if (r != FMQ_PLUGIN_OK) {
        note(e, "change refused:", s->last_error());
        return -1;
    }
    return s->wait_for_state(s->host, target, 60000) == FMQ_PLUGIN_OK ? 0 : -1;
}

static void* drive(void* user)
{
    example* e = user;
    const fmq_plugin_services* s = e->s;
    const int32_t steps[][2] = {
        {FMQ_TRANSITION_INIT_DEVICE, FMQ_STATE_INITIALIZING_DEVICE},
        {FMQ_TRANSITION_COMPLETE_INIT, FMQ_STATE_INITIALIZED},
        {FMQ_TRANSITION_BIND, FMQ_STATE_BOUND},
        {FMQ_TRANSITION_CONNECT, FMQ_STATE_DEVICE_READY},
        {FMQ_TRANSITION_INIT_TASK, FMQ_STATE_READY},
        {FMQ_TRANSITION_RUN, FMQ_STATE_RUNNING},
    };
    const int32_t down[][2] = {
        {FMQ_TRANSITION_STOP, FMQ_STATE_READY},
        {FMQ_TRANSITION_RESET_TASK, FMQ_STATE_DEVICE_READY},
        {FMQ_TRANSITION_RESET_DEVICE, FMQ_STATE_IDLE},
        {FMQ_TRANSITION_END, FMQ_STATE_EXITING},
    };
    int ok = 1;
    for (size_t i = 0; ok && i < sizeof steps / sizeof steps[0]; i++) ok = step(e, steps[i][0], steps[i][1]) == 0;
    /* RUNNING for run_ms, unless somebody else (a signal) ends it first. */
    if (ok && s->wait_for_state(s->host, FMQ_STATE_READY, e->run_ms) != FMQ_PLUGIN_ERROR_TIMEOUT) {
        note(e, "the device left RUNNING without the plugin", NULL);
        ok = 0;
    }
    for (size_t i = 0; ok && i < sizeof down / sizeof down[0]; i++) ok = step(e, down[i][0], down[i][1]) == 0;
    note(e, ok ? "drove the device to EXITING" : "could not drive the device", NULL);
    s->release_device_control(s->host);
    return NULL;
}

static void* steal(void* user)
{
    example* e = user;
    const fmq_plugin_services* s = e->s;
    const int32_t down[][2] = {
        {FMQ_TRANSITION_STOP, FMQ_STATE_READY},
        {FMQ_TRANSITION_RESET_TASK, FMQ_STATE_DEVICE_READY},
        {FMQ_TRANSITION_RESET_DEVICE, FMQ_STATE_IDLE},
        {FMQ_TRANSITION_END, FMQ_STATE_EXITING},
    };
    int ok = s->wait_for_state(s->host, FMQ_STATE_RUNNING, 60000) == FMQ_PLUGIN_OK;
    if (ok) s->steal_device_control(s->host);
    for (size_t i = 0; ok && i < sizeof down / sizeof down[0]; i++) ok = step(e, down[i][0], down[i][1]) == 0;
    note(e, ok ? "stole control and drove the device to EXITING" : "could not steal the device", NULL);
    s->release_device_control(s->host);
    return NULL;
}

/* A property as text into `buf`; 0 if it exists and fits. */
static int property(const fmq_plugin_services* s, const char* key, char* buf, size_t cap)
{
    size_t len = 0;
    return s->get_property(s->host, key, buf, cap, &len) == FMQ_PLUGIN_OK ? 0 : -1;
}

static int32_t start(const fmq_plugin_services* s, void** instance)
{
    if (s->abi_version != FMQ_PLUGIN_ABI_VERSION) return 1;
    example* e = calloc(1, sizeof *e);
    if (!e) return 1;
    e->s = s;
    pthread_mutex_init(&e->lock, NULL);
    char path[4096] = "", flag[16] = "", ms[32] = "";
    if (property(s, "example-log", path, sizeof path) == 0 && path[0]) e->log = fopen(path, "a");
    e->drive = property(s, "example-drive", flag, sizeof flag) == 0 && strcmp(flag, "true") == 0;
    e->steal = property(s, "example-steal", flag, sizeof flag) == 0 && strcmp(flag, "true") == 0;
    e->run_ms = property(s, "example-run-ms", ms, sizeof ms) == 0 ? strtol(ms, NULL, 10) : 0;
    e->fail_in = property(s, "example-fail-in", ms, sizeof ms) == 0 ? strtol(ms, NULL, 10) : -1;
    s->log(s->host, 2, "example plugin started");
    s->subscribe_to_state_change(s->host, on_state, e);
    if (e->drive) {
        if (s->take_device_control(s->host) == FMQ_PLUGIN_OK) {
            char who[64] = "";
            size_t len = 0;
            s->device_controller(s->host, who, sizeof who, &len);
            note(e, "controller:", who);
            e->driving = pthread_create(&e->driver, NULL, drive, e) == 0;
            if (!e->driving) s->release_device_control(s->host);
        } else {
            note(e, "control refused:", s->last_error());
        }
    } else if (e->steal) {
        e->driving = pthread_create(&e->driver, NULL, steal, e) == 0;
    }
    *instance = e;
    return 0;
}

static void stop(void* instance)
{
    example* e = instance;
    if (e->driving) pthread_join(e->driver, NULL);
    e->s->unsubscribe_from_state_change(e->s->host);
    note(e, "stopped", NULL);
    if (e->log) fclose(e->log);
    pthread_mutex_destroy(&e->lock);
    free(e);
}

static const fmq_option options[] = {
    {"example-log", FMQ_OPTION_STRING, "", "Append a line per state entered to this file"},
    {"example-drive", FMQ_OPTION_FLAG, NULL, "Take control of the device and drive it through its life"},
    {"example-run-ms", FMQ_OPTION_INT, "200", "How long to stay in RUNNING when driving (ms)"},
    {"example-fail-in", FMQ_OPTION_INT, "-1", "Fail the state callback entering this state number"},
    {"example-steal", FMQ_OPTION_FLAG, NULL, "Steal control once the device is RUNNING and drive it down"},
};

static const fmq_plugin descriptor = {
    .abi_version = FMQ_PLUGIN_ABI_VERSION,
    .name = "example",
    .version = {1, 2, 3},
    .maintainer = "Jane Doe <jane.doe@example.org>",
    .homepage = "https://example.org/fairmq-plugin-example",
    .options_title = "Example Plugin",
    .options = options,
    .n_options = sizeof options / sizeof options[0],
    .start = start,
    .stop = stop,
};

const fmq_plugin* fmq_plugin_example(void) { return &descriptor; }
