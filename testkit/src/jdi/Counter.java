// The debuggee of the events-in-flight test: it counts `seq` up every few milliseconds (each
// change a watchpoint event for a debugger that asks), holds a table a debugger reads, and
// stops counting when the file `stop` appears in its folder, saying "done N".
import java.io.File;

public class Counter {
    static int seq;
    static final int[] TABLE = new int[1000];

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < TABLE.length; i++) TABLE[i] = i * 7;
        File stop = new File(args[0], "stop");
        System.out.println("Counter started");
        System.out.flush();
        while (!stop.exists()) {
            seq++;
            Thread.sleep(4);
        }
        System.out.println("done " + seq);
        System.out.flush();
        while (true) Thread.sleep(1000);
    }
}
