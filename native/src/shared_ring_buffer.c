#define _GNU_SOURCE
#include "shared_ring_buffer.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434  // the same on every architecture
#endif

#define GUARD_SIZE ((size_t)64 * 1024 * 1024)
#define ATTEMPTS_PER_SLEEP 1024u
#define SLEEPS 1000u

#define A8(b, off) ((_Atomic uint8_t*)((b)->meta + (off)))
#define A16(b, off) ((_Atomic uint16_t*)((b)->meta + (off)))
#define A32(p) ((_Atomic uint32_t*)(p))
#define A64(b, off) ((_Atomic uint64_t*)((b)->meta + (off)))
#define STAT(b, off) ((uint64_t*)((b)->meta + (off)))
// Bytes 0..7 as one word: locked, poisoned, namespace slot (u16), holder pid (u32).
#define LOCK_WORD(b) ((_Atomic uint64_t*)(b)->meta)
#define HOLDER_SHIFT 16

// The inode of our PID namespace, which every pid we pass to the kernel belongs to; 0 if
// /proc cannot tell.
static uint64_t pid_namespace_id(void) {
  struct stat st;
  return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

// Our namespace's slot in the table after the metadata: the first entry holding it, or the
// first free one, claimed. 0 when unknown or the table is full: then the holder we record
// is never judged, and nobody judges ours.
static uint16_t register_pid_namespace(uint8_t* meta) {
  uint64_t ns = pid_namespace_id();
  if (ns == 0) return 0;
  for (int i = 0; i < SRB_PID_NAMESPACE_SLOTS; i++) {
    _Atomic uint64_t* entry = (_Atomic uint64_t*)(meta + SRB_PID_NAMESPACES_OFFSET + 8 * i);
    uint64_t seen = 0;
    if (atomic_compare_exchange_strong(entry, &seen, ns) || seen == ns) return (uint16_t)(i + 1);
  }
  return 0;
}

// On srb_attach's path, which the preloaded client takes inside a malloc hook: its
// errors name errno by strerrorname_np (a table), not strerror (gettext, under a lock).
static int map_fd(srb* b, int fd, size_t file_size, char* err, size_t err_len) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t size = file_size - page;
  if (file_size < 2 * page || size % page || (size & (size - 1))) {
    snprintf(err, err_len, "SharedRingBuffer size is invalid (%zu)", file_size);
    return -1;
  }
  size_t outer = page + 2 * size + GUARD_SIZE;
  uint8_t* region = mmap(NULL, outer, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (region == MAP_FAILED) {
    snprintf(err, err_len, "mmap(PROT_NONE): %s", strerrorname_np(errno));
    return -1;
  }
  void* first = mmap(region, file_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
  void* second = mmap(region + file_size, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, (off_t)page);
  if (first != region || second != region + file_size) {
    snprintf(err, err_len, "mmap(MAP_SHARED): %s", strerrorname_np(errno));
    munmap(region, outer);
    return -1;
  }
  b->fd = fd;
  b->meta = region;
  b->ring = region + page;
  b->size = size;
  b->outer_size = outer;
  b->pid = (int)getpid();
  b->ns_slot = register_pid_namespace(region);
  b->take_over_dead_holders = 0;
  b->takeovers = 0;
  return 0;
}

int srb_attach(srb* b, int fd, int require_seals, char* err, size_t err_len) {
  if (require_seals) {
    int seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW)) {
      snprintf(err, err_len, "FD not properly sealed (%d)", seals);
      close(fd);
      return -1;
    }
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size == 0) {
    snprintf(err, err_len, "Could not attach to fd");
    close(fd);
    return -1;
  }
  if (map_fd(b, fd, (size_t)st.st_size, err, err_len) != 0) {
    close(fd);
    return -1;
  }
  return 0;
}

int srb_create(srb* b, uint64_t ring_size, char* err, size_t err_len) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  int fd = memfd_create("heapprofd_ringbuf", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    snprintf(err, err_len, "memfd_create: %s", strerror(errno));
    return -1;
  }
  if (ftruncate(fd, (off_t)(ring_size + page)) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    snprintf(err, err_len, "sizing or sealing the memfd: %s", strerror(errno));
    close(fd);
    return -1;
  }
  if (map_fd(b, fd, (size_t)(ring_size + page), err, err_len) != 0) {
    close(fd);
    return -1;
  }
  return 0;
}

void srb_close(srb* b) {
  munmap(b->meta, b->outer_size);
  close(b->fd);
}

