#define _GNU_SOURCE
#include "perfetto_ipc.h"
#include "unix_peer.h"

#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

// fds one recvmsg may carry: Perfetto sends at most one per frame, more is a violation.
enum { MAX_FDS = 4 };

int ipc_connect(struct ipc_client* c, const char* name) {
  memset(c, 0, offsetof(struct ipc_client, rx));
  c->sock = -1;
  c->fd = -1;
  c->rx_used = c->rx_consumed = 0;
  c->next_request_id = 1;
  int fd = peer_try_connect(name);
  if (fd < 0) return -1;
  c->sock = fd;
  return 0;
}

void ipc_close(struct ipc_client* c) {
  if (c->sock >= 0) close(c->sock);
  if (c->fd >= 0) close(c->fd);
  c->sock = c->fd = -1;
}

static int send_all(struct ipc_client* c, const uint8_t* data, size_t size) {
  while (size > 0) {
    ssize_t n = send(c->sock, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    data += n;
    size -= (size_t)n;
  }
  return 0;
}

// Prefixes the frame in out[4..] with its length.
static size_t finish_frame(uint8_t* out, const struct pb* frame) {
  if (frame->failed) return 0;
  uint32_t size = (uint32_t)pb_size(frame);
  for (int i = 0; i < 4; i++) out[i] = (uint8_t)(size >> (8 * i));
  return size + 4;
}

size_t ipc_encode_invoke(uint8_t* out, size_t capacity, uint64_t request_id, uint32_t service_id,
                         uint32_t method_id, const uint8_t* args, size_t size, int drop_reply) {
  if (capacity < 4) return 0;
  struct pb frame;
  pb_init(&frame, out + 4, capacity - 4);
  // Perfetto's client sets every field of the invocation, drop_reply too.
  pb_varint(&frame, IPC_FRAME_REQUEST_ID, request_id);
  uint8_t* invoke = pb_begin(&frame, IPC_FRAME_INVOKE_METHOD);
  pb_varint(&frame, IPC_INVOKE_SERVICE_ID, service_id);
  pb_varint(&frame, IPC_INVOKE_METHOD_ID, method_id);
  pb_bytes(&frame, IPC_INVOKE_ARGS, args, size);
  pb_varint(&frame, IPC_INVOKE_DROP_REPLY, drop_reply != 0);
  pb_end(&frame, invoke);
  return finish_frame(out, &frame);
}

// The id of a bound method, or 0 (ids count from 1).
static uint32_t method_id(const struct ipc_client* c, const char* name) {
  for (int i = 0; i < c->method_count; i++) {
    if (strcmp(c->methods[i].name, name) == 0) return c->methods[i].id;
  }
  return 0;
}

uint64_t ipc_invoke(struct ipc_client* c, const char* method, const uint8_t* args, size_t size, int drop_reply) {
  static uint8_t out[IPC_MAX_FRAME];
  uint32_t id = method_id(c, method);
  if (id == 0) return 0;
  uint64_t request_id = c->next_request_id++;
  size_t n = ipc_encode_invoke(out, sizeof(out), request_id, c->service_id, id, args, size, drop_reply);
  if (n == 0 || send_all(c, out, n) != 0) return 0;
  return request_id;
}

// Takes the fds of one recvmsg. As in Perfetto's client, an fd waits in the client until
// the handler of the frame that brought it takes it, a newer one replacing it; more
// than one in a message breaks the protocol.
static int take_fds(struct ipc_client* c, struct msghdr* msg) {
  int received = 0;
  int violation = (msg->msg_flags & MSG_CTRUNC) != 0;
  for (struct cmsghdr* cmsg = CMSG_FIRSTHDR(msg); cmsg != NULL; cmsg = CMSG_NXTHDR(msg, cmsg)) {
    if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; i++) {
      int fd;
      memcpy(&fd, CMSG_DATA(cmsg) + i * sizeof(int), sizeof(fd));
      if (received++ == 0 && !violation) {
        if (c->fd >= 0) close(c->fd);
        c->fd = fd;
      } else {
        close(fd);
        violation = 1;
      }
    }
  }
  return violation ? -1 : 0;
}

int ipc_take_fd(struct ipc_client* c) {
  int fd = c->fd;
  c->fd = -1;
  return fd;
}

