import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

/**
 * Runs Kafka's DumpLogSegments many times in one JVM (tests/formats/kafka_dump_runs.py).
 *
 * <p>Usage: {@code java DumpRuns.java <main class> <spec file>}. The spec holds runs, each a line
 * {@code RUN <stdout file> <failure file>}, one argument per line, and {@code END}. Each run calls
 * the tool's {@code main} with those arguments; what it prints on stdout goes to the stdout file
 * (bytes as the tool's own process would write them: the JVM's default charset), and the
 * exception that ends a run, if any, to the failure file. {@code Exit.exit} is turned into an
 * exception so that a run cannot end the JVM. Scala's {@code println} binds {@code System.out}
 * once, so stdout is a fixed stream whose target is switched between runs.
 */
public class DumpRuns {
    static final class Switch extends OutputStream {
        OutputStream target = OutputStream.nullOutputStream();

        @Override
        public void write(int b) throws IOException {
            target.write(b);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            target.write(b, off, len);
        }

        @Override
        public void flush() throws IOException {
            target.flush();
        }
    }

    public static void main(String[] args) throws Exception {
        Switch sw = new Switch();
        PrintStream out = new PrintStream(sw, true, Charset.defaultCharset());
        System.setOut(out);
        Class<?> exit = Class.forName("org.apache.kafka.common.utils.Exit");
        Class<?> procedure = Class.forName("org.apache.kafka.common.utils.Exit$Procedure");
        Object thrower = java.lang.reflect.Proxy.newProxyInstance(
            DumpRuns.class.getClassLoader(), new Class<?>[] {procedure},
            (proxy, method, margs) -> {
                if (method.getName().equals("execute")) {
                    throw new IllegalStateException("Exit.exit(" + margs[0] + ", " + margs[1] + ")");
                }
                return null;
            });
        exit.getMethod("setExitProcedure", procedure).invoke(null, thrower);
        Method main = Class.forName(args[0]).getMethod("main", String[].class);
        List<String> lines = Files.readAllLines(Paths.get(args[1]), StandardCharsets.UTF_8);
        int i = 0;
        while (i < lines.size()) {
            String[] head = lines.get(i++).split(" ", 3);
            if (!head[0].equals("RUN")) {
                throw new IllegalArgumentException("expected RUN, got " + head[0]);
            }
            List<String> runArgs = new ArrayList<>();
            while (!lines.get(i).equals("END")) {
                runArgs.add(lines.get(i++));
            }
            i++;
            String failure = "";
            try (FileOutputStream target = new FileOutputStream(head[1])) {
                sw.target = target;
                try {
                    main.invoke(null, (Object) runArgs.toArray(new String[0]));
                } catch (InvocationTargetException e) {
                    Throwable cause = e.getCause();
                    failure = cause.getClass().getName() + ": " + cause.getMessage();
                }
                out.flush();
                sw.target = OutputStream.nullOutputStream();
            }
            Files.write(Paths.get(head[2]), failure.getBytes(StandardCharsets.UTF_8));
        }
    }
}
