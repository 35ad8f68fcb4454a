/* The few PMIx calls the pmix plugin makes, with plain C types: the PMIx structures (pmix_proc_t,
 * pmix_value_t, pmix_info_t) are laid out by the system's <pmix.h> here, never re-declared in
 * Rust. Built only with the `pmix` feature of the fairmq crate. Returns PMIx status codes. */
#include <pmix.h>

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static pmix_proc_t me;

int fmq_pmix_init(char* nspace, size_t cap, uint32_t* rank)
{
    pmix_status_t rc = PMIx_Init(&me, NULL, 0);
    if (rc != PMIX_SUCCESS) return rc;
    if (cap < sizeof me.nspace) return PMIX_ERR_BAD_PARAM;
    memcpy(nspace, me.nspace, sizeof me.nspace);
    *rank = me.rank;
    return PMIX_SUCCESS;
}

int fmq_pmix_job_size(uint32_t* size)
{
    pmix_proc_t wild;
    PMIX_LOAD_PROCID(&wild, me.nspace, PMIX_RANK_WILDCARD);
    pmix_value_t* v = NULL;
    pmix_status_t rc = PMIx_Get(&wild, PMIX_JOB_SIZE, NULL, 0, &v);
    if (rc != PMIX_SUCCESS) return rc;
    rc = v->type == PMIX_UINT32 ? PMIX_SUCCESS : PMIX_ERR_TYPE_MISMATCH;
    if (rc == PMIX_SUCCESS) *size = v->data.uint32;
    PMIX_VALUE_RELEASE(v);
    return rc;
}

int fmq_pmix_put(const char* key, const char* text)
{
    pmix_value_t v;
    PMIX_VALUE_LOAD(&v, text, PMIX_STRING);
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key, &v);
    PMIX_VALUE_DESTRUCT(&v);
    return rc == PMIX_SUCCESS ? PMIx_Commit() : rc;
}

/* A fence over every process of the namespace that collects what each put; `timeout_s` > 0 ends
 * it with an error after that many seconds. */
int fmq_pmix_fence(int timeout_s)
{
    pmix_proc_t wild;
    PMIX_LOAD_PROCID(&wild, me.nspace, PMIX_RANK_WILDCARD);
    pmix_info_t info[2];
    bool collect = true;
    PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &timeout_s, PMIX_INT);
    pmix_status_t rc = PMIx_Fence(&wild, 1, info, timeout_s > 0 ? 2 : 1);
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
    return rc;
}

/* The text `rank` put under `key`, into `buf` (`cap` bytes); `*len` gets its length. */
int fmq_pmix_get(uint32_t rank, const char* key, char* buf, size_t cap, size_t* len)
{
    pmix_proc_t proc;
    PMIX_LOAD_PROCID(&proc, me.nspace, rank);
    pmix_value_t* v = NULL;
    pmix_status_t rc = PMIx_Get(&proc, key, NULL, 0, &v);
    if (rc != PMIX_SUCCESS) return rc;
    if (v->type != PMIX_STRING || v->data.string == NULL) {
        PMIX_VALUE_RELEASE(v);
        return PMIX_ERR_TYPE_MISMATCH;
    }
    size_t n = strlen(v->data.string);
    *len = n;
    if (n + 1 > cap) {
        PMIX_VALUE_RELEASE(v);
        return PMIX_ERR_OUT_OF_RESOURCE;
    }
    memcpy(buf, v->data.string, n + 1);
    PMIX_VALUE_RELEASE(v);
    return PMIX_SUCCESS;
}

int fmq_pmix_finalize(void) { return PMIx_Finalize(NULL, 0); }

const char* fmq_pmix_error(int rc) { return PMIx_Error_string(rc); }

int fmq_pmix_out_of_resource(void) { return PMIX_ERR_OUT_OF_RESOURCE; }
