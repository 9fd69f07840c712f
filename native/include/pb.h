// The protobuf wire format, for every C program here: an encoder into a fixed buffer
// and a bounded decoder. Neither allocates, and neither touches a byte outside its
// buffer: an encoder that runs out of room marks the message failed, and a decoder
// that meets a truncated or malformed field stops with an error.
#ifndef FFMTRACE_PB_H_
#define FFMTRACE_PB_H_

#include <stddef.h>
#include <stdint.h>

enum { PB_VARINT = 0, PB_FIXED64 = 1, PB_BYTES = 2, PB_START_GROUP = 3, PB_FIXED32 = 5 };

// The longest varint: ten 7-bit groups hold 64 bits.
enum { PB_MAX_VARINT = 10 };

// ---- encoding ----

// A message being encoded into a fixed buffer; overflowing marks it failed, and a
// failed message takes no more bytes.
struct pb {
  uint8_t* start;
  uint8_t* at;
  uint8_t* end;
  int failed;
};

void pb_init(struct pb* m, uint8_t* buffer, size_t size);
size_t pb_size(const struct pb* m);

// The wire's pieces, for callers that build what a field helper would not (a bare
// size, a tag without its value, bytes that are not a field).
void pb_put_varint(struct pb* m, uint64_t value);
void pb_put_tag(struct pb* m, uint32_t field, uint32_t wire_type);
void pb_put_raw(struct pb* m, const void* data, size_t size);

void pb_varint(struct pb* m, uint32_t field, uint64_t value);
void pb_bytes(struct pb* m, uint32_t field, const void* data, size_t size);
void pb_string(struct pb* m, uint32_t field, const char* s);

// A submessage as ProtoZero writes one: its tag, a 4-byte size field (a redundant
// varint, so the size need not be known in advance), then its fields. pb_begin returns
// the size field (NULL once failed); pb_end fills it with the bytes written since, or,
// for at most PB_MAX_ONE_BYTE_SIZE bytes, compacts it to one byte as ProtoZero does.
enum { PB_SIZE_FIELD = 4, PB_MAX_ONE_BYTE_SIZE = 127 };
uint8_t* pb_begin(struct pb* m, uint32_t field);
void pb_end(struct pb* m, uint8_t* size_field);
// Writes `size` (under 2^28) as a PB_SIZE_FIELD-byte redundant varint.
void pb_put_size(uint8_t* size_field, uint32_t size);

// ---- decoding ----

struct pb_reader {
  const uint8_t* at;
  const uint8_t* end;
  int error;  // set on a truncated or malformed field; pb_next then returns 0
};

struct pb_field {
  uint32_t id;
  uint32_t type;
  uint64_t value;        // a varint's or fixed field's value
  const uint8_t* data;   // a length-delimited field's bytes, inside the reader's buffer
  size_t size;
};

void pb_reader_init(struct pb_reader* r, const uint8_t* data, size_t size);
// Reads a bare varint of at most PB_MAX_VARINT bytes; 0, or -1 (r->error set) if it
// is truncated or longer.
int pb_read_varint(struct pb_reader* r, uint64_t* value);
// Reads the next field; 0 at the end or on an error (r->error tells which).
int pb_next(struct pb_reader* r, struct pb_field* f);

#endif  // FFMTRACE_PB_H_
