// The debuggee of the IDE-shaped stepping tests: it waits until a debugger sets `go`, so a
// breakpoint set before that stops at the same state in every run; then each round calls
// `work`, which a debugger steps through, and prints "tick N".
public class Till {
    static volatile boolean go;
    static int rounds;
    static String name = "ledger";
    static long[] totals = new long[6];

    int id;
    String label;
    int[] items;

    Till(int id) {
        this.id = id;
        this.label = "L" + id;
        this.items = new int[] {id, id * 2, id * 3, id * 4, id * 5};
    }

    int work(int round) {
        int sum = 0;
        for (int i = 0; i < items.length; i++) {
            sum += items[i] * round;
        }
        String note = label + ":" + sum;
        totals[round % totals.length] += sum;
        return note.length() + sum;
    }

    public static void main(String[] args) throws Exception {
        System.out.println("Till started");
        System.out.flush();
        while (!go) {
            Thread.sleep(20);
        }
        Till l = new Till(7);
        for (int round = 1; ; round++) {
            rounds = round;
            l.work(round);
            System.out.println("tick " + round);
            System.out.flush();
            Thread.sleep(50);
        }
    }
}
