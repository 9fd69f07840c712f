/**
 * heapprofd's SharedRingBuffer in a memfd mapped twice back to back: writers in any process
 * reserve records under a spinlock in the shared metadata page, one reader takes them in
 * order, byte-for-byte with Perfetto's C++. {@link dev.ffmtrace.shmring.SharedRingBuffer}
 * creates, attaches and uses one; its descriptor class draws the bytes.
 */
package dev.ffmtrace.shmring;
