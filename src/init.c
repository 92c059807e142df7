/* init.c - everything cubatch needs before its first decision, done once, at
 * the first call of any wrapper (or the first dlsym of a driver name once the
 * driver is loaded): the options, the statistics, the real driver, the engines,
 * the size policy.  Lazy and re-entrancy safe: loading the driver may call dlsym,
 * which comes back here. */
#include "engine.h"

#include <stdlib.h>

atomic_int cb_init_done;
static pthread_mutex_t cb_init_mutex = PTHREAD_MUTEX_INITIALIZER;
static CB_TLS int cb_in_init;

int cb_init_running(void) { return cb_in_init; }

/* The policy, read after CUBATCH_MAX_COPY (its bands must fit under it); a
 * refused policy is one of the launcher's problems too (checking: the launcher's
 * check, which says itself what follows).  Returns 1 refused. */
static int load_policy(int checking)
{
    char why[CB_QUOTE_LEN + 128], q[CB_QUOTE_LEN];
    const char *text = cb_opt_str(CB_OPT_policy);
    if (!cb_policy_load(text, why, sizeof why))
        return 0;
    cb_warn("CUBATCH_POLICY=%s is not valid: %s; it accepts " CB_POLICY_GRAMMAR "%s",
            cb_quote(text, q, sizeof q), why, checking ? "" : "; keeping the default");
    cb_opt_reject(CB_OPT_policy);
    return 1;
}

void cb_init_slow(void)
{
    if (cb_in_init)
        return; /* re-entered from libcuda's own dlsym calls while we load it */
    pthread_mutex_lock(&cb_init_mutex);
    if (atomic_load(&cb_init_done)) {
        pthread_mutex_unlock(&cb_init_mutex);
        return;
    }
    cb_in_init = 1;
    cb_config_load(0);
    load_policy(0);
    cb_fork_init(); /* the counters' fork handlers (fork.c) */
    cb_report_init();
    int found = cb_driver_load();
    if (found && cb_driver_version > cb_net_version_checked())
        cb_log(CB_LOG_NOTICE, "the driver (CUDA_VERSION %d) is newer than the headers cubatch's tables were checked "
               "against (%d): a call of a driver function they do not name submits every run first",
               cb_driver_version, cb_net_version_checked());
    if (found) {
        cb_engines_init();
    } else {
        cb_batching_set(0, "libcuda.so.1 not found");
    }
    if (!cb_batching && (cb_opt(CB_OPT_overlap) || cb_opt(CB_OPT_src_order) != CB_SRC_ORDER_STREAM))
        cb_warn("CUBATCH_OVERLAP / CUBATCH_SRC_ORDER cannot be honoured: batching is unavailable (%s)",
                cb_batching_reason);
    /* asked for a report without batching: a warning unless the user switched it off */
    if (!cb_batching && cb_opt(CB_OPT_stats) != CB_STATS_OFF)
        cb_log(cb_opt(CB_OPT_enable) ? CB_LOG_WARN : CB_LOG_NOTICE, "batching unavailable (%s): every copy passes through",
               cb_batching_reason);
    cb_log(CB_LOG_NOTICE, "batching %s (%s)", cb_batching ? "on" : "off", cb_batching_reason);
    cb_config_describe();
    atomic_store_explicit(&cb_init_done, 1, memory_order_release);
    cb_in_init = 0;
    pthread_mutex_unlock(&cb_init_mutex);
}

/* The launcher's check (tools/cubatch-check.c): the environment as the library
 * reads it at start, every problem printed as CUBATCH_LOG says (0: none, and the
 * launcher is quiet too); returns how many there were. */
int cubatch__check_options(void)
{
    return cb_config_load(1) + load_policy(1);
}
