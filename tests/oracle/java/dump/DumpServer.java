/*
 * Runs Kafka's DumpLogSegments many times in one JVM, for the dump oracle (tests/oracle/dump_tool.py).
 *
 * Usage: java -cp '<this dir>:<kafka lib>/*' DumpServer <tool class>
 *
 * Each request is one line on stdin: the tool's arguments separated by tabs.  The answer is one line,
 * "<status> <stdout bytes> <stderr bytes>", then those bytes of the tool's stdout and stderr (UTF-8).  Status 0
 * when the tool's main returned, 1 when it threw: then its stderr ends with the line the JVM would have printed,
 * "Exception in thread "main" <class>: <message>".  The tool keeps no state between calls (its reports are
 * locals of main), so a call prints what a fresh JVM would.
 *
 * Scala's println writes to the PrintStream that System.out was when scala.Console was first used, so
 * System.out and System.err are set once, before any tool class loads, to streams whose target changes for
 * each call.
 */
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;

public final class DumpServer {
    /** An output stream that writes wherever it is pointed. */
    private static final class Switch extends OutputStream {
        private OutputStream target;

        Switch(OutputStream target) {
            this.target = target;
        }

        void point(OutputStream to) {
            target = to;
        }

        @Override
        public void write(int b) throws IOException {
            target.write(b);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            target.write(b, off, len);
        }
    }

    private DumpServer() {
    }

    private static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        int b;
        while ((b = in.read()) != '\n') {
            if (b < 0) {
                return line.size() == 0 ? null : line.toString(StandardCharsets.UTF_8);
            }
            line.write(b);
        }
        return line.toString(StandardCharsets.UTF_8);
    }

    public static void main(String[] args) throws Exception {
        PrintStream answers = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false,
            StandardCharsets.UTF_8);
        Switch out = new Switch(OutputStream.nullOutputStream());
        Switch err = new Switch(new java.io.FileOutputStream(java.io.FileDescriptor.err));
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        Method tool = Class.forName(args[0]).getMethod("main", String[].class);
        InputStream in = new DataInputStream(System.in);
        String request;
        while ((request = readLine(in)) != null) {
            ByteArrayOutputStream stdout = new ByteArrayOutputStream();
            ByteArrayOutputStream stderr = new ByteArrayOutputStream();
            out.point(stdout);
            err.point(stderr);
            int status = 0;
            try {
                tool.invoke(null, (Object) request.split("\t", -1));
            } catch (InvocationTargetException e) {
                Throwable cause = e.getCause();
                status = 1;
                String message = cause.getMessage();
                System.err.println("Exception in thread \"main\" " + cause.getClass().getName()
                    + (message == null ? "" : ": " + message));
            } finally {
                System.out.flush();
                System.err.flush();
                out.point(OutputStream.nullOutputStream());
                err.point(new java.io.FileOutputStream(java.io.FileDescriptor.err));
            }
            byte[] o = stdout.toByteArray();
            byte[] e = stderr.toByteArray();
            answers.print(status + " " + o.length + " " + e.length + "\n");
            answers.write(o);
            answers.write(e);
            answers.flush();
        }
    }
}
