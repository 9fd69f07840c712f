#define _GNU_SOURCE
#include "producer_client.h"
#include "ffmtrace_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int pc_connect(struct ipc_client* c, const struct pc_options* o, uint64_t* stream) {
  if (ipc_connect(c, o->socket_name) != 0) {
    fprintf(stderr, "%s: cannot connect to %s: %s\n", o->program, o->socket_name, strerror(errno));
    return 2;
  }
  if (ipc_bind(c, "ProducerPort") != 0) {
    fprintf(stderr, "%s: %s did not bind ProducerPort\n", o->program, o->socket_name);
    return 1;
  }
  uint8_t buffer[256];
  struct pb request;
  pb_init(&request, buffer, sizeof(buffer));
  pb_varint(&request, INIT_PAGE_SIZE_HINT, o->page_size);
  pb_varint(&request, INIT_SIZE_HINT, o->smb_size);
  pb_string(&request, INIT_PRODUCER_NAME, o->producer_name);
  if (o->scraping != SMB_SCRAPING_UNSPECIFIED) pb_varint(&request, INIT_SMB_SCRAPING_MODE, o->scraping);
  int failed = request.failed || ipc_invoke(c, "InitializeConnection", request.start, pb_size(&request), 0) == 0;
  *stream = ipc_invoke(c, "GetAsyncCommand", NULL, 0, 0);
  size_t program_size = o->protovm_program != NULL ? o->protovm_program_size : 0;
  uint8_t* registration = program_size <= PC_PROTOVM_PROGRAM_MAX ? malloc(sizeof(buffer) + program_size) : NULL;
  if (registration == NULL) {
    fprintf(stderr, "%s: no memory for the RegisterDataSource request\n", o->program);
    return 1;
  }
  pb_init(&request, registration, sizeof(buffer) + program_size);
  uint8_t* descriptor = pb_begin(&request, REGISTER_DESCRIPTOR);
  pb_string(&request, DESCRIPTOR_NAME, o->data_source);
  pb_varint(&request, DESCRIPTOR_WILL_NOTIFY_ON_STOP, 1);
  if (o->protovm_program != NULL) pb_bytes(&request, DESCRIPTOR_PROTOVM_PROGRAM, o->protovm_program, program_size);
  pb_end(&request, descriptor);
  failed |= request.failed || ipc_invoke(c, "RegisterDataSource", request.start, pb_size(&request), 0) == 0;
  free(registration);
  if (*stream == 0 || failed) {
    fprintf(stderr, "%s: %s hung up or lacks the producer port's methods\n", o->program, o->socket_name);
    return 1;
  }
  return 0;
}

int pc_read_protovm_program(const char* program, const char* path, uint8_t** data, size_t* size) {
  FILE* file = fopen(path, "rb");
  if (file == NULL) {
    fprintf(stderr, "%s: cannot open %s: %s\n", program, path, strerror(errno));
    return -1;
  }
  // One byte more than allowed tells a program that is too long from one that fits.
  uint8_t* bytes = malloc(PC_PROTOVM_PROGRAM_MAX + 1);
  size_t read = bytes != NULL ? fread(bytes, 1, PC_PROTOVM_PROGRAM_MAX + 1, file) : 0;
  int failed = bytes == NULL || ferror(file);
  fclose(file);
  if (failed || read > PC_PROTOVM_PROGRAM_MAX) {
    if (failed) {
      fprintf(stderr, "%s: cannot read %s\n", program, path);
    } else {
      fprintf(stderr, "%s: %s holds more than %d bytes\n", program, path, PC_PROTOVM_PROGRAM_MAX);
    }
    free(bytes);
    return -1;
  }
  *data = bytes;
  *size = read;
  return 0;
}

// The instance id, and whether the config names `data_source` and its target buffer,
// of a Setup/StartDataSource; -1 if it does not parse.
static int read_instance(const uint8_t* data, size_t size, const char* data_source, uint64_t* instance, int* is_ours,
                         uint32_t* target) {
  struct pb_reader r, c;
  struct pb_field f, g;
  size_t name_size = strlen(data_source);
  *instance = 0;
  *is_ours = 0;
  *target = 0;
  pb_reader_init(&r, data, size);
  while (pb_next(&r, &f)) {
    if (f.id == START_INSTANCE_ID && f.type == PB_VARINT) *instance = f.value;
    if (f.id != START_CONFIG || f.type != PB_BYTES) continue;
    pb_reader_init(&c, f.data, f.size);
    while (pb_next(&c, &g)) {
      if (g.id == CONFIG_NAME && g.type == PB_BYTES) {
        *is_ours = g.size == name_size && memcmp(g.data, data_source, g.size) == 0;
      }
      if (g.id == CONFIG_TARGET_BUFFER && g.type == PB_VARINT) *target = (uint32_t)g.value;
    }
    if (c.error) return -1;
  }
  return r.error ? -1 : 0;
}

// The last varint field `id` of a message (0 if none); sets *error if it does not parse.
static uint64_t read_varint(const uint8_t* data, size_t size, uint32_t id, int* error) {
  struct pb_reader r;
  struct pb_field f;
  uint64_t value = 0;
  pb_reader_init(&r, data, size);
  while (pb_next(&r, &f)) {
    if (f.id == id && f.type == PB_VARINT) value = f.value;
  }
  if (r.error) *error = 1;
  return value;
}

