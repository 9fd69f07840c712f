package dev.ffmtrace.protovm;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/**
 * Programs and patches are what a producer wrote: garbage bytes, and garbage inside
 * well-formed programs, never make the VM throw, and its memory never passes its limit.
 * CI runs a short form (junit-platform.properties); -Djqwik.tries.default=1000000 runs the long one.
 */
class ProtoVmFuzzTest {
    @Property
    void garbageProgramsAndPatchesNeverThrow(@ForAll @Size(max = 64) byte[] program,
                                             @ForAll @IntRange(max = 4096) int limit,
                                             @ForAll("messages") byte[] state,
                                             @ForAll @Size(max = 3) List<@Size(max = 48) byte[]> patches) {
        runAll(program, limit, state, patches);
    }

    @Property
    void wellFormedProgramsOnGarbageStatesAndPatchesNeverThrow(@ForAll long seed,
                                                               @ForAll @IntRange(max = 4096) int limit,
                                                               @ForAll("messages") byte[] state,
                                                               @ForAll @Size(max = 3) List<@Size(max = 48) byte[]> patches) {
        runAll(new RandomPrograms(seed).program(), limit, state, patches);
    }

    @Provide
    Arbitrary<byte[]> messages() {
        // Random bytes, and well-formed messages of the schema's shapes.
        return Arbitraries.oneOf(Arbitraries.bytes().array(byte[].class).ofMaxSize(48),
                Arbitraries.longs().map(seed -> new RandomPrograms(seed).message()));
    }

    private static void runAll(byte[] program, int limit, byte[] state, List<byte[]> patches) {
        ProtoVm vm = new ProtoVm(MemorySegment.ofArray(program), limit, MemorySegment.ofArray(state));
        for (byte[] patch : patches) {
            assertNotNull(vm.applyPatch(MemorySegment.ofArray(patch)));
            assertTrue(vm.memoryUsageBytes() <= program.length + limit, "memory " + vm.memoryUsageBytes());
            assertNotNull(vm.serializeState());
        }
        ProtoVm clone = vm.cloneReadOnly();
        assertTrue(clone.applyPatch(MemorySegment.ofArray(state)) == Status.ABORT);
    }
}
