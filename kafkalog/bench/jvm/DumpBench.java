import java.io.BufferedOutputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code dump FILES WARMUP ROUNDS}: Kafka's {@code kafka-dump-log.sh --deep-iteration --files FILES}
 * ({@code org.apache.kafka.tools.DumpLogSegments.main}), its standard output going to {@code /dev/null} through the
 * stream a JVM gives {@code System.out} (a 128-byte buffer flushed at every line), as a shell's {@code > /dev/null}
 * would take it.  The bytes it wrote are counted, to compare with kafkalog's dump of the same files.
 */
final class DumpBench {
    /** The tool's output, counted on its way to /dev/null. */
    private static final class Counting extends OutputStream {
        private final OutputStream target;
        private long count;

        Counting(OutputStream target) {
            this.target = target;
        }

        @Override
        public void write(int b) throws IOException {
            target.write(b);
            count++;
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            target.write(b, off, len);
            count += len;
        }
    }

    private DumpBench() {
    }

    static String run(String files, int warmup, int rounds) throws Exception {
        Method tool = Class.forName("org.apache.kafka.tools.DumpLogSegments").getMethod("main", String[].class);
        PrintStream stdout = System.out;
        List<Double> timed = new ArrayList<>();
        long written = -1;
        try (FileOutputStream devNull = new FileOutputStream("/dev/null")) {
            for (int round = 0; round < warmup + rounds; round++) {
                Counting counting = new Counting(devNull);
                System.setOut(new PrintStream(new BufferedOutputStream(counting, 128), true, StandardCharsets.UTF_8));
                long start = System.nanoTime();
                tool.invoke(null, (Object) new String[] {"--deep-iteration", "--files", files});
                System.out.flush();
                long elapsed = System.nanoTime() - start;
                System.setOut(stdout);
                if (round >= warmup) {
                    timed.add(elapsed / 1e9);
                }
                written = counting.count;
            }
        } finally {
            System.setOut(stdout);
        }
        return KafkaLogBench.result(timed, "\"bytes\": " + written);
    }
}
