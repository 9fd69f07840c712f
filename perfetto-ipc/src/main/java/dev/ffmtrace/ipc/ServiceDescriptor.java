package dev.ffmtrace.ipc;

import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * A service a host exposes: its name, which clients bind, and its methods in declaration
 * order (a method's id is its position counting from 1, as Perfetto numbers them).
 *
 * @param onClientDisconnected called once for every client that goes away, on that
 *                             client's I/O thread (Perfetto's Service::OnClientDisconnected)
 */
public record ServiceDescriptor(String name, List<Method> methods, Consumer<ClientInfo> onClientDisconnected) {
    public ServiceDescriptor {
        Objects.requireNonNull(name, "name");
        methods = List.copyOf(methods);
        Objects.requireNonNull(onClientDisconnected, "onClientDisconnected");
        if (name.isEmpty()) {
            throw new IllegalArgumentException("a service needs a name");
        }
        if (methods.stream().map(Method::name).distinct().count() != methods.size()) {
            throw new IllegalArgumentException("service " + name + " declares a method name twice");
        }
    }

    public ServiceDescriptor(String name, List<Method> methods) {
        this(name, methods, client -> { });
    }

    /**
     * One method.
     *
     * @param takesFd          whether an invocation may carry a file descriptor; one sent to
     *                         a method that takes none closes the connection
     * @param reusesInvocation whether the host may reuse an invocation its handler finished
     *                         within its call for the client's next request, so that steady
     *                         requests allocate nothing: only for handlers that keep no
     *                         reference to the invocation past its last reply (a stale one
     *                         would reply to a later request)
     */
    public record Method(String name, boolean takesFd, boolean reusesInvocation, MethodHandler handler) {
        public Method {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(handler, "handler");
            if (name.isEmpty()) {
                throw new IllegalArgumentException("a method needs a name");
            }
        }

        public Method(String name, boolean takesFd, MethodHandler handler) {
            this(name, takesFd, false, handler);
        }

        public Method(String name, MethodHandler handler) {
            this(name, false, false, handler);
        }
    }

    /** Runs an invocation; it may reply now or later, from any thread. */
    @FunctionalInterface
    public interface MethodHandler {
        void invoke(Invocation invocation);
    }
}
