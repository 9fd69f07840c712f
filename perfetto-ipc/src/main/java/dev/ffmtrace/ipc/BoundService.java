package dev.ffmtrace.ipc;

import java.util.Map;

/** A service a client has bound: the host's id for it and its methods' ids by name. */
public record BoundService(String name, int serviceId, Map<String, Integer> methodIds) {
    public BoundService {
        methodIds = Map.copyOf(methodIds);
    }

    /** The id of method {@code method}; throws if the host did not list it. */
    public int methodId(String method) {
        Integer id = methodIds.get(method);
        if (id == null) {
            throw new IllegalArgumentException("service " + name + " has no method " + method);
        }
        return id;
    }
}
