package dev.ffmtrace.protozero;

/**
 * Receives the open nested messages whose reserved size field lies in a slice that
 * is being given away; see {@link Message#redirectSizeFields}. Typically implemented
 * by the slice delegate itself, so redirection allocates nothing.
 */
@FunctionalInterface
public interface SizeFieldRedirector {
    /**
     * Called once per affected message, outermost first. The implementation must call
     * {@link Message#redirectSizeField} with a 4-byte patch slot it owns; the message
     * writes its final size there as a 4-byte redundant varint when it is finalized.
     */
    void redirect(Message message);
}
