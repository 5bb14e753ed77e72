/* ThreadSanitizer annotations, for orders it cannot see: synchronization that passes through
 * another process (shared memory mapped at another address, a socket to another rank). No-ops
 * in other builds. */
#ifndef WEFT_UTIL_TSAN_H
#define WEFT_UTIL_TSAN_H

#if defined(__SANITIZE_THREAD__)
#define WEFT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WEFT_TSAN 1
#endif
#endif

#ifdef WEFT_TSAN
void __tsan_acquire(void* addr);
void __tsan_release(void* addr);
#define WEFT_TSAN_ACQUIRE(p) __tsan_acquire((void*)(p))
#define WEFT_TSAN_RELEASE(p) __tsan_release((void*)(p))
#else
#define WEFT_TSAN_ACQUIRE(p) ((void)(p))
#define WEFT_TSAN_RELEASE(p) ((void)(p))
#endif

#endif
