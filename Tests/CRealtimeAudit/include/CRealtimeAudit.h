// CRealtimeAudit: counts heap calls and lock calls made on a thread while it is armed. Test-only; linked into the
// test executable, never into `earshot`. See realtime_audit.c for how it intercepts them.
#ifndef CREALTIMEAUDIT_H
#define CREALTIMEAUDIT_H

#include <stdint.h>

/// What the armed threads did since the last reset.
typedef struct {
    /// Armed sections entered (for the write-callback probe: callbacks measured).
    uint64_t sections;
    /// malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign, valloc and pvalloc calls.
    uint64_t allocations;
    /// free calls with a non-null pointer.
    uint64_t frees;
    /// pthread mutex, rwlock and condition-variable waits, and semaphore waits.
    uint64_t lockCalls;
    /// The size of the largest allocation counted (0 when none), a clue to what made it.
    uint64_t largestAllocation;
} realtime_audit_counts;

/// Starts counting on the calling thread (nesting is not supported: arm, then disarm).
void realtime_audit_arm(void);
/// Stops counting on the calling thread.
void realtime_audit_disarm(void);
/// Zeroes the counts.
void realtime_audit_reset(void);
/// The counts since the last reset.
realtime_audit_counts realtime_audit_read(void);
/// 1 when the interception really works in this process: an allocation made inside the C library (strdup) and a
/// mutex lock made on an armed thread are both counted. It counts them itself: call it before `realtime_audit_reset`. 0 when the interceptors are compiled out (sanitizer builds,
/// which bring their own) or the dynamic linker does not route the library's calls to them.
int realtime_audit_is_effective(void);

#endif
