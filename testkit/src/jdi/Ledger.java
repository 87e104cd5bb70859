// The debuggee of the compare tests: "tick N" from main about every 50 ms (so a test sees
// whether the app runs), and a thread "ledger-worker" that runs `work` on a fresh Ledger
// about every 50 ms: a debugger stopping in it sees the same values every time, whatever ran
// before. The breakpoint goes at work's first line, wherever that is.
public class Ledger {
    static String title = "ledger";
    static long[] history = {3, 1, 4, 1, 5, 9, 2, 6};
    static Ledger last;

    final String owner;
    int count;
    int[] amounts = {10, 20, 30, 40};
    String[] notes = {"rent", "food"};
    Ledger next;

    Ledger(String owner) {
        this.owner = owner;
    }

    int work(int n) {
        int sum = 0;
        String label = owner + "/" + n;
        for (int i = 0; i < amounts.length; i++) {
            sum += amounts[i];
        }
        count = sum / n;
        next = new Ledger(label);
        char[] letters = label.toCharArray();
        return sum + letters.length;
    }

    @Override
    public String toString() {
        return "Ledger(" + owner + ", " + count + ")";
    }

    static void tick(int n) {
        System.out.println("tick " + n);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        Thread worker = new Thread(() -> {
            while (true) {
                last = new Ledger("ann");
                last.work(4);
                try {
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "ledger-worker");
        worker.setDaemon(true);
        worker.start();
        System.out.println("Ledger started");
        System.out.flush();
        for (int i = 1; ; i++) {
            tick(i);
            Thread.sleep(50);
        }
    }
}
