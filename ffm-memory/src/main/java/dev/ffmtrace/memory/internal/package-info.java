/**
 * The project's only native bindings: every libc function it calls, as FFM downcalls with
 * errno captured, and errno names. Not exported: other modules reach the OS through
 * {@code dev.ffmtrace.memory}, so only this module needs native access.
 */
package dev.ffmtrace.memory.internal;
