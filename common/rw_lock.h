// RwLock: a reader-writer lock that lets a waiting writer in before new
// readers (glibc's rwlock with PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP).
// std::shared_mutex on glibc prefers readers: under a steady stream of
// readers (a live partition's hops, each holding the lock for a hop) a
// writer (an update batch) can wait without bound. Not recursive: a thread
// that holds it shared must not take it shared again (with a writer waiting
// that would deadlock). Meets the SharedLockable requirements, so
// std::shared_lock and std::unique_lock take it.
#ifndef FANOUT_COMMON_RW_LOCK_H_
#define FANOUT_COMMON_RW_LOCK_H_

#include <pthread.h>

namespace fanout {

class RwLock {
 public:
  RwLock() {
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&lock_, &attr);
    pthread_rwlockattr_destroy(&attr);
  }
  ~RwLock() { pthread_rwlock_destroy(&lock_); }
  RwLock(const RwLock&) = delete;
  RwLock& operator=(const RwLock&) = delete;

  void lock() { pthread_rwlock_wrlock(&lock_); }
  bool try_lock() { return pthread_rwlock_trywrlock(&lock_) == 0; }
  void unlock() { pthread_rwlock_unlock(&lock_); }
  void lock_shared() { pthread_rwlock_rdlock(&lock_); }
  bool try_lock_shared() { return pthread_rwlock_tryrdlock(&lock_) == 0; }
  void unlock_shared() { pthread_rwlock_unlock(&lock_); }

 private:
  pthread_rwlock_t lock_;
};

}  // namespace fanout

#endif  // FANOUT_COMMON_RW_LOCK_H_
