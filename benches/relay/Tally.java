// The far-side soak's debuggee: it logs its own values to the file named by its argument, so
// a debugger's view of it at any stop can be checked against what it did. The thread
// "stepper" counts `n` up and changes the String `s` with it while `go` is set; the change of
// both and its "value N S" line are one source line, so a stop (always at a line's start)
// finds the last "value" line of the log equal to this.n and this.s. The thread "ticker"
// writes "tick N" every 10 ms: while a debugger holds a suspend-all stop the log must not
// grow. Each line is one write() of the whole line. `spare` is never called: a second
// debugger's breakpoint that never hits. toString() shows both values.
//   java Tally LOG
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

public class Tally {
    static final String[] WORDS = { "ash", "birch", "cedar", "dogwood", "elm", "fir", "gum" };
    static volatile boolean go;
    static FileOutputStream log;
    static long ticks;
    long n;
    String s = "v0";

    void loop() throws Exception {
        while (true) {
            if (go) step();
            else Thread.sleep(20);
        }
    }

    void step() throws Exception {
        String next = "v" + (n + 1) + "-" + WORDS[(int) ((n + 1) % WORDS.length)];
        n++; s = next; write("value " + n + " " + s);
        Thread.sleep(5);
    }

    static void spare() {
        ticks += 0;
    }

    static synchronized void write(String line) throws IOException {
        log.write((line + "\n").getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public String toString() {
        return "Tally n=" + n + " s=" + s;
    }

    public static void main(String[] args) throws Exception {
        log = new FileOutputStream(args[0], true);
        Tally t = new Tally();
        write("value " + t.n + " " + t.s);
        Thread ticker = new Thread(() -> {
            try {
                while (true) {
                    ticks++; write("tick " + ticks);
                    Thread.sleep(10);
                }
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }, "ticker");
        ticker.setDaemon(true);
        ticker.start();
        Thread stepper = new Thread(() -> {
            try {
                t.loop();
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }, "stepper");
        stepper.setDaemon(true);
        stepper.start();
        // An idle pool, as the threads view of a server lists.
        Object idle = new Object();
        for (int i = 1; i <= 10; i++) {
            Thread p = new Thread(() -> {
                synchronized (idle) {
                    try { idle.wait(); } catch (InterruptedException e) { return; }
                }
            }, "pool-1-thread-" + i);
            p.setDaemon(true);
            p.start();
        }
        System.out.println("bench debuggee ready 0");
        System.out.flush();
        while (true) Thread.sleep(1000);
    }
}
