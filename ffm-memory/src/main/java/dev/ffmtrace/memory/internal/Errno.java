package dev.ffmtrace.memory.internal;

/** Symbolic names of Linux errno values (the asm-generic numbering, shared by x86-64 and AArch64). */
public final class Errno {
    private static final String[] NAMES = {
        null, "EPERM", "ENOENT", "ESRCH", "EINTR", "EIO", "ENXIO", "E2BIG", "ENOEXEC", "EBADF",
        "ECHILD", "EAGAIN", "ENOMEM", "EACCES", "EFAULT", "ENOTBLK", "EBUSY", "EEXIST", "EXDEV", "ENODEV",
        "ENOTDIR", "EISDIR", "EINVAL", "ENFILE", "EMFILE", "ENOTTY", "ETXTBSY", "EFBIG", "ENOSPC", "ESPIPE",
        "EROFS", "EMLINK", "EPIPE", "EDOM", "ERANGE", "EDEADLK", "ENAMETOOLONG", "ENOLCK", "ENOSYS", "ENOTEMPTY",
        "ELOOP", null, "ENOMSG", "EIDRM",
    };

    private Errno() {
    }

    public static String name(int errno) {
        if (errno > 0 && errno < NAMES.length && NAMES[errno] != null) {
            return NAMES[errno];
        }
        return switch (errno) {
            case 61 -> "ENODATA";
            case 75 -> "EOVERFLOW";
            case 88 -> "ENOTSOCK";
            case 90 -> "EMSGSIZE";
            case 95 -> "EOPNOTSUPP";
            case 97 -> "EAFNOSUPPORT";
            case 98 -> "EADDRINUSE";
            case 99 -> "EADDRNOTAVAIL";
            case 103 -> "ECONNABORTED";
            case 104 -> "ECONNRESET";
            case 105 -> "ENOBUFS";
            case 106 -> "EISCONN";
            case 107 -> "ENOTCONN";
            case 110 -> "ETIMEDOUT";
            case 111 -> "ECONNREFUSED";
            default -> "errno " + errno;
        };
    }
}
