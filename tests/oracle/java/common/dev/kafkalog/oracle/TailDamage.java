package dev.kafkalog.oracle;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Pattern;

/**
 * What a crash does to the tail of the last segment before an unclean reopen: {@code truncate_bytes} cuts bytes off
 * the end of its {@code .log} (a torn write), then {@code corrupt_byte} flips every bit of one byte counted back from
 * the (new) end, 1 being the last byte (a bit rot the CRC must catch).
 */
final class TailDamage {
    private static final Pattern SEGMENT_LOG = Pattern.compile("\\d{20}\\.log");

    private final Path file;
    private final long truncateBytes;
    private final Long corruptByte;

    private TailDamage(Path file, long truncateBytes, Long corruptByte) {
        this.file = file;
        this.truncateBytes = truncateBytes;
        this.corruptByte = corruptByte;
    }

    /**
     * Checks the damage against the files before anything is touched, so a refused request leaves the log as it was.
     *
     * @return null when no damage is asked for
     */
    static TailDamage plan(Path dir, Long truncateBytes, Long corruptByte) throws ProtocolException, IOException {
        if (truncateBytes == null && corruptByte == null) {
            return null;
        }
        Path last = null;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
            for (Path f : files) {
                String name = f.getFileName().toString();
                // 20-digit names sort as their offsets do
                if (SEGMENT_LOG.matcher(name).matches() && (last == null || name.compareTo(last.getFileName().toString()) > 0)) {
                    last = f;
                }
            }
        }
        if (last == null) {
            throw new ProtocolException("op reopen: no segment .log in " + dir + " to damage");
        }
        long size = Files.size(last);
        long cut = truncateBytes == null ? 0 : truncateBytes;
        if (cut > size) {
            throw new ProtocolException("op reopen: truncate_bytes " + cut + " is more than the " + size + " bytes of "
                + last.getFileName());
        }
        if (corruptByte != null && corruptByte > size - cut) {
            throw new ProtocolException("op reopen: corrupt_byte " + corruptByte + " is before the start of "
                + last.getFileName() + " (" + (size - cut) + " bytes left)");
        }
        return new TailDamage(last, cut, corruptByte);
    }

    void apply() throws IOException {
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            long size = raf.length() - truncateBytes;
            raf.setLength(size);
            if (corruptByte != null) {
                long position = size - corruptByte;
                raf.seek(position);
                int b = raf.read();
                raf.seek(position);
                raf.write(~b & 0xff);
            }
        }
    }
}
