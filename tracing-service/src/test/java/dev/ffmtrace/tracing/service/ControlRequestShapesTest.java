package dev.ffmtrace.tracing.service;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;

import org.junit.jupiter.api.Test;

/**
 * {@link ControlRequestShapes}: the requests the warm-up decodes among its commits stay
 * ones the service accepts (a refused one would throw on the warm-up's writer threads).
 */
class ControlRequestShapesTest {
    @Test
    void theServiceDecodesAndAcceptsEachRequest() {
        assertDoesNotThrow(ControlRequestShapes::decodeEach);
    }
}
