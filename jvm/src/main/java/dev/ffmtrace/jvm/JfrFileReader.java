package dev.ffmtrace.jvm;

import dev.ffmtrace.tracing.util.LongMap;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Reads the events of a JFR recording on disk, chunk by chunk, for {@link JfrMapping}:
 * the JDK's own reader ({@code RecordingFile}) makes an object of every event and looks
 * each value up by its field's name, which costs most of a conversion's time; this one
 * decodes only the events the mapping writes, by position.
 *
 * <p>A file is untrusted: each chunk is copied into memory before it is parsed (the file
 * may change underneath), every offset, count and nesting is bounded by the chunk, and
 * what does not parse throws {@link MalformedRecordingException} naming where. A chunk's
 * metadata and constants are read before its first event, so a chunk that cannot be read
 * gives none, as with the JDK's reader. Files of another format version, or with a chunk
 * over {@value #MAX_CHUNK_BYTES} bytes, are left to the JDK's reader ({@link #canRead}).
 */
final class JfrFileReader implements AutoCloseable {
    /** The largest chunk copied into memory; JFR's chunks are 12 MB unless configured larger. */
    static final long MAX_CHUNK_BYTES = 1L << 30;

    private final FileChannel file;
    private final long fileSize;
    private long nextChunk;
    /** The current chunk's copy, reused for the next chunk when it is large enough. */
    private byte[] chunkBytes = new byte[0];
    private JfrInput input;
    private JfrMetadata metadata;
    private JfrFileEvent event;
    private LongMap<JfrFileEventType> eventTypes;
    private long chunkSize;
    private long nextRecord;
    private long events;
    /**
     * The first chunk's header, whose clock converts every chunk's ticks, as the JDK's
     * reader does: so both readers convert a file to the same bytes.
     */
    private JfrChunkHeader clock;

    JfrFileReader(Path recording) throws IOException {
        this.file = FileChannel.open(recording, StandardOpenOption.READ);
        this.fileSize = file.size();
    }

    /**
     * Whether every chunk of {@code recording} is of the format this reader knows and small
     * enough to copy; an unreadable file is left to the JDK's reader, which says why.
     */
    static boolean canRead(Path recording) {
        try (FileChannel file = FileChannel.open(recording, StandardOpenOption.READ)) {
            long size = file.size();
            long at = 0;
            if (size < JfrChunkHeader.SIZE) {
                return false;
            }
            while (at + JfrChunkHeader.SIZE <= size) {
                JfrChunkHeader header = JfrChunkHeader.read(readHeader(file, at));
                if (header.major() != JfrChunkHeader.SUPPORTED_MAJOR || header.size() > MAX_CHUNK_BYTES) {
                    return false;
                }
                if (header.size() < JfrChunkHeader.SIZE) {
                    // Corrupt: this reader names where, as far as it reads.
                    return true;
                }
                at += header.size();
            }
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** Moves to the next event; false at the end of the recording. */
    boolean next() throws IOException {
        while (true) {
            if (input == null || nextRecord >= chunkSize) {
                if (!nextChunk()) {
                    return false;
                }
                continue;
            }
            long at = nextRecord;
            input.range(at, chunkSize);
            long size = input.readLong();
            if (size <= 0 || size > chunkSize - at) {
                throw new MalformedRecordingException("record of " + size + " bytes at chunk byte " + at
                        + " of a chunk of " + chunkSize);
            }
            nextRecord = at + size;
            long typeId = input.readLong();
            JfrFileEventType type = eventType(typeId);
            if (type != null) {
                event.at(type, input.position(), (int) nextRecord);
                events++;
                return true;
            }
        }
    }

    /** The event {@link #next()} moved to, valid until it moves again. */
    JfrEventView event() {
        return event;
    }

    /** Events read so far. */
    long events() {
        return events;
    }

    private JfrFileEventType eventType(long typeId) throws MalformedRecordingException {
        if (typeId == JfrMetadata.METADATA_RECORD || typeId == JfrConstants.CHECKPOINT_RECORD) {
            return null;
        }
        JfrFileEventType type = eventTypes.get(typeId);
        if (type == null) {
            JfrMetadata.Type declared = metadata.type(typeId);
            if (declared == null || !declared.isEvent()) {
                return null;
            }
            type = new JfrFileEventType(declared, metadata);
            eventTypes.put(typeId, type);
        }
        return type;
    }

    private boolean nextChunk() throws IOException {
        long at = nextChunk;
        if (at >= fileSize) {
            return false;
        }
        JfrChunkHeader header = JfrChunkHeader.read(readHeader(file, at));
        String problem = header.problem(fileSize - at);
        if (problem == null && header.size() > MAX_CHUNK_BYTES) {
            problem = "chunk of " + header.size() + " bytes";
        }
        if (problem != null) {
            throw new MalformedRecordingException("chunk at byte " + at + ": " + problem);
        }
        if (chunkBytes.length < header.size()) {
            chunkBytes = new byte[(int) header.size()];
        }
        ByteBuffer buffer = ByteBuffer.wrap(chunkBytes, 0, (int) header.size());
        while (buffer.hasRemaining()) {
            if (file.read(buffer, at + buffer.position()) < 0) {
                throw new MalformedRecordingException("chunk at byte " + at + " ends early: the file shrank");
            }
        }
        input = new JfrInput(chunkBytes, (int) header.size());
        metadata = JfrMetadata.read(input, header.metadataOffset());
        JfrConstants constants = JfrConstants.read(input, metadata, header.constantPoolOffset());
        if (clock == null) {
            clock = header;
        }
        event = new JfrFileEvent(input, constants, clock);
        eventTypes = new LongMap<>();
        chunkSize = header.size();
        nextRecord = JfrChunkHeader.SIZE;
        nextChunk = at + header.size();
        return true;
    }

    private static ByteBuffer readHeader(FileChannel file, long at) throws IOException {
        ByteBuffer header = ByteBuffer.allocate(JfrChunkHeader.SIZE);
        while (header.hasRemaining()) {
            if (file.read(header, at + header.position()) < 0) {
                break;
            }
        }
        return header.flip();
    }

    @Override
    public void close() throws IOException {
        file.close();
    }
}
