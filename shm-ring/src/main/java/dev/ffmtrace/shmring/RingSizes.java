package dev.ffmtrace.shmring;

import dev.ffmtrace.memory.Os;

/**
 * Perfetto's rules for a SharedRingBuffer's sizes: a ring of at least one page, a whole
 * number of pages and a power of two, in a file of one metadata page more.
 */
final class RingSizes {
    private RingSizes() {
    }

    /** One page of metadata plus the ring, checked as Perfetto checks it. */
    static long fileSizeFor(long ringSize) {
        long page = Os.pageSize();
        if (ringSize > Long.MAX_VALUE / 4 || !isValidRingSize(ringSize, page)) {
            throw new IllegalArgumentException("SharedRingBuffer ring size is invalid (" + ringSize
                    + "): it must be a power of two and a multiple of the page size (" + page + ")");
        }
        return ringSize + page;
    }

    /** Checks the size of a file made elsewhere, as Perfetto's {@code Attach} does. */
    static void checkFileSize(long fileSize) {
        long page = Os.pageSize();
        if (!isValidRingSize(fileSize - page, page)) {
            throw new IllegalArgumentException("SharedRingBuffer size is invalid (" + fileSize
                    + "): the file must be one page (" + page + ") of metadata plus a ring whose size is"
                    + " a power of two and a multiple of the page size");
        }
    }

    private static boolean isValidRingSize(long ringSize, long page) {
        return ringSize >= page && ringSize % page == 0 && (ringSize & (ringSize - 1)) == 0;
    }
}
