package dev.ffmtrace.tracing.relay;

import dev.ffmtrace.memory.Os;
import dev.ffmtrace.perfetto.protos.SystemInfo;
import dev.ffmtrace.perfetto.protos.Utsname;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.ZoneId;
import java.util.Locale;

/**
 * What this machine says of itself in Perfetto's protocol: its SystemInfo (a service's
 * trace, a relay's InitRelay), its machine id hint (the kernel's boot id, as
 * traced_relay sends it) and its name ({@code PERFETTO_MACHINE_NAME}, else uname's sysname).
 */
public final class ThisMachine {
    private ThisMachine() {
    }

    /** Fills {@code info} with uname, the time zone, the page size and the CPUs, as Perfetto's GetSystemInfo does. */
    public static void describe(SystemInfo info) {
        info.setTimezoneOffMins(ZoneId.systemDefault().getRules().getOffset(Instant.now()).getTotalSeconds() / 60);
        Utsname utsname = info.setUtsname();
        utsname.setSysname(sysname());
        utsname.setVersion(kernelValue("version", ""));
        utsname.setRelease(kernelValue("osrelease", System.getProperty("os.version")));
        utsname.setMachine(kernelValue("arch", machineOf(System.getProperty("os.arch"))));
        info.setPageSize((int) Os.pageSize());
        info.setNumCpus(cpuCount());
    }

    /** The kernel's boot id, the hint traced_relay derives its machine id from; empty where it cannot be read. */
    public static String bootId() {
        return kernelValue("random/boot_id", "");
    }

    /** {@code PERFETTO_MACHINE_NAME}, else uname's sysname, as Perfetto names a machine. */
    public static String name() {
        String fromEnvironment = System.getenv("PERFETTO_MACHINE_NAME");
        return fromEnvironment != null ? fromEnvironment : sysname();
    }

    private static String sysname() {
        return kernelValue("ostype", System.getProperty("os.name"));
    }

    /** What {@code uname(2)} says as {@code name}, from /proc/sys/kernel; {@code fallback} where it cannot be read. */
    private static String kernelValue(String name, String fallback) {
        try {
            // Lines, not readString: a /proc file's size is 0, and some of them read short that way.
            return String.join("\n", Files.readAllLines(Path.of("/proc/sys/kernel", name))).strip();
        } catch (IOException | RuntimeException e) {
            return fallback;
        }
    }

    /** uname's machine for a JVM os.arch: the JVM says amd64 where the kernel says x86_64. */
    private static String machineOf(String osArch) {
        return switch (osArch.toLowerCase(Locale.ROOT)) {
            case "amd64" -> "x86_64";
            case "x86" -> "i686";
            default -> osArch;
        };
    }

    /**
     * The CPUs the system has (the kernel's {@code present} list), as Perfetto reports
     * {@code sysconf(_SC_NPROCESSORS_CONF)}; those the JVM may use where the list cannot be read.
     */
    static int cpuCount() {
        try {
            int count = 0;
            for (String range : Files.readAllLines(Path.of("/sys/devices/system/cpu/present")).getFirst().strip().split(",")) {
                int dash = range.indexOf('-');
                count += dash < 0 ? 1 : Integer.parseInt(range.substring(dash + 1)) - Integer.parseInt(range.substring(0, dash)) + 1;
            }
            return count;
        } catch (IOException | RuntimeException e) {
            return Runtime.getRuntime().availableProcessors();
        }
    }
}
