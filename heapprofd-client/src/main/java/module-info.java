/**
 * heapprofd's client side: the records a client writes into its SharedRingBuffer and the
 * configuration the service sends it, byte-exact with Perfetto's, and the sampler that
 * decides which allocations are recorded.
 */
module dev.ffmtrace.heapprofd.client {
    requires transitive dev.ffmtrace.shmring;
    requires dev.ffmtrace.protozero;

    exports dev.ffmtrace.heapprofd.client;
    exports dev.ffmtrace.heapprofd.wire;
}
