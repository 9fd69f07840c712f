// What the C producers (c_producer.c, stress_producer.c) share of Perfetto's producer
// port, over perfetto_ipc.h: the handshake, the fields of the commands they read, and
// SetupTracing's SMB. Everything read comes from the service and is bounded.
#ifndef FFMTRACE_PRODUCER_CLIENT_H_
#define FFMTRACE_PRODUCER_CLIENT_H_

#include <stddef.h>
#include <stdint.h>

#include "perfetto_ipc.h"
#include "smb_abi.h"

struct pc_options {
  const char* program;      // for messages on stderr
  const char* socket_name;  // a path, or @name
  const char* producer_name;
  uint32_t smb_size, page_size;  // hints
  uint32_t scraping;             // SMB_SCRAPING_*
  const char* data_source;       // registered, notifying on stop
  // A ProtoVM program (a serialised VmProgram) registered with it, or NULL.
  const uint8_t* protovm_program;
  size_t protovm_program_size;  // at most PC_PROTOVM_PROGRAM_MAX
};

// The largest ProtoVM program pc_connect registers (IPC frames carry 128 KiB).
#define PC_PROTOVM_PROGRAM_MAX (64 * 1024)

// Reads the ProtoVM program in `path` into a new buffer; 0, or -1 (with a message on stderr)
// if it cannot be read or holds more than PC_PROTOVM_PROGRAM_MAX bytes.
int pc_read_protovm_program(const char* program, const char* path, uint8_t** data, size_t* size);

// As Perfetto's ProducerIPCClientImpl: connects, binds "ProducerPort", initializes the
// connection, opens the command stream (its request id in *stream) and registers the
// data source (with its ProtoVM program, if any). 0; 2 if it could not connect; 1 if the
// service refused or hung up.
int pc_connect(struct ipc_client* c, const struct pc_options* options, uint64_t* stream);

// What a producer does with the service's commands, for pc_handle_commands. The
// dispatcher maps SetupTracing's SMB itself and keeps SetupDataSource's target buffer:
// Perfetto's service sends the config with the start too, and the setup's is the fallback.
struct pc_commands {
  const char* data_source;  // the one data source the producer serves
  struct ipc_client* ipc;   // where SetupTracing's fd arrived
  struct smb* smb;
  int* smb_ready;
  void* producer;  // passed to the callbacks
  // Start of an instance of data_source, into `target`; -1 breaks the protocol.
  int (*start)(void* producer, uint64_t instance, uint32_t target);
  // Stop of an instance, which may be another data source's: the callback answers it.
  void (*stop)(void* producer, uint64_t instance);
  // A flush: every one is answered, one for instances that are not the producer's too.
  void (*flush)(void* producer, uint64_t request_id);
  uint64_t setup_instance;  // the dispatcher's own: the last SetupDataSource of data_source
  uint32_t setup_target;
};

// Handles one GetAsyncCommand reply; -1 if it breaks the protocol. ClearIncrementalState
// is not asked of a data source that does not handle it, and is ignored.
int pc_handle_commands(struct pc_commands* c, const uint8_t* data, size_t size);

// Sends `method` with `args` unless their encoding failed; 0, or -1 if nothing was sent
// (the connection is gone or the method unknown: the next receive ends the session).
int pc_invoke(struct ipc_client* c, const char* method, const struct pb* args, int drop_reply);
// RegisterTraceWriter: writer `writer_id` writes into buffer `target` (no reply wanted).
int pc_register_writer(struct ipc_client* c, uint32_t writer_id, uint32_t target);
// NotifyDataSourceStopped for instance `instance`.
int pc_notify_stopped(struct ipc_client* c, uint64_t instance);
// What pc_serve_once saw.
enum { PC_GO_ON = 0, PC_ENDED = 1, PC_FAILED = 2 };
// Waits up to `timeout_ms` for one frame from the service on c->ipc and handles it: a
// reply on the command stream `stream` goes to pc_handle_commands; frames of kinds a
// producer does not know are ignored, as Perfetto's client ignores them. PC_GO_ON while
// the connection goes on (a frame handled, or none came); PC_ENDED if the service closed
// the connection or the stream; PC_FAILED, with a message on stderr after `program`, if
// it broke the protocol, sent a command the producer cannot use or refused a request.
int pc_serve_once(struct pc_commands* c, uint64_t stream, int timeout_ms, const char* program);
// A positive decimal that fits in 32 bits; 0, or -1.
int pc_parse_size(const char* text, uint32_t* out);

#endif  // FFMTRACE_PRODUCER_CLIENT_H_
