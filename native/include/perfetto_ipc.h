// A client of Perfetto's IPC, from C: the wire (4-byte little-endian length + IPCFrame,
// fds as SCM_RIGHTS; frames encoded and decoded with pb.h) and the client side of
// BindService / InvokeMethod. Single-threaded and blocking, except ipc_receive's
// timeout; for the project's C producers (c_producer.c).
//
// What the service sends is untrusted: a frame longer than IPC_MAX_FRAME, a frame that
// does not parse, or more fds than expected end the connection (ipc_receive returns -1),
// never the program.
#ifndef FFMTRACE_PERFETTO_IPC_H_
#define FFMTRACE_PERFETTO_IPC_H_

#include <stddef.h>
#include <stdint.h>

#include "pb.h"

enum {
  // Perfetto's kIPCBufferSize: no frame, with its length prefix, is larger.
  IPC_MAX_FRAME = 128 * 1024,
  IPC_MAX_METHODS = 32,
  IPC_MAX_METHOD_NAME = 64,
};

// IPCFrame's fields (protos/perfetto/ipc/wire_protocol.proto).
enum {
  IPC_FRAME_REQUEST_ID = 2,
  IPC_FRAME_BIND_SERVICE = 3,
  IPC_FRAME_BIND_SERVICE_REPLY = 4,
  IPC_FRAME_INVOKE_METHOD = 5,
  IPC_FRAME_INVOKE_METHOD_REPLY = 6,
  IPC_FRAME_REQUEST_ERROR = 7,
  IPC_BIND_SERVICE_NAME = 1,
  IPC_BIND_REPLY_SUCCESS = 1,
  IPC_BIND_REPLY_SERVICE_ID = 2,
  IPC_BIND_REPLY_METHODS = 3,
  IPC_METHOD_INFO_ID = 1,
  IPC_METHOD_INFO_NAME = 2,
  IPC_INVOKE_SERVICE_ID = 1,
  IPC_INVOKE_METHOD_ID = 2,
  IPC_INVOKE_ARGS = 3,
  IPC_INVOKE_DROP_REPLY = 4,
  IPC_REPLY_SUCCESS = 1,
  IPC_REPLY_HAS_MORE = 2,
  IPC_REPLY_PROTO = 3,
};

// ProducerPort's messages (protos/perfetto/ipc/producer_port.proto), the
// DataSourceDescriptor and DataSourceConfig they carry, and CommitDataRequest
// (protos/perfetto/common/commit_data_request.proto).
enum {
  // InitializeConnectionRequest, and its smb_scraping_mode's values.
  INIT_PAGE_SIZE_HINT = 1,
  INIT_SIZE_HINT = 2,
  INIT_PRODUCER_NAME = 3,
  INIT_SMB_SCRAPING_MODE = 4,
  SMB_SCRAPING_UNSPECIFIED = 0,
  SMB_SCRAPING_ENABLED = 1,
  // RegisterDataSourceRequest and DataSourceDescriptor.
  REGISTER_DESCRIPTOR = 1,
  DESCRIPTOR_NAME = 1,
  DESCRIPTOR_WILL_NOTIFY_ON_STOP = 2,
  DESCRIPTOR_PROTOVM_PROGRAM = 10,
  // RegisterTraceWriterRequest, NotifyDataSourceStarted/StoppedRequest.
  REGISTER_WRITER_ID = 1,
  REGISTER_WRITER_TARGET_BUFFER = 2,
  NOTIFY_DATA_SOURCE_ID = 1,
  // GetAsyncCommandResponse's commands, and the fields of theirs the producers read.
  CMD_START_DATA_SOURCE = 1,
  CMD_STOP_DATA_SOURCE = 2,
  CMD_SETUP_TRACING = 3,
  CMD_FLUSH = 5,
  CMD_SETUP_DATA_SOURCE = 6,
  START_INSTANCE_ID = 1,
  START_CONFIG = 2,
  STOP_INSTANCE_ID = 1,
  FLUSH_REQUEST_ID = 2,
  SETUP_TRACING_PAGE_SIZE_KB = 1,
  // DataSourceConfig.
  CONFIG_NAME = 1,
  CONFIG_TARGET_BUFFER = 2,
  // CommitDataRequest, its ChunksToMove, ChunkToPatch and Patch.
  COMMIT_CHUNKS_TO_MOVE = 1,
  COMMIT_CHUNKS_TO_PATCH = 2,
  COMMIT_FLUSH_REQUEST_ID = 3,
  MOVE_PAGE = 1,
  MOVE_CHUNK = 2,
  MOVE_TARGET_BUFFER = 3,
  PATCH_TARGET_BUFFER = 1,
  PATCH_WRITER_ID = 2,
  PATCH_CHUNK_ID = 3,
  PATCH_PATCHES = 4,
  PATCH_HAS_MORE = 5,
  PATCH_OFFSET = 1,
  PATCH_DATA = 2,
};

