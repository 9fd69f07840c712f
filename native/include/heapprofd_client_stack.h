// Where each thread's stack ends, for the preloaded heapprofd client's copies of it
// (src/heapprofd_client_stack.c), and the client's re-entry guard it uses. Internal to
// libffmtrace_heapprofd.so: hidden, not part of any ABI.
#ifndef FFMTRACE_HEAPPROFD_CLIENT_STACK_H
#define FFMTRACE_HEAPPROFD_CLIENT_STACK_H

#include <stdint.h>

#define HPD_HIDDEN __attribute__((visibility("hidden")))

// What a thread gives back on leaving the client.
typedef struct {
  int errno_value;
  int cancel_state;
} client_entry;

// Enters the client on this thread (its hooks then let everything through unsampled):
// 0 when the thread is in it already, else 1, errno and the cancellation state kept in
// *entry for hpd_client_leave.
HPD_HIDDEN int hpd_client_enter(client_entry* entry);
HPD_HIDDEN void hpd_client_leave(const client_entry* entry);

// The end of the stack that holds sp, for a copy [sp, end): safe inside a hook (no lock,
// no allocation).
HPD_HIDDEN uintptr_t hpd_stack_end(uintptr_t sp);

// From the client's constructor, outside any hook: the loading thread's stack bounds and
// the real pthread_create.
HPD_HIDDEN void hpd_stack_init(void);

#endif