static int map_smb(struct smb* smb, int* ready, const uint8_t* data, size_t size, int fd) {
  int error = 0;
  uint64_t page_kb = read_varint(data, size, SETUP_TRACING_PAGE_SIZE_KB, &error);
  if (*ready) return 0;
  struct stat st;
  if (error || fd < 0 || fstat(fd, &st) != 0 || page_kb == 0 || page_kb > 64 || st.st_size <= 0) return -1;
  size_t bytes = (size_t)st.st_size;
  uint32_t page_size = (uint32_t)page_kb * 1024;
  void* base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) return -1;
  if (smb_init(smb, base, bytes, page_size) != 0) {
    munmap(base, bytes);
    return -1;
  }
  *ready = 1;
  return 0;
}

// Maps SetupTracing's SMB from `fd` (closed) into *smb unless *ready (the service keeps
// the first SMB); -1 if its size or page size are not ones a writer can use.
static int setup_tracing(struct smb* smb, int* ready, const uint8_t* data, size_t size, int fd) {
  int status = map_smb(smb, ready, data, size, fd);
  if (fd >= 0) close(fd);
  return status;
}

int pc_handle_commands(struct pc_commands* c, const uint8_t* data, size_t size) {
  struct pb_reader r;
  struct pb_field f;
  int error = 0;
  pb_reader_init(&r, data, size);
  while (pb_next(&r, &f)) {
    if (f.type != PB_BYTES) continue;
    uint64_t instance;
    uint32_t target;
    int ours;
    switch (f.id) {
      case CMD_SETUP_TRACING:
        if (setup_tracing(c->smb, c->smb_ready, f.data, f.size, ipc_take_fd(c->ipc)) != 0) error = 1;
        break;
      case CMD_SETUP_DATA_SOURCE:
        if (read_instance(f.data, f.size, c->data_source, &instance, &ours, &target) != 0) {
          error = 1;
        } else if (ours) {
          c->setup_instance = instance;
          c->setup_target = target;
        }
        break;
      case CMD_START_DATA_SOURCE:
        if (read_instance(f.data, f.size, c->data_source, &instance, &ours, &target) != 0) {
          error = 1;
        } else if (ours) {
          if (instance == c->setup_instance && target == 0) target = c->setup_target;
          if (c->start(c->producer, instance, target) != 0) error = 1;
        }
        break;
      case CMD_STOP_DATA_SOURCE:
        instance = read_varint(f.data, f.size, STOP_INSTANCE_ID, &error);
        c->stop(c->producer, instance);
        break;
      case CMD_FLUSH:
        c->flush(c->producer, read_varint(f.data, f.size, FLUSH_REQUEST_ID, &error));
        break;
      default:
        break;
    }
  }
  return r.error || error ? -1 : 0;
}

int pc_invoke(struct ipc_client* c, const char* method, const struct pb* args, int drop_reply) {
  return args->failed || ipc_invoke(c, method, args->start, pb_size(args), drop_reply) == 0 ? -1 : 0;
}

int pc_register_writer(struct ipc_client* c, uint32_t writer_id, uint32_t target) {
  uint8_t buffer[32];
  struct pb request;
  pb_init(&request, buffer, sizeof(buffer));
  pb_varint(&request, REGISTER_WRITER_ID, writer_id);
  pb_varint(&request, REGISTER_WRITER_TARGET_BUFFER, target);
  return pc_invoke(c, "RegisterTraceWriter", &request, 1);
}

int pc_notify_stopped(struct ipc_client* c, uint64_t instance) {
  uint8_t buffer[32];
  struct pb request;
  pb_init(&request, buffer, sizeof(buffer));
  pb_varint(&request, NOTIFY_DATA_SOURCE_ID, instance);
  return pc_invoke(c, "NotifyDataSourceStopped", &request, 0);
}

int pc_serve_once(struct pc_commands* c, uint64_t stream, int timeout_ms, const char* program) {
  struct ipc_reply reply;
  int got = ipc_receive(c->ipc, &reply, timeout_ms);
  if (got == IPC_VIOLATION) {
    fprintf(stderr, "%s: the service sent a malformed frame\n", program);
    return PC_FAILED;
  }
  if (got < 0) return PC_ENDED;
  if (got == 0) return PC_GO_ON;
  if (reply.request_id == stream && reply.kind == IPC_INVOKE_REPLY && reply.success) {
    if (pc_handle_commands(c, reply.reply, reply.reply_size) != 0) {
      fprintf(stderr, "%s: the service sent a command it cannot use\n", program);
      return PC_FAILED;
    }
    return reply.has_more ? PC_GO_ON : PC_ENDED;
  }
  if ((reply.kind == IPC_INVOKE_REPLY && !reply.success) || reply.kind == IPC_REQUEST_ERROR) {
    fprintf(stderr, "%s: the service refused request %llu\n", program, (unsigned long long)reply.request_id);
    return PC_FAILED;
  }
  return PC_GO_ON;
}

int pc_parse_size(const char* text, uint32_t* out) {
  uint32_t value;
  if (parse_u32(text, UINT32_MAX, &value) != 0 || value == 0) return -1;
  *out = value;
  return 0;
}
