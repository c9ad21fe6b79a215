// CThreadShim: the few Linux thread and scheduling calls Swift cannot reach through Glibc (they need _GNU_SOURCE
// or are variadic): the kernel thread id, the thread's name, RLIMIT_RTTIME, scheduling policies
// and slices.
#ifndef CTHREADSHIM_H
#define CTHREADSHIM_H

#include <stdint.h>

/// The calling thread's kernel thread id (gettid), as /proc/PID/task/ and rtkit know it.
int32_t earshot_thread_id(void);

/// Names the calling thread (pthread_setname_np; the kernel keeps the first 15 bytes). Returns 0 or an error number.
int earshot_name_current_thread(const char *name);

/// Limits glibc's malloc to `count` arenas (mallopt M_ARENA_MAX, from malloc.h, which Glibc's module leaves out).
/// Returns 1 on success, 0 on failure.
int earshot_limit_malloc_arenas(int count);

/// Sets RLIMIT_RTTIME (CPU time in microseconds a real-time thread may use without blocking) to `microseconds`, or
/// keeps a lower hard limit already in place. Returns the limit now in effect, or -1 with errno set.
int64_t earshot_limit_realtime_cpu(uint64_t microseconds);

/// The current RLIMIT_RTTIME soft limit in microseconds (UINT64_MAX for unlimited), or 0 on error.
uint64_t earshot_realtime_cpu_limit(void);

/// Asks the scheduler (EEVDF, Linux 6.12 and later) for a time slice of `nanoseconds` for the calling thread, a normal
/// (SCHED_OTHER) one, its nice value kept: a thread with a shorter slice than the one running may preempt it at once
/// on waking. Returns 0 when the slice is in effect, 1 when the kernel keeps its own (an older kernel, which ignores
/// the request, or a value out of its range), -1 with errno set when the call failed.
int earshot_request_fair_slice(uint64_t nanoseconds);

/// SCHED_RESET_ON_FORK: or-ed into a policy, children do not inherit real-time scheduling.
extern const int earshot_sched_reset_on_fork;

/// SCHED_BATCH and SCHED_IDLE, which glibc's headers show only with _GNU_SOURCE.
extern const int earshot_sched_batch;
extern const int earshot_sched_idle;

#endif