// Perfetto's exchange of the locked byte, then the holder. The last holder cleared both of
// its fields before unlocking (a Perfetto peer never writes them), so whatever a waiter sees
// in between, a slot and a pid both set are this holder's.
static int try_take(srb* b) {
  if (atomic_exchange_explicit(A8(b, SRB_LOCKED_OFFSET), 1, memory_order_acquire) == 0) {
    atomic_store_explicit(A16(b, SRB_HOLDER_NAMESPACE_OFFSET), b->ns_slot, memory_order_relaxed);
    atomic_store_explicit(A32(b->meta + SRB_HOLDER_PID_OFFSET), (uint32_t)b->pid, memory_order_relaxed);
    return 1;
  }
  return 0;
}

// Gone, or a zombie: a pidfd turns readable when its process exits, reaped or not, whoever
// its parent is (kill(pid, 0) still succeeds on a zombie). Without pidfd_open (Linux < 5.3,
// a seccomp filter), only a process that no longer exists counts.
static int process_exited(int pid) {
  int fd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int ready;
    do {
      ready = poll(&p, 1, 0);
    } while (ready < 0 && errno == EINTR);
    close(fd);
    return ready > 0 && (p.revents & (POLLIN | POLLHUP));
  }
  if (errno == ESRCH) return 1;
  if (errno == EINVAL) return 0;  // a thread other than a main one: not a holder we recorded
  return kill(pid, 0) != 0 && errno == ESRCH;
}

// A holder clears itself before unlocking, so one still recorded, unchanged, after its
// process was found exited died holding the lock. Its pid is only read when it is of our
// PID namespace (the same slot): a pid of another namespace names another process here.
// The dead holder's word goes to *dead_word.
static int holder_died(srb* b, uint64_t* dead_word) {
  uint64_t word = atomic_load(LOCK_WORD(b));
  int holder = (int)(uint32_t)(word >> 32);
  uint16_t slot = (uint16_t)(word >> HOLDER_SHIFT);
  if (b->ns_slot == 0 || slot != b->ns_slot || holder <= 0 || holder == b->pid) return 0;
  if (!process_exited(holder)) return 0;
  uint64_t now = atomic_load(LOCK_WORD(b));
  *dead_word = now;
  return (now & 0xFF) != 0 && now >> HOLDER_SHIFT == word >> HOLDER_SHIFT;
}

// Replaces the dead holder's word with ours in one step, so of several waiters that found it
// dead one takes the lock. A poisoned word is left alone: poison is for good.
static int take_over(srb* b, uint64_t dead_word) {
  if (dead_word & 0xFF00) return 0;
  uint64_t ours = 1 | (uint64_t)b->ns_slot << HOLDER_SHIFT | (uint64_t)(uint32_t)b->pid << 32;
  if (!atomic_compare_exchange_strong(LOCK_WORD(b), &dead_word, ours)) return 0;
  b->takeovers++;
  return 1;
}

int srb_lock(srb* b, int blocking) {
  if (!atomic_load_explicit(A8(b, SRB_POISONED_OFFSET), memory_order_relaxed) && try_take(b)) return 1;
  uint64_t sleeps = 0;
  int locked = 0;
  if (!atomic_load_explicit(A8(b, SRB_POISONED_OFFSET), memory_order_relaxed)) {
    for (uint64_t attempt = 1; blocking || attempt < (uint64_t)ATTEMPTS_PER_SLEEP * SLEEPS; attempt++) {
      if (!atomic_load_explicit(A8(b, SRB_LOCKED_OFFSET), memory_order_relaxed) && try_take(b)) {
        locked = 1;
        break;
      }
      if (attempt % ATTEMPTS_PER_SLEEP == 0) {
        if (atomic_load_explicit(A8(b, SRB_POISONED_OFFSET), memory_order_relaxed)) break;
        uint64_t dead_word;
        if (holder_died(b, &dead_word)) {
          if (b->take_over_dead_holders) {
            if (take_over(b, dead_word)) {
              locked = 1;
              break;
            }
            continue;
          }
          srb_poison(b);
          break;
        }
        usleep(1000);
        sleeps++;
      }
    }
  }
  if (sleeps) atomic_fetch_add_explicit(A64(b, SRB_BLOCKED_US_OFFSET), sleeps * 1000, memory_order_relaxed);
  if (!locked) atomic_fetch_add_explicit(A64(b, SRB_FAILED_SPINLOCKS_OFFSET), 1, memory_order_relaxed);
  return locked;
}

void srb_unlock(srb* b) {
  atomic_store_explicit(A32(b->meta + SRB_HOLDER_PID_OFFSET), 0, memory_order_relaxed);
  atomic_store_explicit(A16(b, SRB_HOLDER_NAMESPACE_OFFSET), 0, memory_order_relaxed);
  atomic_store_explicit(A8(b, SRB_LOCKED_OFFSET), 0, memory_order_release);
}

void srb_poison(srb* b) { atomic_store_explicit(A8(b, SRB_POISONED_OFFSET), 1, memory_order_relaxed); }

