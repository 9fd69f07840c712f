package dev.ffmtrace.jvm;

/**
 * A thread as JFR recorded it. A reader gives one object per thread constant, so the
 * mapping finds a thread's track by identity.
 *
 * @param javaThreadId the Java thread id, or -1 for a thread that is not a Java thread
 * @param osThreadId the OS thread id, or -1 for a virtual thread
 */
record JfrThread(String javaName, String osName, long javaThreadId, long osThreadId, boolean virtual) {
    /** The name a trace shows: the Java name, else the OS name (either may be null). */
    String displayName() {
        return javaName != null ? javaName : osName;
    }
}
