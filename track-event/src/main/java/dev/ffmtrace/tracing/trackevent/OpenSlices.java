package dev.ffmtrace.tracing.trackevent;

import java.util.Arrays;

/**
 * The slices one writer has open: per track, how deep they nest, and the stack of the
 * scoped ones ({@link TrackEventWriter#slice}) that their scopes end. A slice's token is
 * its track's index and its depth, so that an end can tell whether it ends the innermost
 * slice of its track.
 */
final class OpenSlices {
    /** Per track index, its open slices' depth, valid for the track whose uuid {@link #depthOf} holds. */
    private int[] depths = new int[64];
    private long[] depthOf = new long[64];
    private Track[] scopeTracks = new Track[16];
    private long[] scopeTokens = new long[16];
    private int scopeDepth;

    /** Opens a slice on {@code track}, innermost; returns its token. */
    long open(Track track) {
        int index = track.index;
        if (index >= depths.length) {
            int length = Math.max(index + 1, depths.length * 2);
            depths = Arrays.copyOf(depths, length);
            depthOf = Arrays.copyOf(depthOf, length);
        }
        if (depthOf[index] != track.uuid()) {
            // A reused index: the slices left open belonged to an earlier, unreachable track.
            depthOf[index] = track.uuid();
            depths[index] = 0;
        }
        return token(track, ++depths[index]);
    }

    /**
     * Closes the innermost slice open on {@code track}, which {@code token} must name.
     *
     * @throws IllegalStateException if no slice is open on the track or another one is
     *     innermost; nothing is changed then
     */
    void close(Track track, long token) {
        int index = track.index;
        int depth = index < depths.length && depthOf[index] == track.uuid() ? depths[index] : 0;
        if (depth == 0) {
            throw new IllegalStateException("endSlice on " + label(track) + ", which has no open slice");
        }
        if (token != token(track, depth)) {
            String which = (int) (token >>> 32) != index ? "a slice begun on another track"
                    : "the slice at depth " + (int) token + " while the innermost open one is at depth " + depth;
            throw new IllegalStateException("endSlice on " + label(track) + " of " + which
                    + ": slices on a track must nest");
        }
        depths[index] = depth - 1;
    }

    /** Pushes a scoped slice: {@code token} of {@link #open}, or 0 for one not written. */
    void pushScope(Track track, long token) {
        if (scopeDepth == scopeTokens.length) {
            scopeTokens = Arrays.copyOf(scopeTokens, scopeDepth * 2);
            scopeTracks = Arrays.copyOf(scopeTracks, scopeDepth * 2);
        }
        scopeTracks[scopeDepth] = track;
        scopeTokens[scopeDepth++] = token;
    }

    /**
     * The track of the innermost scoped slice, which {@link #popScope} then removes.
     *
     * @throws IllegalStateException if no scoped slice is open
     */
    Track innermostScopeTrack() {
        if (scopeDepth == 0) {
            throw new IllegalStateException("a slice scope was closed with no scoped slice open (closed twice?)");
        }
        return scopeTracks[scopeDepth - 1];
    }

    /** Removes the innermost scoped slice; returns its token. */
    long popScope() {
        int top = --scopeDepth;
        scopeTracks[top] = null;
        return scopeTokens[top];
    }

    private static String label(Track track) {
        String uuid = Long.toUnsignedString(track.uuid());
        return track.name() == null ? "track " + uuid : "track \"" + track.name() + "\" (" + uuid + ")";
    }

    private static long token(Track track, int depth) {
        return ((long) track.index << 32) | depth;
    }
}