// ---- the client ----

struct ipc_method {
  uint32_t id;
  char name[IPC_MAX_METHOD_NAME];
};

struct ipc_client {
  int sock;
  uint32_t service_id;
  struct ipc_method methods[IPC_MAX_METHODS];
  int method_count;
  uint64_t next_request_id;
  uint8_t rx[IPC_MAX_FRAME];
  size_t rx_used;      // bytes received
  size_t rx_consumed;  // bytes of the frame last returned, dropped on the next receive
  int fd;              // the last fd received and not yet taken, or -1
};

enum ipc_kind { IPC_BIND_REPLY = 1, IPC_INVOKE_REPLY, IPC_REQUEST_ERROR, IPC_OTHER };

// A frame from the service. reply/reply_size point into the client's buffer and are
// valid until the next ipc_receive.
struct ipc_reply {
  uint64_t request_id;
  enum ipc_kind kind;
  int success;
  int has_more;
  const uint8_t* reply;
  size_t reply_size;
};

// Connects to a Unix stream socket: a filesystem path, or @name for the abstract
// namespace. 0, or -1 with errno set.
int ipc_connect(struct ipc_client* c, const char* name);
void ipc_close(struct ipc_client* c);

// Binds `service` and learns its methods' ids by name; 0, or -1 if the service refused
// or the connection failed.
int ipc_bind(struct ipc_client* c, const char* service);

// Invokes `method` (by name, as bound) with serialized arguments; returns the request's
// id, or 0 if the method is unknown or the frame could not be sent.
uint64_t ipc_invoke(struct ipc_client* c, const char* method, const uint8_t* args, size_t size, int drop_reply);

// Encodes an InvokeMethod frame, length prefix included, into `out`; returns its size,
// or 0 if it does not fit. The bytes ipc_invoke sends.
size_t ipc_encode_invoke(uint8_t* out, size_t capacity, uint64_t request_id, uint32_t service_id,
                         uint32_t method_id, const uint8_t* args, size_t size, int drop_reply);

// Encodes a BindService frame, length prefix included; its size, or 0 if it does not fit.
size_t ipc_encode_bind(uint8_t* out, size_t capacity, uint64_t request_id, const char* service);

enum { IPC_HUNG_UP = -1, IPC_VIOLATION = -2 };

// Waits up to timeout_ms (-1: no limit) for a frame. 1 with *out filled, 0 on timeout,
// IPC_HUNG_UP if the connection closed, IPC_VIOLATION if the service broke the protocol
// (an oversized or malformed frame, more than one fd at once): the caller then closes.
int ipc_receive(struct ipc_client* c, struct ipc_reply* out, int timeout_ms);

// The fd that came with the frames received so far (the last one), now the caller's to
// close; -1 if none. A reply that carries one (SetupTracing's SMB) takes it.
int ipc_take_fd(struct ipc_client* c);

#endif  // FFMTRACE_PERFETTO_IPC_H_
