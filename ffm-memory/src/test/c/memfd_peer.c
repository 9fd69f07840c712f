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

static void die(const char* what) {
  fprintf(stderr, "memfd_peer: %s: %s\n", what, strerror(errno));
  exit(2);
}

static int connect_to(const char* name) {
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  socklen_t len;
  if (name[0] == '@') {
    size_t n = strlen(name + 1);
    memcpy(addr.sun_path + 1, name + 1, n);
    len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
  } else {
    strncpy(addr.sun_path, name, sizeof(addr.sun_path) - 1);
    len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(name) + 1);
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) die("socket");
  if (connect(fd, (struct sockaddr*)&addr, len) != 0) die("connect");
  return fd;
}

static void fill(uint8_t* p, size_t size, int seed) {
  for (size_t i = 0; i < size; i++) p[i] = (uint8_t)((i * 31 + (size_t)seed) & 0xff);
}

static int receive_fd(int sock) {
  char byte;
  char control[CMSG_SPACE(sizeof(int))];
  struct iovec iov = {.iov_base = &byte, .iov_len = 1};
  struct msghdr msg = {0};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1) die("recvmsg");
  struct cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  if (cmsg == NULL || cmsg->cmsg_type != SCM_RIGHTS) {
    fprintf(stderr, "memfd_peer: no fd received\n");
    exit(2);
  }
  int fd;
  memcpy(&fd, CMSG_DATA(cmsg), sizeof(fd));
  return fd;
}

static void send_fd(int sock, int fd) {
  char byte = 'S';
  char control[CMSG_SPACE(sizeof(int))];
  memset(control, 0, sizeof(control));
  struct iovec iov = {.iov_base = &byte, .iov_len = 1};
  struct msghdr msg = {0};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  struct cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(cmsg), &fd, sizeof(fd));
  if (sendmsg(sock, &msg, MSG_NOSIGNAL) != 1) die("sendmsg");
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: memfd_peer receive|send <socket> <size> <seed>\n");
    return 2;
  }
  size_t size = (size_t)strtoull(argv[3], NULL, 10);
  int seed = atoi(argv[4]);
  int sock = connect_to(argv[2]);

  if (strcmp(argv[1], "receive") == 0) {
    int fd = receive_fd(sock);
    struct stat st;
    if (fstat(fd, &st) != 0) die("fstat");
    if ((size_t)st.st_size != size) {
      fprintf(stderr, "memfd_peer: fd is %lld bytes, expected %zu\n", (long long)st.st_size, size);
      return 2;
    }
    uint8_t* p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) die("mmap");
    fill(p, size, seed);
    if (ftruncate(fd, (off_t)(size / 2)) == 0) {
      printf("shrink: ok\n");
    } else {
      printf("shrink: %s\n", errno == EPERM ? "EPERM" : strerror(errno));
    }
    fflush(stdout);
    if (send(sock, "W", 1, MSG_NOSIGNAL) != 1) die("send");
    munmap(p, size);
    close(fd);
  } else if (strcmp(argv[1], "send") == 0) {
    int fd = memfd_create("memfd_peer", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) die("memfd_create");
    if (ftruncate(fd, (off_t)size) != 0) die("ftruncate");
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) die("F_ADD_SEALS");
    uint8_t* p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) die("mmap");
    fill(p, size, seed);
    send_fd(sock, fd);
    char ack;
    if (recv(sock, &ack, 1, 0) != 1) die("recv ack");
    munmap(p, size);
    close(fd);
  } else {
    fprintf(stderr, "memfd_peer: unknown mode %s\n", argv[1]);
    return 2;
  }
  close(sock);
  return 0;
}
