package dev.ffmtrace.cli;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

/**
 * The running JVM {@link AttachCommandTest} attaches to: on the line "go" it collects
 * twice and answers "done"; it exits when its input ends. It knows nothing of tracing.
 */
public final class AttachTarget {
    static final int GCS = 2;

    private AttachTarget() {
    }

    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        System.out.println("ready");
        System.out.flush();
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            if (line.equals("go")) {
                for (int i = 0; i < GCS; i++) {
                    System.gc();
                }
                System.out.println("done");
                System.out.flush();
            }
        }
    }
}
