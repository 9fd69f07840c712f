package dev.ffmtrace.protovm;

import static dev.ffmtrace.protovm.Programs.DST;
import static dev.ffmtrace.protovm.Programs.SRC;
import static dev.ffmtrace.protovm.Programs.cat;
import static dev.ffmtrace.protovm.Programs.fBytes;
import static dev.ffmtrace.protovm.Programs.fVarint;

import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Random programs and patches over the spec's test schema (Element, TraceEntry, Patch), as
 * scripts/protovm-golden draws them: selects of every cursor and path kind, reg_load, merge
 * with its flags, set and del, abort levels. They avoid the inputs where ffmtrace diverges
 * on purpose (a del or a set where the DST cursor has no parent link), so Perfetto's VM must
 * give the same outputs for them.
 */
final class RandomPrograms {
    private final Random random;

    RandomPrograms(long seed) {
        random = new Random(seed);
    }

    private int pick(int... values) {
        return values[random.nextInt(values.length)];
    }

    byte[] program() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(fVarint(1, 1));
        for (byte[] instruction : instructions(0, false)) {
            out.writeBytes(fBytes(2, instruction));
        }
        return out.toByteArray();
    }

    private List<byte[]> instructions(int depth, boolean dstLinked) {
        List<byte[]> list = new ArrayList<>();
        for (int n = pick(1, 1, 2, 3); n > 0; n--) {
            list.add(instruction(depth, dstLinked));
        }
        return list;
    }

    private byte[] instruction(int depth, boolean dstLinked) {
        int level = pick(0, 0, 1, 2, 3);
        byte[] levelField = level == 0 ? new byte[0] : fVarint(6, level);
        int op = depth < 4 ? pick(1, 1, 2, 3, 4, dstLinked ? 5 : 2) : pick(2, 3, dstLinked ? 4 : 2, dstLinked ? 5 : 3);
        if (op == 1) {
            int cursor = pick(0, SRC, DST, DST, 3);
            boolean movesDst = cursor == DST || cursor == 3;
            List<byte[]> path = new ArrayList<>();
            boolean lastRepeated = false;
            for (int n = pick(0, 1, 1, 2, 2, 3); n > 0; n--) {
                int fieldId = pick(1, 1, 2, 3, 4, 5);
                double kind = random.nextDouble();
                lastRepeated = false;
                if (kind < 0.2) {
                    path.add(Programs.repeated(fieldId));
                    lastRepeated = true;
                } else if (kind < 0.35) {
                    path.add(Programs.field(fieldId));
                    path.add(fVarint(2, pick(0, 0, 1, 2)));
                } else if (kind < 0.5 && cursor != SRC) {
                    path.add(Programs.field(fieldId));
                    path.add(cat(fVarint(3, pick(1, 1, 2)), fVarint(6, pick(0, 1))));
                } else {
                    path.add(Programs.field(fieldId));
                }
            }
            boolean linked = movesDst ? !path.isEmpty() && !lastRepeated : dstLinked;
            ByteArrayOutputStream body = new ByteArrayOutputStream();
            if (cursor != 0) {
                body.writeBytes(fVarint(1, cursor));
            }
            for (byte[] component : path) {
                body.writeBytes(fBytes(2, component));
            }
            if (movesDst && random.nextDouble() < 0.7) {
                body.writeBytes(fVarint(3, 1));
            }
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            out.writeBytes(fBytes(1, body.toByteArray()));
            out.writeBytes(levelField);
            for (byte[] nested : instructions(depth + 1, linked)) {
                out.writeBytes(fBytes(7, nested));
            }
            return out.toByteArray();
        }
        byte[] body = switch (op) {
            case 2 -> cat(pick(0, 0, 1) == 1 ? fVarint(1, pick(SRC, DST)) : new byte[0], fVarint(2, pick(0, 0, 1, 31)));
            case 3 -> cat(random.nextDouble() < 0.3 ? fVarint(1, 1) : new byte[0],
                    random.nextDouble() < 0.3 ? fVarint(2, 1) : new byte[0]);
            default -> new byte[0];
        };
        return cat(fBytes(op, body), levelField);
    }

    /** A message of the schema's shapes: elements, scalars, fixed32s and empty bytes under ids 1-5. */
    byte[] message() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int n = random.nextInt(5); n > 0; n--) {
            int fieldId = pick(1, 2, 3, 4, 5);
            double kind = random.nextDouble();
            if (kind < 0.5) {
                out.writeBytes(fBytes(fieldId, element()));
            } else if (kind < 0.8) {
                out.writeBytes(fVarint(fieldId, pick(0, 1, 2, 3, 127, 128)));
            } else if (kind < 0.9) {
                out.writeBytes(cat(Programs.varint((long) fieldId << 3 | 5), new byte[] {(byte) pick(1, 32), 0, 0, 0}));
            } else {
                out.writeBytes(fBytes(fieldId, new byte[0]));
            }
        }
        return out.toByteArray();
    }

    private byte[] element() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int id = pick(-1, 0, 1, 2, 3);
        if (id >= 0) {
            out.writeBytes(fVarint(1, id));
        }
        int value = pick(-1, 5, 300);
        if (value >= 0) {
            out.writeBytes(fVarint(2, value));
        }
        return out.toByteArray();
    }

    long limit() {
        return pick(150, 300, 600, 2000, 1 << 20);
    }

    boolean withState() {
        return random.nextBoolean();
    }

    int patches() {
        return 1 + random.nextInt(4);
    }
}
