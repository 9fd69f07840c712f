/**
 * The only module that talks to the OS: sealed memfd files, shared and double ("ring")
 * mappings, Unix sockets with fd passing and peer credentials, and the memory orderings
 * ({@link dev.ffmtrace.memory.AtomicSegment}) every shared layout uses. Grant it native
 * access ({@code --enable-native-access=dev.ffmtrace.memory}); no other module needs it.
 */
module dev.ffmtrace.memory {
    exports dev.ffmtrace.memory;
}
