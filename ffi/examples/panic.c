/* A Rust panic reached from C comes back as an error code: the process neither aborts nor unwinds. */
#include "fairmq_rs.h"

#include <stdio.h>
#include <string.h>

int main(void)
{
    fmq_result r = fmq_debug_panic();
    char detail[256];
    size_t n = 0;
    fmq_last_error(detail, sizeof detail, &n);
    printf("fmq_debug_panic returned %d (%s): %s\n", (int)r, fmq_result_message(r), detail);
    if (r != FMQ_ERROR_PANIC || strstr(detail, "panic") == NULL) return 1;
    /* NULL arguments are refused with an error code in release builds too. */
    if (fmq_message_new(NULL, NULL) != FMQ_ERROR_NULL) return 2;
    if (fmq_channel_send(NULL, NULL, 0) != -1) return 3;
    fmq_transport* t = NULL;
    if (fmq_transport_new("nanomsg", "x", 0, NULL, &t) != FMQ_ERROR_INVALID || t != NULL) return 4;
    printf("ok\n");
    return 0;
}
