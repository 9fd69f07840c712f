// The field numbers (and the enum values) of Perfetto's trace protos that the C
// producers write (protos/perfetto/trace/): TracePacket and what it nests. The packets
// must parse as Perfetto's, so each number is defined here once.
#ifndef FFMTRACE_PERFETTO_TRACE_FIELDS_H_
#define FFMTRACE_PERFETTO_TRACE_FIELDS_H_

// TracePacket.
enum {
  PACKET_TRUSTED_UID = 3,
  PACKET_TIMESTAMP = 8,
  PACKET_TRUSTED_PACKET_SEQUENCE_ID = 10,
  PACKET_TRACK_EVENT = 11,
  PACKET_SEQUENCE_FLAGS = 13,
  PACKET_TRACE_CONFIG = 33,
  PACKET_TRACE_STATS = 35,
  PACKET_SYNCHRONIZATION_MARKER = 36,
  PACKET_PREVIOUS_PACKET_DROPPED = 42,
  PACKET_COMPRESSED_PACKETS = 50,
  PACKET_TRACK_DESCRIPTOR = 60,
  PACKET_SERVICE_EVENT = 69,
  PACKET_TRUSTED_PID = 79,
  PACKET_FIRST_PACKET_ON_SEQUENCE = 87,
  PACKET_MACHINE_ID = 98,
  PACKET_TRACE_PROVENANCE = 124,
  PACKET_PROTOVMS = 125,
  PACKET_FOR_TESTING = 900,
  // TracePacket.SequenceFlags.
  SEQ_INCREMENTAL_STATE_CLEARED = 1,
  // previous_packet_dropped's DataLossReason bits, as the Java TraceWriter reports a loss.
  LOSS_PRESENT = 1,
  LOSS_OVERWRITE = 64,
  LOSS_SMB_FULL = 256,
};

// TrackEvent and its Type.
enum {
  TRACK_EVENT_DEBUG_ANNOTATIONS = 4,
  TRACK_EVENT_TYPE = 9,
  TRACK_EVENT_TRACK_UUID = 11,
  TRACK_EVENT_CATEGORIES = 22,
  TRACK_EVENT_NAME = 23,
  TRACK_EVENT_COUNTER_VALUE = 30,
  TRACK_EVENT_TYPE_SLICE_BEGIN = 1,
  TRACK_EVENT_TYPE_SLICE_END = 2,
  TRACK_EVENT_TYPE_INSTANT = 3,
  TRACK_EVENT_TYPE_COUNTER = 4,
};

// DebugAnnotation.
enum {
  ANNOTATION_STRING_VALUE = 6,
  ANNOTATION_NAME = 10,
};

// TrackDescriptor and the descriptors it nests.
enum {
  TRACK_UUID = 1,
  TRACK_NAME = 2,
  TRACK_PROCESS = 3,
  TRACK_THREAD = 4,
  TRACK_PARENT_UUID = 5,
  TRACK_COUNTER = 8,
  PROCESS_PID = 1,
  PROCESS_NAME = 6,
  THREAD_PID = 1,
  THREAD_TID = 2,
  THREAD_NAME = 5,
  COUNTER_UNIT = 3,
  UNIT_TIME_NS = 1,
};

// TestEvent (TracePacket.for_testing) and its TestPayload.
enum {
  TEST_EVENT_STR = 1,
  TEST_EVENT_SEQ_VALUE = 2,
  TEST_EVENT_COUNTER = 3,
  TEST_EVENT_IS_LAST = 4,
  TEST_EVENT_PAYLOAD = 5,
  TEST_PAYLOAD_STR = 1,
  TEST_PAYLOAD_NESTED = 2,
};

// What only the service writes: TraceStats and TracingServiceEvent.
enum {
  TRACE_STATS_INVALID_PACKETS = 10,
  SERVICE_EVENT_TRACING_STARTED = 2,
};

#endif  // FFMTRACE_PERFETTO_TRACE_FIELDS_H_
