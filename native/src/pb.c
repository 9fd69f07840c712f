#include "pb.h"

#include <string.h>

// ---- encoding ----

void pb_init(struct pb* m, uint8_t* buffer, size_t size) {
  m->start = m->at = buffer;
  m->end = buffer + size;
  m->failed = 0;
}

size_t pb_size(const struct pb* m) { return (size_t)(m->at - m->start); }

void pb_put_varint(struct pb* m, uint64_t value) {
  if (m->failed) return;
  do {
    if (m->at == m->end) {
      m->failed = 1;
      return;
    }
    uint8_t byte = value & 0x7f;
    value >>= 7;
    *m->at++ = value != 0 ? (uint8_t)(byte | 0x80) : byte;
  } while (value != 0);
}

void pb_put_tag(struct pb* m, uint32_t field, uint32_t wire_type) {
  pb_put_varint(m, ((uint64_t)field << 3) | wire_type);
}

void pb_put_raw(struct pb* m, const void* data, size_t size) {
  if (m->failed || (size_t)(m->end - m->at) < size) {
    m->failed = 1;
    return;
  }
  if (size > 0) memcpy(m->at, data, size);
  m->at += size;
}

void pb_varint(struct pb* m, uint32_t field, uint64_t value) {
  pb_put_tag(m, field, PB_VARINT);
  pb_put_varint(m, value);
}

void pb_bytes(struct pb* m, uint32_t field, const void* data, size_t size) {
  pb_put_tag(m, field, PB_BYTES);
  pb_put_varint(m, size);
  pb_put_raw(m, data, size);
}

void pb_string(struct pb* m, uint32_t field, const char* s) { pb_bytes(m, field, s, strlen(s)); }

uint8_t* pb_begin(struct pb* m, uint32_t field) {
  pb_put_tag(m, field, PB_BYTES);
  if (m->failed || m->end - m->at < PB_SIZE_FIELD) {
    m->failed = 1;
    return NULL;
  }
  uint8_t* size_field = m->at;
  m->at += PB_SIZE_FIELD;
  return size_field;
}

void pb_put_size(uint8_t* size_field, uint32_t size) {
  for (int i = 0; i < PB_SIZE_FIELD; i++) {
    uint8_t byte = (uint8_t)((size >> (7 * i)) & 0x7f);
    size_field[i] = i < PB_SIZE_FIELD - 1 ? (uint8_t)(byte | 0x80) : byte;
  }
}

void pb_end(struct pb* m, uint8_t* size_field) {
  if (size_field == NULL || m->failed) return;
  uint32_t size = (uint32_t)(m->at - size_field - PB_SIZE_FIELD);
  if (size <= PB_MAX_ONE_BYTE_SIZE) {
    // ProtoZero's compaction: a short message gets a 1-byte size, its bytes moved back.
    memmove(size_field + 1, size_field + PB_SIZE_FIELD, size);
    size_field[0] = (uint8_t)size;
    m->at -= PB_SIZE_FIELD - 1;
  } else {
    pb_put_size(size_field, size);
  }
}

// ---- decoding ----

void pb_reader_init(struct pb_reader* r, const uint8_t* data, size_t size) {
  r->at = data;
  r->end = data + size;
  r->error = 0;
}

int pb_read_varint(struct pb_reader* r, uint64_t* value) {
  uint64_t v = 0;
  for (int i = 0; i < PB_MAX_VARINT && r->at != r->end; i++) {
    uint8_t byte = *r->at++;
    v |= (uint64_t)(byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) {
      *value = v;
      return 0;
    }
  }
  r->error = 1;
  return -1;
}

static uint64_t read_le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

int pb_next(struct pb_reader* r, struct pb_field* f) {
  if (r->error || r->at == r->end) return 0;
  uint64_t tag;
  if (pb_read_varint(r, &tag) != 0) return 0;
  if ((tag >> 3) == 0 || (tag >> 3) > 0x1fffffff) {
    r->error = 1;
    return 0;
  }
  f->id = (uint32_t)(tag >> 3);
  f->type = (uint32_t)(tag & 7);
  f->value = 0;
  f->data = NULL;
  f->size = 0;
  switch (f->type) {
    case PB_VARINT:
      pb_read_varint(r, &f->value);
      break;
    case PB_FIXED64:
    case PB_FIXED32: {
      int n = f->type == PB_FIXED64 ? 8 : 4;
      if ((size_t)(r->end - r->at) < (size_t)n) {
        r->error = 1;
        break;
      }
      f->value = read_le(r->at, n);
      r->at += n;
      break;
    }
    case PB_BYTES:
      if (pb_read_varint(r, &f->value) != 0) break;
      if (f->value > (uint64_t)(r->end - r->at)) {
        r->error = 1;
        break;
      }
      f->data = r->at;
      f->size = (size_t)f->value;
      r->at += f->size;
      break;
    default:
      // Groups and reserved wire types: Perfetto's messages have none.
      r->error = 1;
  }
  return !r->error;
}
