package dev.ffmtrace.jvm;

import java.util.Map;

/**
 * What a {@link JfrMapping} made of the events it was given.
 *
 * @param mapped events written as packets
 * @param ignoredTypes events of types the mapping does not write, by type
 * @param malformedTypes events skipped because their fields were not as expected, by type
 * @param withoutThread thread events or samples with no thread (or, for samples, no stack)
 * @param droppedPhases GC phases not nested in their parent, or whose collection never came
 * @param lateAllocationSamples allocation samples for a second whose rate was already written
 */
public record JfrMappingStats(long mapped, Map<String, Long> ignoredTypes, Map<String, Long> malformedTypes,
                              long withoutThread, long droppedPhases, long lateAllocationSamples) {
    /** Events skipped as malformed, all types together. */
    public long malformed() {
        return malformedTypes.values().stream().mapToLong(Long::longValue).sum();
    }

    /** Events of types not written, all types together. */
    public long ignored() {
        return ignoredTypes.values().stream().mapToLong(Long::longValue).sum();
    }
}
