import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

/** Decodes hex lines from stdin with {@code new String(bytes, UTF_8)}; prints each result's UTF-16 code units in hex. */
public class JavaUtf8 {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        StringBuilder out = new StringBuilder();
        HexFormat hex = HexFormat.of();
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            String s = new String(hex.parseHex(line), StandardCharsets.UTF_8);
            for (int i = 0; i < s.length(); i++) {
                out.append(String.format("%04x", (int) s.charAt(i)));
            }
            out.append('\n');
        }
        System.out.print(out);
    }
}
