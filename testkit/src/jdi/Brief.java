// The debuggee of the thread-death test: main starts a thread "brief-N" that runs `run` on a
// fresh Brief and ends, waits for it, prints "tick N" and starts the next about every 50 ms.
// A debugger stopping in `run` holds a thread that ends as soon as it is let go.
public class Brief {
    static String kind = "brief";
    final String name;
    int[] marks = {1, 2, 3};

    Brief(String name) {
        this.name = name;
    }

    int run(int n) {
        int twice = n * 2;
        String tag = name + "#" + n;
        return twice + tag.length() + marks.length;
    }

    public static void main(String[] args) throws Exception {
        for (int n = 0; ; n++) {
            final int k = n;
            Thread t = new Thread(() -> new Brief(kind).run(k), "brief-" + n);
            t.start();
            t.join();
            System.out.println("tick " + n);
            System.out.flush();
            Thread.sleep(50);
        }
    }
}
