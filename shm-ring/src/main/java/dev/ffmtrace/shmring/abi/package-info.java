/**
 * The SharedRingBuffer's bytes: the metadata page (spinlock, positions, stats) and the
 * record header, byte-exact with Perfetto's C++. Not exported: readers and writers use
 * {@code SharedRingBuffer}; only tests and the stress suite look at the layout itself.
 */
package dev.ffmtrace.shmring.abi;