static int receive_more(struct ipc_client* c, int timeout_ms) {
  struct pollfd p = {.fd = c->sock, .events = POLLIN};
  int ready;
  do {
    ready = poll(&p, 1, timeout_ms);
  } while (ready < 0 && errno == EINTR);
  if (ready < 0) return IPC_HUNG_UP;
  if (ready == 0) return 0;
  char control[CMSG_SPACE(MAX_FDS * sizeof(int))];
  struct iovec iov = {.iov_base = c->rx + c->rx_used, .iov_len = sizeof(c->rx) - c->rx_used};
  struct msghdr msg = {0};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = recvmsg(c->sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
  if (n <= 0) return IPC_HUNG_UP;
  if (take_fds(c, &msg) != 0) return IPC_VIOLATION;
  c->rx_used += (size_t)n;
  return 1;
}

// Decodes one IPCFrame; -1 if it does not parse.
static int decode_frame(const uint8_t* data, size_t size, struct ipc_reply* out) {
  struct pb_reader r, inner;
  struct pb_field f, g;
  memset(out, 0, sizeof(*out));
  out->kind = IPC_OTHER;
  pb_reader_init(&r, data, size);
  while (pb_next(&r, &f)) {
    if (f.id == IPC_FRAME_REQUEST_ID && f.type == PB_VARINT) {
      out->request_id = f.value;
    } else if ((f.id == IPC_FRAME_BIND_SERVICE_REPLY || f.id == IPC_FRAME_INVOKE_METHOD_REPLY) && f.type == PB_BYTES) {
      out->kind = f.id == IPC_FRAME_BIND_SERVICE_REPLY ? IPC_BIND_REPLY : IPC_INVOKE_REPLY;
      // A bind reply's methods stay in reply for ipc_bind to read.
      out->reply = f.data;
      out->reply_size = f.size;
      out->success = 0;
      out->has_more = 0;
      pb_reader_init(&inner, f.data, f.size);
      while (pb_next(&inner, &g)) {
        if (g.id == IPC_REPLY_SUCCESS && g.type == PB_VARINT) out->success = g.value != 0;
        if (out->kind == IPC_INVOKE_REPLY && g.id == IPC_REPLY_HAS_MORE && g.type == PB_VARINT) out->has_more = g.value != 0;
      }
      if (inner.error) return -1;
      if (out->kind == IPC_INVOKE_REPLY) {
        out->reply = NULL;
        out->reply_size = 0;
        pb_reader_init(&inner, f.data, f.size);
        while (pb_next(&inner, &g)) {
          if (g.id == IPC_REPLY_PROTO && g.type == PB_BYTES) {
            out->reply = g.data;
            out->reply_size = g.size;
          }
        }
      }
    } else if (f.id == IPC_FRAME_REQUEST_ERROR) {
      out->kind = IPC_REQUEST_ERROR;
    }
  }
  return r.error ? -1 : 0;
}

int ipc_receive(struct ipc_client* c, struct ipc_reply* out, int timeout_ms) {
  if (c->sock < 0) return IPC_HUNG_UP;
  if (c->rx_consumed > 0) {
    memmove(c->rx, c->rx + c->rx_consumed, c->rx_used - c->rx_consumed);
    c->rx_used -= c->rx_consumed;
    c->rx_consumed = 0;
  }
  for (;;) {
    if (c->rx_used >= 4) {
      uint32_t size = (uint32_t)c->rx[0] | (uint32_t)c->rx[1] << 8 | (uint32_t)c->rx[2] << 16 |
                      (uint32_t)c->rx[3] << 24;
      if (size > sizeof(c->rx) - 4) return IPC_VIOLATION;
      if (c->rx_used >= 4 + (size_t)size) {
        if (decode_frame(c->rx + 4, size, out) != 0) return IPC_VIOLATION;
        c->rx_consumed = 4 + (size_t)size;
        return 1;
      }
    }
    int got = receive_more(c, timeout_ms);
    if (got <= 0) return got;
  }
}

size_t ipc_encode_bind(uint8_t* out, size_t capacity, uint64_t request_id, const char* service) {
  if (capacity < 4) return 0;
  struct pb frame;
  pb_init(&frame, out + 4, capacity - 4);
  pb_varint(&frame, IPC_FRAME_REQUEST_ID, request_id);
  uint8_t* bind = pb_begin(&frame, IPC_FRAME_BIND_SERVICE);
  pb_string(&frame, IPC_BIND_SERVICE_NAME, service);
  pb_end(&frame, bind);
  return finish_frame(out, &frame);
}

int ipc_bind(struct ipc_client* c, const char* service) {
  uint8_t out[512];
  uint64_t request_id = c->next_request_id++;
  size_t n = ipc_encode_bind(out, sizeof(out), request_id, service);
  if (n == 0 || send_all(c, out, n) != 0) return -1;
  struct ipc_reply reply;
  for (;;) {
    if (ipc_receive(c, &reply, -1) != 1) return -1;
    if (reply.request_id != request_id) continue;
    if (reply.kind != IPC_BIND_REPLY || !reply.success) return -1;
    break;
  }
  struct pb_reader r, m;
  struct pb_field f, g;
  pb_reader_init(&r, reply.reply, reply.reply_size);
  c->method_count = 0;
  while (pb_next(&r, &f)) {
    if (f.id == IPC_BIND_REPLY_SERVICE_ID && f.type == PB_VARINT) c->service_id = (uint32_t)f.value;
    if (f.id != IPC_BIND_REPLY_METHODS || f.type != PB_BYTES || c->method_count == IPC_MAX_METHODS) continue;
    struct ipc_method* method = &c->methods[c->method_count];
    memset(method, 0, sizeof(*method));
    pb_reader_init(&m, f.data, f.size);
    while (pb_next(&m, &g)) {
      if (g.id == IPC_METHOD_INFO_ID && g.type == PB_VARINT) method->id = (uint32_t)g.value;
      if (g.id == IPC_METHOD_INFO_NAME && g.type == PB_BYTES && g.size < sizeof(method->name)) {
        memcpy(method->name, g.data, g.size);
      }
    }
    if (!m.error && method->id != 0 && method->name[0] != '\0') c->method_count++;
  }
  return r.error ? -1 : 0;
}
