#define _GNU_SOURCE
#include "unix_peer.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

void peer_die(const char* what) {
  fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what, strerror(errno));
  exit(2);
}

int peer_try_connect(const char* name) {
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  size_t length = strlen(name);
  if (length == 0 || length >= sizeof(addr.sun_path)) {
    errno = ENAMETOOLONG;
    return -1;
  }
  socklen_t len;
  if (name[0] == '@') {
    // Abstract namespace: a leading NUL, no terminator.
    memcpy(addr.sun_path + 1, name + 1, length - 1);
    len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + length);
  } else {
    memcpy(addr.sun_path, name, length);
    len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + length + 1);
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, (struct sockaddr*)&addr, len) != 0) {
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

int peer_connect(const char* name) {
  int fd = peer_try_connect(name);
  if (fd < 0) {
    if (errno == ENAMETOOLONG) {
      fprintf(stderr, "%s: socket name too long: %s\n", program_invocation_short_name, name);
      exit(2);
    }
    peer_die("connect");
  }
  return fd;
}

int peer_receive_fd(int sock) {
  char byte;
  char control[CMSG_SPACE(sizeof(int))];
  struct iovec iov = {.iov_base = &byte, .iov_len = 1};
  struct msghdr msg = {0};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1) peer_die("recvmsg");
  struct cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  if (cmsg == NULL || cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS) {
    fprintf(stderr, "%s: no fd received\n", program_invocation_short_name);
    exit(2);
  }
  int fd;
  memcpy(&fd, CMSG_DATA(cmsg), sizeof(fd));
  return fd;
}

void peer_send_fd(int sock, int fd, char byte) {
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
  if (sendmsg(sock, &msg, MSG_NOSIGNAL) != 1) peer_die("sendmsg");
}

void* peer_map_received(int sock, size_t size) {
  int fd = peer_receive_fd(sock);
  struct stat st;
  if (fstat(fd, &st) != 0) peer_die("fstat");
  if ((size_t)st.st_size != size) {
    fprintf(stderr, "%s: the received file is %lld bytes, expected %zu\n", program_invocation_short_name,
            (long long)st.st_size, size);
    exit(2);
  }
  void* base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) peer_die("mmap");
  close(fd);
  return base;
}
