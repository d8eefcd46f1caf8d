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
extern "C" void AnnotateNewMemory(const char* file, int line, const volatile void* mem, unsigned long size);
#endif

namespace fanout {

// Tells ThreadSanitizer that [p, p + n) was just mapped by code it does not
// see (UCX attaching another process's shared memory: shmat is not
// intercepted), so the accesses it remembers at those addresses from what was
// mapped there before (a finished thread's stack, say) are forgotten. Without
// it, the first write into the new mapping is reported as a race with the old
// contents. A no-op in other builds.
inline void SanitizerNewMemory(const void* p, size_t n) {
#ifdef FANOUT_TSAN
  AnnotateNewMemory(__FILE__, __LINE__, p, n);
#else
  (void)p;
  (void)n;
#endif
}

}  // namespace fanout

#endif  // FANOUT_COMMON_SANITIZER_H_
