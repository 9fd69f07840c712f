// perfetto-ipc's tests of the C IPC client (perfetto_ipc.h):
//
//   perfetto_ipc_tool bind REQUEST_ID SERVICE
//   perfetto_ipc_tool invoke REQUEST_ID SERVICE_ID METHOD_ID ARGS_HEX DROP_REPLY
//       print the frame the client sends, length prefix included, in hex
//   perfetto_ipc_tool receive SOCKET
//       connects and prints each frame it decodes, "<kind> <request_id> <success>
//       <has_more> <reply hex>", then "end" when the peer hangs up (status 0) or
//       "violation" when it breaks the protocol (status 1)
//   perfetto_ipc_tool call SOCKET SERVICE METHOD ARGS [METHOD ARGS]...
//       a client as another program (or user) runs it: connects, binds SERVICE, invokes
//       each METHOD in turn with ARGS (hex, or @FILE for a file's bytes) and prints each
//       reply "<success> <has_more> <reply hex>" until its last (!METHOD: sent, its replies
//       never read, as a client that does not wait or a deferred reply; "- -": print "paused"
//       and wait for a line on standard input); then "held" and it stays
//       connected until its standard input ends. "connect ERRNO" (status 3) if the socket
//       refuses it, "bind" (status 4) if the service or a method is not bound, "end" or
//       "violation" (status 1) if the service goes first
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ffmtrace_util.h"
#include "perfetto_ipc.h"

#define PROGRAM "perfetto_ipc_tool"

static void print_hex(const uint8_t* data, size_t size) {
  for (size_t i = 0; i < size; i++) printf("%02x", data[i]);
}

static size_t parse_hex(const char* text, uint8_t* out, size_t capacity) {
  size_t n = strlen(text) / 2;
  if (n > capacity) n = capacity;
  for (size_t i = 0; i < n; i++) {
    unsigned byte;
    sscanf(text + 2 * i, "%2x", &byte);
    out[i] = (uint8_t)byte;
  }
  return n;
}

// ARGS of "call": hex digits, or @FILE for the bytes of FILE (a request too long for a command line).
static size_t load_args(const char* text, uint8_t* out, size_t capacity) {
  if (text[0] != '@') return parse_hex(text, out, capacity);
  FILE* file = fopen(text + 1, "rb");
  if (file == NULL) return 0;
  size_t n = fread(out, 1, capacity, file);
  fclose(file);
  return n;
}

static struct ipc_client client;
static uint8_t frame[IPC_MAX_FRAME];
static uint8_t args[IPC_MAX_FRAME];

int main(int argc, char** argv) {
  if (argc == 4 && strcmp(argv[1], "bind") == 0) {
    size_t n = ipc_encode_bind(frame, sizeof(frame), arg_u64(PROGRAM, "request id", argv[2], UINT64_MAX), argv[3]);
    print_hex(frame, n);
    printf("\n");
    return n == 0;
  }
  if (argc == 7 && strcmp(argv[1], "invoke") == 0) {
    size_t size = parse_hex(argv[5], args, sizeof(args));
    uint64_t request_id = arg_u64(PROGRAM, "request id", argv[2], UINT64_MAX);
    uint32_t service_id = (uint32_t)arg_u64(PROGRAM, "service id", argv[3], UINT32_MAX);
    uint32_t method_id = (uint32_t)arg_u64(PROGRAM, "method id", argv[4], UINT32_MAX);
    int drop_reply = (int)arg_u64(PROGRAM, "drop_reply", argv[6], 1);
    size_t n = ipc_encode_invoke(frame, sizeof(frame), request_id, service_id, method_id, args, size, drop_reply);
    print_hex(frame, n);
    printf("\n");
    return n == 0;
  }
  if (argc == 3 && strcmp(argv[1], "receive") == 0) {
    if (ipc_connect(&client, argv[2]) != 0) {
      perror("perfetto_ipc_tool: connect");
      return 2;
    }
    struct ipc_reply reply;
    int got;
    while ((got = ipc_receive(&client, &reply, -1)) == 1) {
      printf("%d %llu %d %d ", reply.kind, (unsigned long long)reply.request_id, reply.success, reply.has_more);
      print_hex(reply.reply, reply.reply_size);
      printf("\n");
      int fd = ipc_take_fd(&client);
      if (fd >= 0) close(fd);
    }
    printf(got == IPC_HUNG_UP ? "end\n" : "violation\n");
    ipc_close(&client);
    return got == IPC_HUNG_UP ? 0 : 1;
  }
  if (argc >= 6 && argc % 2 == 0 && strcmp(argv[1], "call") == 0) {
    if (ipc_connect(&client, argv[2]) != 0) {
      printf("connect %d\n", errno);
      return 3;
    }
    if (ipc_bind(&client, argv[3]) != 0) {
      printf("bind\n");
      return 4;
    }
    for (int call = 4; call < argc; call += 2) {
      if (strcmp(argv[call], "-") == 0) {
        // A pause: the test lets it go on with a line on standard input.
        printf("paused\n");
        fflush(stdout);
        char c;
        while (read(0, &c, 1) == 1 && c != '\n') {
        }
        continue;
      }
      size_t size = load_args(argv[call + 1], args, sizeof(args));
      int unanswered = argv[call][0] == '!';
      uint64_t id = ipc_invoke(&client, argv[call] + unanswered, args, size, 0);
      if (id == 0) {
        printf("bind\n");
        return 4;
      }
      if (unanswered) continue;
      struct ipc_reply reply;
      int got;
      int last = 0;
      while (!last && (got = ipc_receive(&client, &reply, -1)) == 1) {
        int fd = ipc_take_fd(&client);
        if (fd >= 0) close(fd);
        if (reply.kind != IPC_INVOKE_REPLY || reply.request_id != id) continue;
        printf("%d %d ", reply.success, reply.has_more);
        print_hex(reply.reply, reply.reply_size);
        printf("\n");
        last = !reply.has_more;
      }
      if (!last) {
        printf(got == IPC_HUNG_UP ? "end\n" : "violation\n");
        ipc_close(&client);
        return 1;
      }
    }
    printf("held\n");
    fflush(stdout);
    char sink[256];
    while (read(0, sink, sizeof(sink)) > 0) {
    }
    ipc_close(&client);
    return 0;
  }
  fprintf(stderr, "usage: perfetto_ipc_tool bind|invoke|receive|call ...\n");
  return 2;
}
