/** heapprofd's SharedRingBuffer: a lock-protected single-reader ring of records in a memfd. */
module dev.ffmtrace.shmring {
    requires transitive dev.ffmtrace.memory;

    exports dev.ffmtrace.shmring;
}
