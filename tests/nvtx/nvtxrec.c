/* nvtxrec.c - a minimal NVTX injection library for the tests: what Nsight
 * Systems would be handed, recorded in a file instead of a timeline.
 *
 *   NVTX_INJECTION64_PATH=tests/.libs/libnvtxrec.so NVTXREC_FILE=out.txt program
 *
 * The NVTX v3 loader (in the program's or the library's copy of the nvtx3
 * headers) dlopens this file, calls InitializeInjectionNvtx2 with its export
 * table getter, and this fills the core module's function table slots for
 * RangePushEx, RangePop and MarkEx; every other NVTX call stays a no-op.  Each
 * event becomes one line, appended under a lock:
 *   push TID MESSAGE      pop TID      mark TID MESSAGE
 * (TID: the kernel's thread id, so ranges can be matched per thread). */
#define _GNU_SOURCE
#include <nvtx3/nvToolsExt.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;

static void record(const char *what, const nvtxEventAttributes_t *a)
{
    const char *msg = "";
    if (a && a->messageType == NVTX_MESSAGE_TYPE_ASCII && a->message.ascii)
        msg = a->message.ascii;
    else if (a)
        msg = "(message not ASCII)";
    pthread_mutex_lock(&lock);
    if (out) {
        if (a)
            fprintf(out, "%s %ld %s\n", what, (long)syscall(SYS_gettid), msg);
        else
            fprintf(out, "%s %ld\n", what, (long)syscall(SYS_gettid));
        fflush(out);
    }
    pthread_mutex_unlock(&lock);
}

static int NVTX_API push_ex(const nvtxEventAttributes_t *a)
{
    record("push", a);
    return 0;
}
static int NVTX_API pop(void)
{
    record("pop", NULL);
    return 0;
}
static void NVTX_API mark_ex(const nvtxEventAttributes_t *a) { record("mark", a); }

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
    const NvtxExportTableCallbacks *cb = (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS);
    NvtxFunctionTable table = NULL;
    unsigned int size = 0;
    if (!cb || cb->struct_size < sizeof *cb || !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size))
        return 0;
    if (size <= NVTX_CBID_CORE_RangePop || size <= NVTX_CBID_CORE_MarkEx || size <= NVTX_CBID_CORE_RangePushEx)
        return 0;
    const char *path = getenv("NVTXREC_FILE");
    out = fopen(path && *path ? path : "/dev/null", "a");
    if (!out)
        return 0;
    *table[NVTX_CBID_CORE_RangePushEx] = (NvtxFunctionPointer)push_ex;
    *table[NVTX_CBID_CORE_RangePop] = (NvtxFunctionPointer)pop;
    *table[NVTX_CBID_CORE_MarkEx] = (NvtxFunctionPointer)mark_ex;
    return 1;
}
