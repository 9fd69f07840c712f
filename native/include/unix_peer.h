// Unix-socket plumbing shared by ffmtrace's C programs (test peers and tools): connect
// to the JVM's socket and pass one fd across it. Failures print to stderr and exit(2):
// these are helpers for single-purpose processes (peer_try_connect excepted).
#ifndef FFMTRACE_UNIX_PEER_H_
#define FFMTRACE_UNIX_PEER_H_

#include <stddef.h>

// Prints "<program>: <what>: <strerror(errno)>" to stderr and exits with status 2.
__attribute__((noreturn)) void peer_die(const char* what);

// Connects to a Unix stream socket by path, or @name in the abstract namespace; the fd,
// or -1 with errno set (ENAMETOOLONG for a name that fits no sockaddr_un).
int peer_try_connect(const char* name);

// peer_try_connect, exiting with status 2 when it fails.
int peer_connect(const char* name);

// Receives one byte with one fd attached (SCM_RIGHTS, close-on-exec) and returns the fd.
int peer_receive_fd(int sock);

// Sends `byte` with `fd` attached.
void peer_send_fd(int sock, int fd, char byte);

// Receives an fd as peer_receive_fd does, checks that the file is `size` bytes, maps it
// shared read-write and closes the fd; returns the mapping.
void* peer_map_received(int sock, size_t size);

#endif  // FFMTRACE_UNIX_PEER_H_
