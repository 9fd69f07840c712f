package dev.ffmtrace.memory.internal;

import dev.ffmtrace.memory.NativeException;
import java.lang.foreign.AddressLayout;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * Every libc function ffmtrace calls, and the only {@link Linker} downcalls in the
 * project.
 *
 * <p>Each wrapper returns the call's result or throws a {@link NativeException} naming
 * the call, the errno and its message; errno is captured by the linker
 * ({@code captureCallState}), so nothing the JVM does between the call and the check
 * can overwrite it. The capture buffer is per thread and allocated once, which keeps
 * the hot calls ({@link #send}) free of allocation.
 *
 * <p>Constants and struct layouts are Linux's (x86-64 and AArch64 share them, except
 * {@code struct stat}, which is chosen per architecture).
 *
 * <p>Over 800 lines by design: it is the project's one binding point to the OS
 * (CONTRIBUTING's rule), so every downcall, its errno handling and the constants and
 * struct offsets of the Linux ABI it speaks stand here and nowhere else; split, the ABI
 * would be spread over classes that each link a few calls. The size is many small
 * pieces, not one large one: thirty bindings of 3 to 23 lines each (call, errno
 * check, EINTR retry where the call is one to retry), each linked lazily through a holder
 * class of its own, since linking costs milliseconds per handle and most processes call
 * a few. What is not a binding lives elsewhere: errno names in {@link Errno}, addresses
 * and sockets in {@code dev.ffmtrace.memory}'s classes.
 */
public final class Native {
    // memfd_create(2) and fcntl(2) seals
    public static final int MFD_CLOEXEC = 0x1;
    public static final int MFD_ALLOW_SEALING = 0x2;
    public static final int F_ADD_SEALS = 1033;
    public static final int F_GET_SEALS = 1034;
    public static final int F_SEAL_SEAL = 0x1;
    public static final int F_SEAL_SHRINK = 0x2;
    public static final int F_SEAL_GROW = 0x4;
    public static final int F_SEAL_WRITE = 0x8;

    // open(2)
    public static final int O_RDONLY = 0x0;
    public static final int O_WRONLY = 0x1;
    public static final int O_RDWR = 0x2;
    public static final int O_CREAT = 0x40;
    public static final int O_EXCL = 0x80;
    public static final int O_CLOEXEC = 0x80000;
    public static final int F_DUPFD_CLOEXEC = 1030;

    // mmap(2)
    public static final int PROT_NONE = 0x0;
    public static final int PROT_READ = 0x1;
    public static final int PROT_WRITE = 0x2;
    public static final int MAP_SHARED = 0x1;
    public static final int MAP_PRIVATE = 0x2;
    public static final int MAP_FIXED = 0x10;
    public static final int MAP_ANONYMOUS = 0x20;
    public static final int MAP_NORESERVE = 0x4000;

    // stat(2) file types
    public static final int S_IFMT = 0xF000;
    public static final int S_IFREG = 0x8000;
    public static final int S_IFSOCK = 0xC000;

    // sockets
    public static final int AF_UNIX = 1;
    public static final int AF_INET = 2;
    public static final int AF_INET6 = 10;
    public static final int IPPROTO_TCP = 6;
    public static final int TCP_NODELAY = 1;
    public static final int SO_REUSEADDR = 2;
    public static final int SOCK_STREAM = 1;
    public static final int SOCK_CLOEXEC = 0x80000;
    public static final int SOL_SOCKET = 1;
    public static final int SO_PEERCRED = 17;
    public static final int SCM_RIGHTS = 1;
    public static final int MSG_CTRUNC = 0x8;
    public static final int MSG_DONTWAIT = 0x40;
    public static final int MSG_NOSIGNAL = 0x4000;
    public static final int MSG_CMSG_CLOEXEC = 0x40000000;
    public static final int SHUT_RDWR = 2;

    // poll(2)
    public static final short POLLIN = 0x1;
    public static final short POLLOUT = 0x4;
    public static final short POLLERR = 0x8;
    public static final short POLLHUP = 0x10;
    /** {@code struct pollfd}: int fd, short events, short revents. */
    private static final int POLLFD_SIZE = 8;
    private static final int POLLFD_EVENTS_OFFSET = 4;
    private static final int POLLFD_REVENTS_OFFSET = 6;

    /** pidfd_open(2)'s number, the same on every architecture (Linux 5.3 numbered new calls alike). */
    private static final long SYS_PIDFD_OPEN = 434;

    // clocks
    public static final int CLOCK_REALTIME = 0;
    public static final int CLOCK_MONOTONIC = 1;
    public static final int CLOCK_MONOTONIC_RAW = 4;
    public static final int CLOCK_REALTIME_COARSE = 5;
    public static final int CLOCK_MONOTONIC_COARSE = 6;
    public static final int CLOCK_BOOTTIME = 7;

    // errno values ffmtrace reacts to
    public static final int EPERM = 1;
    public static final int ENOENT = 2;
    public static final int ESRCH = 3;
    public static final int EINTR = 4;
    public static final int EIO = 5;
    public static final int EBADF = 9;
    public static final int EAGAIN = 11;
    public static final int EACCES = 13;
    public static final int EINVAL = 22;
    public static final int EPIPE = 32;
    public static final int ENOSYS = 38;
    public static final int ETIMEDOUT = 110;
    public static final int ECONNRESET = 104;

    /** {@code struct sockaddr_un}: a 2-byte family and a 108-byte path. */
    public static final int SOCKADDR_UN_SIZE = 110;
    public static final int SUN_PATH_OFFSET = 2;
    public static final int SUN_PATH_SIZE = 108;

    /** {@code struct sockaddr_in}: family, port (big-endian), IPv4 address, 8 bytes of zero. */
    public static final int SOCKADDR_IN_SIZE = 16;
    /** {@code struct sockaddr_in6}: family, port (big-endian), flow info, IPv6 address, scope id. */
    public static final int SOCKADDR_IN6_SIZE = 28;
    /** Room for any address {@link #getsockname} returns here ({@code struct sockaddr_storage}). */
    public static final int SOCKADDR_STORAGE_SIZE = 128;

    /** {@code struct msghdr} on LP64 Linux. */
    public static final int MSGHDR_SIZE = 56;
    public static final int MSGHDR_NAME_OFFSET = 0;
    public static final int MSGHDR_IOV_OFFSET = 16;
    public static final int MSGHDR_IOVLEN_OFFSET = 24;
    public static final int MSGHDR_CONTROL_OFFSET = 32;
    public static final int MSGHDR_CONTROLLEN_OFFSET = 40;
    public static final int MSGHDR_FLAGS_OFFSET = 48;
    /** {@code struct iovec}. */
    public static final int IOVEC_SIZE = 16;
    /** {@code struct cmsghdr}: size_t len, int level, int type, then the data. */
    public static final int CMSG_HEADER_SIZE = 16;
    public static final int CMSG_LEVEL_OFFSET = 8;
    public static final int CMSG_TYPE_OFFSET = 12;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIBC = LINKER.defaultLookup();
    private static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO =
            CAPTURE_LAYOUT.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");
    // Arena.ofAuto: a thread's buffer is freed with the thread (virtual threads included).
    private static final ThreadLocal<MemorySegment> CAPTURE =
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(CAPTURE_LAYOUT));

    private static final ThreadLocal<MemorySegment> TIMESPEC =
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(16, 8));
    private static final ThreadLocal<MemorySegment> POLLFD =
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(POLLFD_SIZE, 4));

    private static final ValueLayout.OfShort C_SHORT = ValueLayout.JAVA_SHORT;
    private static final ValueLayout.OfInt C_INT = ValueLayout.JAVA_INT;
    private static final ValueLayout.OfLong C_LONG = ValueLayout.JAVA_LONG;
    private static final AddressLayout C_POINTER = ValueLayout.ADDRESS;

    // A handle per class, linked on its first call: linking costs about 10 ms of a fresh JVM
    // each, and most processes (a jcstress fork, a command-line run) call a few of them.
    private static final class MemfdCreate {
        static final MethodHandle CALL = downcall("memfd_create",
                FunctionDescriptor.of(C_INT, C_POINTER, C_INT));
    }
    private static final class Open {
        static final MethodHandle CALL = downcall("open",
                FunctionDescriptor.of(C_INT, C_POINTER, C_INT, C_INT), Linker.Option.firstVariadicArg(2));
    }
    private static final class Unlink {
        static final MethodHandle CALL = downcall("unlink",
                FunctionDescriptor.of(C_INT, C_POINTER));
    }
    private static final class Close {
        static final MethodHandle CALL = downcall("close",
                FunctionDescriptor.of(C_INT, C_INT));
    }
    private static final class Ftruncate {
        static final MethodHandle CALL = downcall("ftruncate",
                FunctionDescriptor.of(C_INT, C_INT, C_LONG));
    }
    private static final class FcntlInt {
        static final MethodHandle CALL = downcall("fcntl",
                FunctionDescriptor.of(C_INT, C_INT, C_INT, C_INT), Linker.Option.firstVariadicArg(2));
    }
    private static final class Pread {
        static final MethodHandle CALL = downcall("pread",
                FunctionDescriptor.of(C_LONG, C_INT, C_POINTER, C_LONG, C_LONG));
    }
    private static final class Fstat {
        static final MethodHandle CALL = downcall("fstat",
                FunctionDescriptor.of(C_INT, C_INT, C_POINTER));
    }
    private static final class Mmap {
        static final MethodHandle CALL = downcall("mmap",
                FunctionDescriptor.of(C_POINTER, C_POINTER, C_LONG, C_INT, C_INT, C_INT, C_LONG));
    }
    private static final class Munmap {
        static final MethodHandle CALL = downcall("munmap",
                FunctionDescriptor.of(C_INT, C_POINTER, C_LONG));
    }
    private static final class Socket {
        static final MethodHandle CALL = downcall("socket",
                FunctionDescriptor.of(C_INT, C_INT, C_INT, C_INT));
    }
    private static final class Bind {
        static final MethodHandle CALL = downcall("bind",
                FunctionDescriptor.of(C_INT, C_INT, C_POINTER, C_INT));
    }
    private static final class Listen {
        static final MethodHandle CALL = downcall("listen",
                FunctionDescriptor.of(C_INT, C_INT, C_INT));
    }
    private static final class Accept4 {
        static final MethodHandle CALL = downcall("accept4",
                FunctionDescriptor.of(C_INT, C_INT, C_POINTER, C_POINTER, C_INT));
    }
    private static final class Connect {
        static final MethodHandle CALL = downcall("connect",
                FunctionDescriptor.of(C_INT, C_INT, C_POINTER, C_INT));
    }
    private static final class Write {
        static final MethodHandle CALL = downcall("write",
                FunctionDescriptor.of(C_LONG, C_INT, C_POINTER, C_LONG));
    }
    private static final class Send {
        static final MethodHandle CALL = downcall("send",
                FunctionDescriptor.of(C_LONG, C_INT, C_POINTER, C_LONG, C_INT));
    }
    private static final class Sendmsg {
        static final MethodHandle CALL = downcall("sendmsg",
                FunctionDescriptor.of(C_LONG, C_INT, C_POINTER, C_INT));
    }
    private static final class Recvmsg {
        static final MethodHandle CALL = downcall("recvmsg",
                FunctionDescriptor.of(C_LONG, C_INT, C_POINTER, C_INT));
    }
    private static final class Getsockopt {
        static final MethodHandle CALL = downcall("getsockopt",
                FunctionDescriptor.of(C_INT, C_INT, C_INT, C_INT, C_POINTER, C_POINTER));
    }
    private static final class Setsockopt {
        static final MethodHandle CALL = downcall("setsockopt",
                FunctionDescriptor.of(C_INT, C_INT, C_INT, C_INT, C_POINTER, C_INT));
    }
    private static final class Getsockname {
        static final MethodHandle CALL = downcall("getsockname",
                FunctionDescriptor.of(C_INT, C_INT, C_POINTER, C_POINTER));
    }
    private static final class Shutdown {
        static final MethodHandle CALL = downcall("shutdown",
                FunctionDescriptor.of(C_INT, C_INT, C_INT));
    }
    private static final class Kill {
        static final MethodHandle CALL = downcall("kill",
                FunctionDescriptor.of(C_INT, C_INT, C_INT));
    }
    // glibc's syscall(2) reads every argument as a long.
    private static final class Syscall2 {
        static final MethodHandle CALL = downcall("syscall",
                FunctionDescriptor.of(C_LONG, C_LONG, C_LONG, C_LONG), Linker.Option.firstVariadicArg(1));
    }
    private static final class Poll {
        static final MethodHandle CALL = downcall("poll",
                FunctionDescriptor.of(C_INT, C_POINTER, C_LONG, C_INT));
    }
    private static final class ClockGettime {
        static final MethodHandle CALL = downcall("clock_gettime",
                FunctionDescriptor.of(C_INT, C_INT, C_POINTER));
    }
    private static final class Gettid {
        static final MethodHandle CALL = downcall("gettid",
                FunctionDescriptor.of(C_INT));
    }
    private static final class Getuid {
        static final MethodHandle CALL = downcall("getuid",
                FunctionDescriptor.of(C_INT));
    }
    private static final MethodHandle SYSCONF = LINKER.downcallHandle(symbol("sysconf"),
            FunctionDescriptor.of(C_LONG, C_INT));
    private static final class Strerror {
        static final MethodHandle CALL = LINKER.downcallHandle(symbol("strerror"),
                FunctionDescriptor.of(C_POINTER, C_INT));
    }

    private static final int SC_PAGESIZE = 30;
    private static final long PAGE_SIZE = sysconf(SC_PAGESIZE);

    private static final StatLayout STAT = StatLayout.forArchitecture(System.getProperty("os.arch"));
    /** st_dev opens the structure, and st_ino follows it, on every architecture ffmtrace knows. */
    private static final long STAT_DEVICE_OFFSET = 0;
    private static final long STAT_INODE_OFFSET = 8;

    private Native() {
    }

    /** The runtime page size ({@code sysconf(_SC_PAGESIZE)}). */
    public static long pageSize() {
        return PAGE_SIZE;
    }

    public static int memfdCreate(String name, int flags) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = CAPTURE.get();
            int fd = (int) MemfdCreate.CALL.invokeExact(state, arena.allocateFrom(name), flags);
            if (fd < 0) {
                throw failure("memfd_create(\"" + name + "\")", state);
            }
            return fd;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static int open(String path, int flags, int mode) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = CAPTURE.get();
            int fd = (int) Open.CALL.invokeExact(state, arena.allocateFrom(path), flags, mode);
            if (fd < 0) {
                throw failure("open(\"" + path + "\")", state);
            }
            return fd;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static void unlink(String path) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = CAPTURE.get();
            if ((int) Unlink.CALL.invokeExact(state, arena.allocateFrom(path)) < 0) {
                throw failure("unlink(\"" + path + "\")", state);
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Closes {@code fd}; EINTR is not retried because Linux has released the fd already. */
    public static void close(int fd) {
        try {
            MemorySegment state = CAPTURE.get();
            if ((int) Close.CALL.invokeExact(state, fd) < 0 && errno(state) != EINTR) {
                throw failure("close(" + fd + ")", state);
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static void ftruncate(int fd, long size) {
        try {
            MemorySegment state = CAPTURE.get();
            if ((int) Ftruncate.CALL.invokeExact(state, fd, size) < 0) {
                throw failure("ftruncate(" + fd + ", " + size + ")", state);
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code fcntl(fd, cmd, arg)} for the commands that take an int argument. */
    public static int fcntl(int fd, int cmd, int arg) {
        try {
            MemorySegment state = CAPTURE.get();
            int result = (int) FcntlInt.CALL.invokeExact(state, fd, cmd, arg);
            if (result < 0) {
                throw failure("fcntl(" + fd + ", " + cmd + ")", state);
            }
            return result;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code pread(2)}: up to {@code length} bytes of {@code fd} at {@code offset} into
     * {@code buffer}, retried on EINTR. Returns the bytes read (0 at the end of the file), or
     * {@code -errno}, which callers handle as a result: reading another process's memory
     * through its {@code /proc/PID/mem} fails with EIO where nothing is mapped.
     */
    public static long pread(int fd, MemorySegment buffer, long length, long offset) {
        try {
            MemorySegment state = CAPTURE.get();
            while (true) {
                long read = (long) Pread.CALL.invokeExact(state, fd, buffer, length, offset);
                if (read >= 0) {
                    return read;
                }
                int errno = errno(state);
                if (errno != EINTR) {
                    return -errno;
                }
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** The file type, size, device and inode number of an open file, as {@code fstat(2)} reports them. */
    public record FileStatus(int mode, long size, long device, long inode) {
        public boolean isRegularFile() {
            return (mode & S_IFMT) == S_IFREG;
        }
    }

    public static FileStatus fstat(int fd) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = CAPTURE.get();
            MemorySegment buf = arena.allocate(STAT.size(), 8);
            if ((int) Fstat.CALL.invokeExact(state, fd, buf) < 0) {
                throw failure("fstat(" + fd + ")", state);
            }
            return new FileStatus(buf.get(C_INT, STAT.modeOffset()), buf.get(C_LONG, STAT.sizeOffset()),
                    buf.get(C_LONG, STAT_DEVICE_OFFSET), buf.get(C_LONG, STAT_INODE_OFFSET));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Returns the mapped address; {@code hint} is {@link MemorySegment#NULL} unless MAP_FIXED. */
    public static long mmap(long hint, long length, int prot, int flags, int fd, long offset) {
        try {
            MemorySegment state = CAPTURE.get();
            MemorySegment address = (MemorySegment) Mmap.CALL.invokeExact(state,
                    MemorySegment.ofAddress(hint), length, prot, flags, fd, offset);
            if (address.address() == -1L) {
                throw failure("mmap(length=" + length + ", fd=" + fd + ", offset=" + offset + ")", state);
            }
            return address.address();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static void munmap(long address, long length) {
        try {
            MemorySegment state = CAPTURE.get();
            if ((int) Munmap.CALL.invokeExact(state, MemorySegment.ofAddress(address), length) < 0) {
                throw failure("munmap(length=" + length + ")", state);
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static int socket(int domain, int type, int protocol) {
        try {
            MemorySegment state = CAPTURE.get();
            int fd = (int) Socket.CALL.invokeExact(state, domain, type, protocol);
            if (fd < 0) {
                throw failure("socket", state);
            }
            return fd;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static void bind(int fd, MemorySegment address, int addressLength, String description) {
        try {
            MemorySegment state = CAPTURE.get();
            if ((int) Bind.CALL.invokeExact(state, fd, address, addressLength) < 0) {
                throw failure("bind(" + description + ")", state);
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static void listen(int fd, int backlog) {
        try {
            MemorySegment state = CAPTURE.get();
            if ((int) Listen.CALL.invokeExact(state, fd, backlog) < 0) {
                throw failure("listen", state);
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code accept4(fd, NULL, NULL, flags)}, retried on EINTR. */
    public static int accept(int fd, int flags) {
        try {
            MemorySegment state = CAPTURE.get();
            while (true) {
                int client = (int) Accept4.CALL.invokeExact(state, fd, MemorySegment.NULL, MemorySegment.NULL, flags);
                if (client >= 0) {
                    return client;
                }
                if (errno(state) != EINTR) {
                    throw failure("accept4", state);
                }
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static void connect(int fd, MemorySegment address, int addressLength, String description) {
        try {
            MemorySegment state = CAPTURE.get();
            while ((int) Connect.CALL.invokeExact(state, fd, address, addressLength) < 0) {
                if (errno(state) != EINTR) {
                    throw failure("connect(" + description + ")", state);
                }
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code write(2)}, retried on EINTR; returns the bytes written, which may be fewer than asked. */
    public static long write(int fd, MemorySegment buffer, long length) {
        try {
            MemorySegment state = CAPTURE.get();
            while (true) {
                long written = (long) Write.CALL.invokeExact(state, fd, buffer, length);
                if (written >= 0) {
                    return written;
                }
                if (errno(state) != EINTR) {
                    throw failure("write(" + fd + ")", state);
                }
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code send(2)}. Returns the bytes sent, or {@code -errno} for EAGAIN and EPIPE,
     * which callers of non-blocking sends handle as results rather than failures.
     */
    public static long send(int fd, MemorySegment buffer, long length, int flags) {
        try {
            MemorySegment state = CAPTURE.get();
            while (true) {
                long sent = (long) Send.CALL.invokeExact(state, fd, buffer, length, flags);
                if (sent >= 0) {
                    return sent;
                }
                int errno = errno(state);
                if (errno == EAGAIN || errno == EPIPE) {
                    return -errno;
                }
                if (errno != EINTR) {
                    throw failure("send", state);
                }
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code sendmsg(2)}: the bytes sent, or {@code -EAGAIN} (a full socket, with MSG_DONTWAIT). */
    public static long sendmsg(int fd, MemorySegment message, int flags) {
        try {
            MemorySegment state = CAPTURE.get();
            while (true) {
                long sent = (long) Sendmsg.CALL.invokeExact(state, fd, message, flags);
                if (sent >= 0) {
                    return sent;
                }
                int errno = errno(state);
                if (errno == EAGAIN) {
                    return -EAGAIN;
                }
                if (errno != EINTR) {
                    throw failure("sendmsg", state);
                }
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static long recvmsg(int fd, MemorySegment message, int flags) {
        try {
            MemorySegment state = CAPTURE.get();
            while (true) {
                long received = (long) Recvmsg.CALL.invokeExact(state, fd, message, flags);
                if (received >= 0) {
                    return received;
                }
                if (errno(state) != EINTR) {
                    throw failure("recvmsg", state);
                }
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static void getsockopt(int fd, int level, int option, MemorySegment value, MemorySegment length) {
        try {
            MemorySegment state = CAPTURE.get();
            if ((int) Getsockopt.CALL.invokeExact(state, fd, level, option, value, length) < 0) {
                throw failure("getsockopt(" + level + ", " + option + ")", state);
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code setsockopt(2)} of an int option. */
    public static void setIntOption(int fd, int level, int option, int value) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = CAPTURE.get();
            MemorySegment boxed = arena.allocate(C_INT);
            boxed.set(C_INT, 0, value);
            if ((int) Setsockopt.CALL.invokeExact(state, fd, level, option, boxed, 4) < 0) {
                throw failure("setsockopt(" + level + ", " + option + ")", state);
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code getsockname(2)} into {@code address} (at least {@link #SOCKADDR_STORAGE_SIZE} bytes). */
    public static void getsockname(int fd, MemorySegment address) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = CAPTURE.get();
            MemorySegment length = arena.allocate(C_INT);
            length.set(C_INT, 0, (int) Math.min(address.byteSize(), SOCKADDR_STORAGE_SIZE));
            if ((int) Getsockname.CALL.invokeExact(state, fd, address, length) < 0) {
                throw failure("getsockname", state);
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code shutdown(2)}; ENOTCONN and friends are ignored, the caller closes next. */
    public static void shutdownQuietly(int fd, int how) {
        try {
            int _ = (int) Shutdown.CALL.invokeExact(CAPTURE.get(), fd, how);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Whether a process with this pid exists ({@code kill(pid, 0)}: EPERM still means it does). */
    public static boolean processExists(int pid) {
        try {
            MemorySegment state = CAPTURE.get();
            if ((int) Kill.CALL.invokeExact(state, pid, 0) == 0) {
                return true;
            }
            int errno = errno(state);
            if (errno == ESRCH) {
                return false;
            }
            if (errno == EPERM) {
                return true;
            }
            throw failure("kill(" + pid + ", 0)", state);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code pidfd_open(pid, 0)}: a file descriptor for process {@code pid} of the caller's PID
     * namespace, or {@code -errno} (ESRCH: no such process; ENOSYS or EPERM: the call is missing
     * or filtered; EINVAL: not a process, e.g. a thread other than the main one), which callers
     * handle as results.
     */
    public static int pidfdOpen(int pid) {
        try {
            MemorySegment state = CAPTURE.get();
            long fd = (long) Syscall2.CALL.invokeExact(state, SYS_PIDFD_OPEN, (long) pid, 0L);
            return fd >= 0 ? (int) fd : -errno(state);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Whether {@code fd} is readable or hung up now ({@code poll} with a timeout of 0), retried
     * on EINTR. A pidfd becomes readable when its process exits, zombie or reaped. Allocates
     * nothing after a thread's first call.
     */
    public static boolean pollReadable(int fd) {
        try {
            MemorySegment state = CAPTURE.get();
            MemorySegment pollfd = POLLFD.get();
            while (true) {
                pollfd.set(C_INT, 0, fd);
                pollfd.set(C_SHORT, POLLFD_EVENTS_OFFSET, POLLIN);
                pollfd.set(C_SHORT, POLLFD_REVENTS_OFFSET, (short) 0);
                int ready = (int) Poll.CALL.invokeExact(state, pollfd, 1L, 0);
                if (ready >= 0) {
                    short revents = pollfd.get(C_SHORT, POLLFD_REVENTS_OFFSET);
                    return ready > 0 && (revents & (POLLIN | POLLHUP)) != 0;
                }
                if (errno(state) != EINTR) {
                    throw failure("poll(" + fd + ")", state);
                }
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Whether {@code fd} can take a write (or has failed, which the write then reports)
     * within {@code timeoutMillis}: {@code poll} for POLLOUT, retried on EINTR with the time
     * left. Allocates nothing after a thread's first call.
     */
    public static boolean pollWritable(int fd, long timeoutMillis) {
        try {
            MemorySegment state = CAPTURE.get();
            MemorySegment pollfd = POLLFD.get();
            long deadline = System.nanoTime() + timeoutMillis * 1_000_000;
            while (true) {
                pollfd.set(C_INT, 0, fd);
                pollfd.set(C_SHORT, POLLFD_EVENTS_OFFSET, POLLOUT);
                pollfd.set(C_SHORT, POLLFD_REVENTS_OFFSET, (short) 0);
                int wait = (int) Math.max(0, Math.min(Integer.MAX_VALUE, (deadline - System.nanoTime()) / 1_000_000));
                int ready = (int) Poll.CALL.invokeExact(state, pollfd, 1L, wait);
                if (ready >= 0) {
                    short revents = pollfd.get(C_SHORT, POLLFD_REVENTS_OFFSET);
                    return ready > 0 && (revents & (POLLOUT | POLLERR | POLLHUP)) != 0;
                }
                if (errno(state) != EINTR) {
                    throw failure("poll(" + fd + ")", state);
                }
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code clock_gettime(clock)} in nanoseconds; allocates nothing (a scratch timespec per thread). */
    public static long clockGetTimeNanos(int clock) {
        try {
            MemorySegment state = CAPTURE.get();
            MemorySegment scratch = TIMESPEC.get();
            if ((int) ClockGettime.CALL.invokeExact(state, clock, scratch) < 0) {
                throw failure("clock_gettime(" + clock + ")", state);
            }
            return scratch.get(C_LONG, 0) * 1_000_000_000L + scratch.get(C_LONG, 8);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** The calling thread's kernel thread id (what the Perfetto UI shows as tid). */
    public static int gettid() {
        try {
            return (int) Gettid.CALL.invokeExact(CAPTURE.get());
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public static int getuid() {
        try {
            return (int) Getuid.CALL.invokeExact(CAPTURE.get());
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** The symbolic name of an errno value, e.g. {@code EPERM}. */
    public static String errnoName(int errno) {
        return Errno.name(errno);
    }

    /** {@code strerror(errno)}. */
    public static String strerror(int errno) {
        try {
            MemorySegment message = (MemorySegment) Strerror.CALL.invokeExact(errno);
            return message.reinterpret(Long.MAX_VALUE).getString(0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static long sysconf(int name) {
        try {
            return (long) SYSCONF.invokeExact(name);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static int errno(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }

    private static NativeException failure(String call, MemorySegment state) {
        return new NativeException(call, errno(state));
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException e) {
            throw e;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new IllegalStateException("a native call threw a checked exception", t);
    }

    private static MethodHandle downcall(String name, FunctionDescriptor descriptor, Linker.Option... options) {
        Linker.Option[] all = new Linker.Option[options.length + 1];
        all[0] = CAPTURE_ERRNO;
        System.arraycopy(options, 0, all, 1, options.length);
        return LINKER.downcallHandle(symbol(name), descriptor, all);
    }

    private static MemorySegment symbol(String name) {
        return LIBC.find(name).orElseThrow(() -> new UnsatisfiedLinkError("libc has no " + name));
    }

    /** Where {@code struct stat} keeps st_mode and st_size. */
    private record StatLayout(long size, long modeOffset, long sizeOffset) {
        static StatLayout forArchitecture(String arch) {
            return switch (arch) {
                case "amd64", "x86_64" -> new StatLayout(144, 24, 48);
                case "aarch64", "riscv64" -> new StatLayout(128, 16, 48);
                default -> throw new UnsupportedOperationException(
                        "ffmtrace knows struct stat only on x86-64, AArch64 and RISC-V 64, not " + arch);
            };
        }
    }
}
