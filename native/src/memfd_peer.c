// The C side of ffm-memory's cross-process tests: a second process that shares a
// memfd with the JVM over a Unix socket, in either direction.
//
//   memfd_peer receive <socket> <size> <seed>
//       connect, receive an fd, map it, check it is <size> bytes, write the pattern,
//       try to shrink it (prints "shrink: EPERM" or "shrink: ok"), send "W", exit.
//   memfd_peer send <socket> <size> <seed>
//       create a memfd sealed against shrink/grow, write the pattern, connect, send
//       the fd with "S", wait for one byte back, exit.
//
// <socket> is a filesystem path, or @name for the abstract namespace. The pattern is
// byte[i] = (i * 31 + seed) & 0xff.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ffmtrace_util.h"
#include "unix_peer.h"

static void fill(uint8_t* p, size_t size, int seed) {
  for (size_t i = 0; i < size; i++) p[i] = (uint8_t)((i * 31 + (size_t)seed) & 0xff);
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: memfd_peer receive|send <socket> <size> <seed>\n");
    return 2;
  }
  size_t size = (size_t)arg_u64("memfd_peer", "size", argv[3], SIZE_MAX);
  int seed = (int)arg_u64("memfd_peer", "seed", argv[4], INT_MAX);
  int sock = peer_connect(argv[2]);

  if (strcmp(argv[1], "receive") == 0) {
    int fd = peer_receive_fd(sock);
    struct stat st;
    if (fstat(fd, &st) != 0) peer_die("fstat");
    if ((size_t)st.st_size != size) {
      fprintf(stderr, "memfd_peer: fd is %lld bytes, expected %zu\n", (long long)st.st_size, size);
      return 2;
    }
    uint8_t* p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) peer_die("mmap");
    fill(p, size, seed);
    if (ftruncate(fd, (off_t)(size / 2)) == 0) {
      printf("shrink: ok\n");
    } else {
      printf("shrink: %s\n", errno == EPERM ? "EPERM" : strerror(errno));
    }
    fflush(stdout);
    if (send(sock, "W", 1, MSG_NOSIGNAL) != 1) peer_die("send");
    munmap(p, size);
    close(fd);
  } else if (strcmp(argv[1], "send") == 0) {
    int fd = memfd_create("memfd_peer", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) peer_die("memfd_create");
    if (ftruncate(fd, (off_t)size) != 0) peer_die("ftruncate");
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) peer_die("F_ADD_SEALS");
    uint8_t* p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) peer_die("mmap");
    fill(p, size, seed);
    peer_send_fd(sock, fd, 'S');
    char ack;
    if (recv(sock, &ack, 1, 0) != 1) peer_die("recv ack");
    munmap(p, size);
    close(fd);
  } else {
    fprintf(stderr, "memfd_peer: unknown mode %s\n", argv[1]);
    return 2;
  }
  close(sock);
  return 0;
}
