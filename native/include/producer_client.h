// What the C producers (c_producer.c, stress_producer.c) share of Perfetto's producer
// port, over perfetto_ipc.h: the handshake, the fields of the commands they read, and
// SetupTracing's SMB. Everything read comes from the service and is bounded.
#ifndef FFMTRACE_PRODUCER_CLIENT_H_
#define FFMTRACE_PRODUCER_CLIENT_H_

#include <stddef.h>
#include <stdint.h>

#include "perfetto_ipc.h"
#include "smb_abi.h"

// Producer port messages (protos/perfetto/ipc/producer_port.proto) and DataSourceConfig.
enum {
  CMD_START_DATA_SOURCE = 1,
  CMD_STOP_DATA_SOURCE = 2,
  CMD_SETUP_TRACING = 3,
  CMD_FLUSH = 5,
  CMD_SETUP_DATA_SOURCE = 6,
  STOP_INSTANCE_ID = 1,
  FLUSH_REQUEST_ID = 2,
  REGISTER_WRITER_ID = 1,
  REGISTER_WRITER_TARGET_BUFFER = 2,
  NOTIFY_DATA_SOURCE_ID = 1,
  COMMIT_FLUSH_REQUEST_ID = 3,
  // InitializeConnectionRequest.smb_scraping_mode.
  SMB_SCRAPING_UNSPECIFIED = 0,
  SMB_SCRAPING_ENABLED = 1,
};

struct pc_options {
  const char* program;      // for messages on stderr
  const char* socket_name;  // a path, or @name
  const char* producer_name;
  uint32_t smb_size, page_size;  // hints
  uint32_t scraping;             // SMB_SCRAPING_*
  const char* data_source;       // registered, notifying on stop
};

// As Perfetto's ProducerIPCClientImpl: connects, binds "ProducerPort", initializes the
// connection, opens the command stream (its request id in *stream) and registers the
// data source. 0; 2 if it could not connect; 1 if the service refused or hung up.
int pc_connect(struct ipc_client* c, const struct pc_options* options, uint64_t* stream);

// The instance id, and whether the config names `data_source` and its target buffer,
// of a Setup/StartDataSource; -1 if it does not parse.
int pc_read_instance(const uint8_t* data, size_t size, const char* data_source, uint64_t* instance, int* is_ours,
                     uint32_t* target);

// The last varint field `id` of a message (0 if none); sets *error if it does not parse.
uint64_t pc_read_varint(const uint8_t* data, size_t size, uint32_t id, int* error);

// Maps SetupTracing's SMB from `fd` (closed) into *smb unless *ready (the service keeps
// the first SMB); -1 if its size or page size are not ones a writer can use.
int pc_setup_tracing(struct smb* smb, int* ready, const uint8_t* data, size_t size, int fd);

// A positive decimal that fits in 32 bits; 0, or -1.
int pc_parse_size(const char* text, uint32_t* out);

#endif  // FFMTRACE_PRODUCER_CLIENT_H_
