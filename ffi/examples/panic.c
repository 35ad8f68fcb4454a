/* A Rust panic reached from C comes back as an error code, the process neither aborting nor unwinding;
 * bad arguments (NULL, unknown codes and option types) come back as error codes too. */
#include "fairmq_rs.h"

#include <stdio.h>
#include <string.h>

int main(void)
{
    fmq_result r = fmq_debug_panic();
    char detail[256] = ""; /* left empty if the text does not fit */
    size_t n = 0;
    fmq_last_error(detail, sizeof detail, &n);
    printf("fmq_debug_panic returned %d (%s): %s\n", (int)r, fmq_result_message(r), detail);
    if (r != FMQ_ERROR_PANIC || strstr(detail, "panic") == NULL) return 1;
    /* NULL arguments are refused with an error code in release builds too. */
    if (fmq_message_new(NULL, NULL) != FMQ_ERROR_NULL) return 2;
    if (fmq_channel_send(NULL, NULL, 0) != -1) return 3;
    fmq_transport* t = NULL;
    if (fmq_transport_new("nanomsg", "x", 0, NULL, &t) != FMQ_ERROR_INVALID || t != NULL) return 4;
    /* Codes are passed as int: an unknown one gets a text, not undefined behaviour. */
    if (strcmp(fmq_result_message(12345), "unknown result code") != 0) return 5;
    if (strcmp(fmq_result_message(FMQ_ERROR_NULL), "a required pointer argument was NULL") != 0) return 6;
    /* An option type that is none of the FMQ_OPTION_* constants is refused before the device runs. */
    const char* args[] = {"panic"};
    fmq_device_hooks hooks;
    memset(&hooks, 0, sizeof hooks);
    fmq_option bad = {"bad", 99, NULL, "an option of no known type"};
    if (fmq_run_device(1, args, &hooks, &bad, 1, NULL) != 1) return 7;
    fmq_last_error(detail, sizeof detail, &n);
    if (strstr(detail, "unknown type 99") == NULL) return 8;
    fmq_option bad_default = {"count", FMQ_OPTION_UINT64, "many", "a default that is no number"};
    if (fmq_run_device(1, args, &hooks, &bad_default, 1, NULL) != 1) return 18;
    memset(detail, 0, sizeof detail);
    fmq_last_error(detail, sizeof detail, &n);
    if (strstr(detail, "default 'many' is not of its type") == NULL) return 19;
    /* Regions: NULL checks, and out-parameters stay untouched on failure. */
    fmq_region* region = NULL;
    if (fmq_region_new(NULL, 100, NULL, NULL, NULL, NULL, &region) != FMQ_ERROR_NULL || region != NULL) return 9;
    if (fmq_region_id(NULL) != -1 || fmq_region_data(NULL) != NULL || fmq_region_size(NULL) != 0) return 10;
    if (fmq_transport_subscribe_region_events(NULL, NULL, NULL) != FMQ_ERROR_NULL) return 11;
    printf("ok\n");
    return 0;
}
