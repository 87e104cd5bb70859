// The debuggee of the several-debuggers tests: two methods to stop in, a "tick N" line per
// round so the test can tell whether the app runs, and an exit when the file named by the
// first argument appears (so VM_DEATH can be watched).
public class Shared {
    static volatile int counter;

    static void alpha(int n) {
        counter += n;
    }

    static void beta(int n) {
        counter -= n;
    }

    public static void main(String[] args) throws Exception {
        java.io.File stop = new java.io.File(args[0]);
        System.out.println("Shared started");
        for (int i = 1; ; i++) {
            alpha(i);
            beta(i);
            System.out.println("tick " + i);
            System.out.flush();
            if (stop.exists()) {
                System.out.println("exiting");
                System.out.flush();
                System.exit(0);
            }
            Thread.sleep(50);
        }
    }
}
