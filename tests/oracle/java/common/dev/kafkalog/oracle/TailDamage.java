package dev.kafkalog.oracle;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Pattern;

/**
 * What a crash does to the tail of the last segment before an unclean reopen: {@code truncate_bytes} cuts bytes off
 * the end of its {@code .log} (a torn write; at most the whole file), then {@code corrupt_byte} flips every bit of one
 * byte counted back from the (new) end, 1 being the last byte (a bit rot the CRC must catch).  0 is no damage, and a
 * position before the start of the file damages nothing: the scenario format's rules (a generator does not know the
 * file's size), the same on kafkalog's side.
 */
final class TailDamage {
    private static final Pattern SEGMENT_LOG = Pattern.compile("\\d{20}\\.log");

    private TailDamage() {
    }

    /** Damages the last segment's {@code .log} of {@code dir}, if it has one and damage is asked for. */
    static void apply(Path dir, long truncateBytes, long corruptByte) throws IOException {
        if (truncateBytes == 0 && corruptByte == 0) {
            return;
        }
        Path last = lastSegmentLog(dir);
        if (last == null) {
            return;
        }
        try (RandomAccessFile raf = new RandomAccessFile(last.toFile(), "rw")) {
            long size = Math.max(0, raf.length() - truncateBytes);
            raf.setLength(size);
            if (corruptByte > 0 && corruptByte <= size) {
                long position = size - corruptByte;
                raf.seek(position);
                int b = raf.read();
                raf.seek(position);
                raf.write(~b & 0xff);
            }
        }
    }

    private static Path lastSegmentLog(Path dir) throws IOException {
        Path last = null;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
            for (Path f : files) {
                String name = f.getFileName().toString();
                // 20-digit names sort as their offsets do
                if (SEGMENT_LOG.matcher(name).matches()
                        && (last == null || name.compareTo(last.getFileName().toString()) > 0)) {
                    last = f;
                }
            }
        }
        return last;
    }
}
