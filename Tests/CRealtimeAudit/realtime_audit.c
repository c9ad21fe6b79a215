// Counting allocations and lock calls on armed threads, for the real-time path tests.
//
// How: this file defines malloc, free and friends, and the pthread lock calls, in the test executable. The dynamic
// linker binds every library's calls to these names (libpulse's, the Swift runtime's, glibc's own) to the
// executable's definitions, because GNU ld exports an executable's symbols that shared libraries refer to. Each one
// does its work through glibc's real implementation (the exported __libc_* allocator entry points, or the next
// definition found with dlsym(RTLD_NEXT) for the lock calls) and, only when the calling thread is armed, adds one
// to a counter. glibc 2.34 removed the malloc hooks; replacing the allocator's entry points is glibc's documented
// way ("Replacing malloc" in its manual), and since the memory still comes from glibc's own allocator, memory
// allocated before or after a measurement can be freed by either side.
//
// Arming is a thread-local flag, so a test measures exactly one thread's section (libpulse's thread while our write
// callback runs) and nothing else the process does. The flag lives in the executable's static TLS block, so reading
// it never allocates. Unarmed, each call costs one thread-local load and a branch.
//
// Sanitizer builds bring their own allocator and interceptors; there this file defines nothing and
// realtime_audit_is_effective() answers 0, so a test fails loudly instead of measuring nothing.
#define _GNU_SOURCE
#include "CRealtimeAudit.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define REALTIME_AUDIT_DISABLED 1
#endif
#endif

// Initial-exec: a fixed offset from the thread pointer, so reading it can never allocate.
static _Thread_local int armed __attribute__((tls_model("initial-exec")));
static _Atomic uint64_t sections;
static _Atomic uint64_t allocations;
static _Atomic uint64_t frees;
static _Atomic uint64_t lockCalls;
static _Atomic uint64_t largestAllocation;

void realtime_audit_arm(void) {
    atomic_fetch_add_explicit(&sections, 1, memory_order_relaxed);
    armed = 1;
}

void realtime_audit_disarm(void) {
    armed = 0;
}

void realtime_audit_reset(void) {
    atomic_store(&sections, 0);
    atomic_store(&allocations, 0);
    atomic_store(&frees, 0);
    atomic_store(&lockCalls, 0);
    atomic_store(&largestAllocation, 0);
}

realtime_audit_counts realtime_audit_read(void) {
    realtime_audit_counts counts = {
        .sections = atomic_load(&sections),
        .allocations = atomic_load(&allocations),
        .frees = atomic_load(&frees),
        .lockCalls = atomic_load(&lockCalls),
        .largestAllocation = atomic_load(&largestAllocation),
    };
    return counts;
}

#ifndef REALTIME_AUDIT_DISABLED

