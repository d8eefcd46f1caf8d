// Hints for the sanitizers about memory they cannot follow.
#ifndef FANOUT_COMMON_SANITIZER_H_
#define FANOUT_COMMON_SANITIZER_H_

#include <cstddef>

#if defined(__SANITIZE_THREAD__)
#define FANOUT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FANOUT_TSAN 1
#endif
#endif

#ifdef FANOUT_TSAN
extern "C" void AnnotateBenignRaceSized(const char* file, int line, const volatile void* mem, unsigned long size,
                                        const char* description);
#endif

namespace fanout {

// Tells ThreadSanitizer that [p, p + n) is memory it cannot follow: shared
// memory UCX attached (shmat is not intercepted) that another process, or
// another mapping of the same segment, also writes. TSan keeps what it saw
// at those addresses before the attachment (a finished thread's stack, a
// freed heap block) and would report the first write into the segment as a
// race with it; races inside the range are not reported (its
// AnnotateBenignRaceSized; the runtime's AnnotateNewMemory is a no-op). A
// no-op in other builds.
inline void SanitizerForeignMemory(const void* p, size_t n, const char* what) {
#ifdef FANOUT_TSAN
  AnnotateBenignRaceSized(__FILE__, __LINE__, p, n, what);
#else
  (void)p;
  (void)n;
  (void)what;
#endif
}

}  // namespace fanout

#endif  // FANOUT_COMMON_SANITIZER_H_
