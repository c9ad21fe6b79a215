// Thin wrappers over glibc for Swift; see include/CThreadShim.h.
#define _GNU_SOURCE
#include "CThreadShim.h"

#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <unistd.h>

const int earshot_sched_reset_on_fork = SCHED_RESET_ON_FORK;
const int earshot_sched_batch = SCHED_BATCH;
const int earshot_sched_idle = SCHED_IDLE;

int32_t earshot_thread_id(void) {
    return (int32_t)gettid();
}

int earshot_name_current_thread(const char *name) {
    char kept[16];
    strncpy(kept, name, sizeof kept - 1);
    kept[sizeof kept - 1] = '\0';
    return pthread_setname_np(pthread_self(), kept);
}

int earshot_limit_malloc_arenas(int count) {
    return mallopt(M_ARENA_MAX, count);
}

int64_t earshot_limit_realtime_cpu(uint64_t microseconds) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_RTTIME, &limit) != 0) return -1;
    // Lowering a hard limit is always allowed; raising it needs privilege, so a lower one stays.
    rlim_t wanted = (rlim_t)microseconds;
    if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < wanted) wanted = limit.rlim_max;
    limit.rlim_cur = wanted;
    limit.rlim_max = wanted;
    if (setrlimit(RLIMIT_RTTIME, &limit) != 0) return -1;
    return (int64_t)wanted;
}

uint64_t earshot_realtime_cpu_limit(void) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_RTTIME, &limit) != 0) return 0;
    return limit.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)limit.rlim_cur;
}

// The kernel's struct sched_attr as of Linux 4.13 (SCHED_ATTR_SIZE_VER1): Debian 12's glibc has no wrapper for it.
struct earshot_sched_attr {
    uint32_t size;
    uint32_t sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime;
    uint64_t sched_deadline;
    uint64_t sched_period;
    uint32_t sched_util_min;
    uint32_t sched_util_max;
};

int earshot_request_fair_slice(uint64_t nanoseconds) {
    struct earshot_sched_attr attributes;
    memset(&attributes, 0, sizeof attributes);
    if (syscall(SYS_sched_getattr, 0, &attributes, sizeof attributes, 0) != 0) return -1;
    if (attributes.sched_policy != SCHED_OTHER) return -1;
    // Everything else as it is (the nice value above all); only the slice changes.
    attributes.size = sizeof attributes;
    attributes.sched_flags = 0;
    attributes.sched_runtime = nanoseconds;
    if (syscall(SYS_sched_setattr, 0, &attributes, 0) != 0) return -1;
    memset(&attributes, 0, sizeof attributes);
    if (syscall(SYS_sched_getattr, 0, &attributes, sizeof attributes, 0) != 0) return -1;
    return attributes.sched_runtime == nanoseconds ? 0 : 1;
}
