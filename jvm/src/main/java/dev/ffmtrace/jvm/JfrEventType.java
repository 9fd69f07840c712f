package dev.ffmtrace.jvm;

/**
 * An event type as {@link JfrMapping} reads it: its fields by position, what each holds.
 * One object per type for as long as its reader's metadata lasts (a recording's chunk may
 * bring new ones), so the mapping keys what it made for a type by identity.
 */
interface JfrEventType {
    /** What a field holds, as far as the mapping writes it. */
    enum Kind { BOOLEAN, INTEGRAL, FLOATING, STRING, CLASS, THREAD, METHOD, STACK_TRACE, OTHER }

    String name();

    /** The type's label ("Safepoint Begin"), or its name if it has none. */
    String label();

    /**
     * The position of field {@code name} ({@code "a.b"} for field {@code b} of struct
     * field {@code a}), or -1 if the type has none.
     */
    int field(String name);

    /** The name of the field at {@code field}, as the type spells it. */
    String fieldName(int field);

    Kind kind(int field);

    /** The kind of a field whose type JFR names {@code typeName} (for a type of one field, that field's). */
    static Kind kindOf(String typeName) {
        return switch (typeName) {
            case "boolean" -> Kind.BOOLEAN;
            case "byte", "short", "int", "long" -> Kind.INTEGRAL;
            case "float", "double" -> Kind.FLOATING;
            case "java.lang.String" -> Kind.STRING;
            case "java.lang.Class" -> Kind.CLASS;
            case "java.lang.Thread" -> Kind.THREAD;
            case "jdk.types.Method" -> Kind.METHOD;
            case "jdk.types.StackTrace" -> Kind.STACK_TRACE;
            default -> Kind.OTHER;
        };
    }
}