static int positions(srb* b, uint64_t* rd, uint64_t* wr) {
  *wr = atomic_load_explicit(A64(b, SRB_WRITE_POS_OFFSET), memory_order_acquire);
  *rd = atomic_load_explicit(A64(b, SRB_READ_POS_OFFSET), memory_order_relaxed);
  return !(*wr < *rd || *wr - *rd > b->size || (*wr | *rd) % 8);
}

static uint64_t stride_of(uint64_t size) { return (size + SRB_HEADER_SIZE + 7) & ~(uint64_t)7; }

srb_result srb_begin_write(srb* b, uint64_t size, srb_record* out) {
  if (size == 0) return SRB_ZERO_LENGTH;
  uint64_t rd, wr;
  if (!positions(b, &rd, &wr)) {
    (*STAT(b, SRB_STATS_WRITES_CORRUPT_OFFSET))++;
    return SRB_CORRUPT;
  }
  uint64_t stride = stride_of(size);
  if (size > 0xFFFFFFFFu || stride > b->size) {
    (*STAT(b, SRB_STATS_WRITES_OVERFLOW_OFFSET))++;
    return SRB_TOO_BIG;
  }
  if (stride > b->size - (wr - rd)) {
    (*STAT(b, SRB_STATS_WRITES_OVERFLOW_OFFSET))++;
    return SRB_NO_SPACE;
  }
  uint8_t* header = b->ring + (wr & (b->size - 1));
  *STAT(b, SRB_STATS_BYTES_WRITTEN_OFFSET) += size;
  (*STAT(b, SRB_STATS_WRITES_SUCCEEDED_OFFSET))++;
  atomic_store_explicit(A32(header), 0, memory_order_relaxed);
  atomic_fetch_add_explicit(A64(b, SRB_WRITE_POS_OFFSET), stride, memory_order_release);
  out->header = header;
  out->data = header + SRB_HEADER_SIZE;
  out->size = size;
  out->stride = stride;
  out->bytes_free = b->size - (wr - rd) - stride;
  return SRB_OK;
}

void srb_end_write(srb* b, const srb_record* r) {
  (void)b;
  atomic_store_explicit(A32(r->header), (uint32_t)r->size, memory_order_release);
}

srb_result srb_begin_read(srb* b, srb_record* out) {
  uint64_t rd, wr;
  if (!positions(b, &rd, &wr)) {
    (*STAT(b, SRB_STATS_READS_CORRUPT_OFFSET))++;
    return SRB_CORRUPT;
  }
  uint64_t avail = wr - rd;
  if (avail < SRB_HEADER_SIZE) {
    (*STAT(b, SRB_STATS_READS_NODATA_OFFSET))++;
    return SRB_NO_DATA;
  }
  uint8_t* header = b->ring + (rd & (b->size - 1));
  uint64_t size = atomic_load_explicit(A32(header), memory_order_acquire);
  if (size == 0) {
    (*STAT(b, SRB_STATS_READS_NODATA_OFFSET))++;
    return SRB_NO_DATA;
  }
  uint64_t stride = stride_of(size);
  if (stride > avail) {
    (*STAT(b, SRB_STATS_READS_CORRUPT_OFFSET))++;
    return SRB_CORRUPT;
  }
  out->header = header;
  out->data = header + SRB_HEADER_SIZE;
  out->size = size;
  out->stride = stride;
  return SRB_OK;
}

void srb_end_read(srb* b, const srb_record* r) {
  atomic_fetch_add_explicit(A64(b, SRB_READ_POS_OFFSET), r->stride, memory_order_relaxed);
  (*STAT(b, SRB_STATS_READS_SUCCEEDED_OFFSET))++;
}

uint64_t srb_unread_bytes(srb* b) {
  uint64_t rd, wr;
  return positions(b, &rd, &wr) ? wr - rd : 0;
}

void srb_set_error_state(srb* b, uint64_t state) { atomic_store(A64(b, SRB_ERROR_STATE_OFFSET), state); }

void srb_set_shutting_down(srb* b) {
  atomic_store_explicit(A8(b, SRB_SHUTTING_DOWN_OFFSET), 1, memory_order_relaxed);
}

void srb_set_reader_paused(srb* b) {
  atomic_store_explicit(A8(b, SRB_READER_PAUSED_OFFSET), 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_seq_cst);
}

int srb_get_and_reset_reader_paused(srb* b) {
  atomic_thread_fence(memory_order_seq_cst);
  return atomic_load_explicit(A8(b, SRB_READER_PAUSED_OFFSET), memory_order_relaxed) &&
         atomic_exchange_explicit(A8(b, SRB_READER_PAUSED_OFFSET), 0, memory_order_relaxed);
}
