/**
 * heapprofd's client for Java: the {@link dev.ffmtrace.heapprofd.client.Sampler} that
 * decides which allocations a client records. The connection to the service, custom heaps
 * and the FFM arena wrapper come next (see the README).
 */
package dev.ffmtrace.heapprofd.client;