static void countAllocation(size_t size) {
    if (!armed) return;
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    uint64_t largest = atomic_load_explicit(&largestAllocation, memory_order_relaxed);
    while (size > largest &&
           !atomic_compare_exchange_weak_explicit(&largestAllocation, &largest, size, memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
}

static void countLock(void) {
    if (armed) atomic_fetch_add_explicit(&lockCalls, 1, memory_order_relaxed);
}

// glibc's allocator entry points under their internal names (exported by libc.so.6 since glibc 2.0).
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void __libc_free(void *pointer);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void *__libc_valloc(size_t size);
extern void *__libc_pvalloc(size_t size);

void *malloc(size_t size) {
    countAllocation(size);
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
    countAllocation(count * size);
    return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size) {
    countAllocation(size);
    return __libc_realloc(pointer, size);
}

void free(void *pointer) {
    if (pointer && armed) atomic_fetch_add_explicit(&frees, 1, memory_order_relaxed);
    __libc_free(pointer);
}

void *memalign(size_t alignment, size_t size) {
    countAllocation(size);
    return __libc_memalign(alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
    countAllocation(size);
    return __libc_memalign(alignment, size);
}

int posix_memalign(void **result, size_t alignment, size_t size) {
    countAllocation(size);
    // The checks glibc's own posix_memalign makes: a power of two, a multiple of the pointer size.
    if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0 || alignment == 0) return EINVAL;
    void *memory = __libc_memalign(alignment, size);
    if (!memory) return ENOMEM;
    *result = memory;
    return 0;
}

void *valloc(size_t size) {
    countAllocation(size);
    return __libc_valloc(size);
}

void *pvalloc(size_t size) {
    countAllocation(size);
    return __libc_pvalloc(size);
}

// The lock calls forward to the next definition (glibc's). Resolved on first use: dlsym takes only ld.so's own
// locks, which glibc calls directly rather than through these exported names, so it cannot recurse here.
#define FORWARD(name, type)                                                                                      \
    static type next_##name;                                                                                     \
    static type resolve_##name(void) {                                                                           \
        type found = atomic_load_explicit((_Atomic(type) *)&next_##name, memory_order_acquire);                  \
        if (!found) {                                                                                            \
            found = (type)dlsym(RTLD_NEXT, #name);                                                               \
            atomic_store_explicit((_Atomic(type) *)&next_##name, found, memory_order_release);                   \
        }                                                                                                        \
        return found;                                                                                            \
    }

typedef int (*mutex_call)(pthread_mutex_t *);
typedef int (*mutex_timed_call)(pthread_mutex_t *, const struct timespec *);
typedef int (*rwlock_call)(pthread_rwlock_t *);
typedef int (*cond_wait_call)(pthread_cond_t *, pthread_mutex_t *);
typedef int (*cond_timed_call)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
typedef int (*sem_call)(sem_t *);
typedef int (*sem_timed_call)(sem_t *, const struct timespec *);

FORWARD(pthread_mutex_lock, mutex_call)
FORWARD(pthread_mutex_trylock, mutex_call)
FORWARD(pthread_mutex_timedlock, mutex_timed_call)
FORWARD(pthread_rwlock_rdlock, rwlock_call)
FORWARD(pthread_rwlock_wrlock, rwlock_call)
FORWARD(pthread_cond_wait, cond_wait_call)
FORWARD(pthread_cond_timedwait, cond_timed_call)
FORWARD(sem_wait, sem_call)
FORWARD(sem_timedwait, sem_timed_call)

int pthread_mutex_lock(pthread_mutex_t *mutex) {
    countLock();
    return resolve_pthread_mutex_lock()(mutex);
}

int pthread_mutex_trylock(pthread_mutex_t *mutex) {
    countLock();
    return resolve_pthread_mutex_trylock()(mutex);
}

int pthread_mutex_timedlock(pthread_mutex_t *mutex, const struct timespec *deadline) {
    countLock();
    return resolve_pthread_mutex_timedlock()(mutex, deadline);
}

int pthread_rwlock_rdlock(pthread_rwlock_t *lock) {
    countLock();
    return resolve_pthread_rwlock_rdlock()(lock);
}

int pthread_rwlock_wrlock(pthread_rwlock_t *lock) {
    countLock();
    return resolve_pthread_rwlock_wrlock()(lock);
}

int pthread_cond_wait(pthread_cond_t *condition, pthread_mutex_t *mutex) {
    countLock();
    return resolve_pthread_cond_wait()(condition, mutex);
}

int pthread_cond_timedwait(pthread_cond_t *condition, pthread_mutex_t *mutex, const struct timespec *deadline) {
    countLock();
    return resolve_pthread_cond_timedwait()(condition, mutex, deadline);
}

int sem_wait(sem_t *semaphore) {
    countLock();
    return resolve_sem_wait()(semaphore);
}

int sem_timedwait(sem_t *semaphore, const struct timespec *deadline) {
    countLock();
    return resolve_sem_timedwait()(semaphore, deadline);
}

int realtime_audit_is_effective(void) {
    realtime_audit_counts before = realtime_audit_read();
    pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
    realtime_audit_arm();
    // strdup allocates inside glibc: counted only if library calls reach this file, not just our own.
    char *copy = strdup("probe");
    pthread_mutex_lock(&mutex);
    pthread_mutex_unlock(&mutex);
    realtime_audit_disarm();
    free(copy);
    realtime_audit_counts after = realtime_audit_read();
    return after.allocations > before.allocations && after.lockCalls > before.lockCalls;
}

#else

int realtime_audit_is_effective(void) {
    return 0;
}

#endif
