// The debuggee of the class-unload test: classes defined by class loaders of their own.
// The main thread runs Staying.hold (Staying defined by a loader of its own, kept for the
// run) in a loop and prints "tick N" after each run, about every 50 ms. The thread "churn"
// keeps an instance of Passing, defined by another loader of its own; when a debugger sets
// `drop`, it lets go of it and calls System.gc() every 50 ms, each time also defining Nudge in
// a fresh loader (HotSpot's JDWP agent reports the classes a collection unloaded at its next
// event, and Nudge's ClassPrepare is one), until the debugger clears `drop` (collections stop
// after 60 s); then it makes a new Passing for the next round.
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Constructor;

public class Loaders {
    static volatile boolean drop;
    static Object passing;

    /// Defines the class `own` itself, from the class file beside Loaders; every other class
    /// comes from Loaders' loader.
    static final class Own extends ClassLoader {
        private final String own;

        Own(String own) {
            super(Loaders.class.getClassLoader());
            this.own = own;
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (!name.equals(own)) return super.loadClass(name, resolve);
            synchronized (getClassLoadingLock(name)) {
                Class<?> c = findLoadedClass(name);
                if (c != null) return c;
                try (InputStream in = getParent().getResourceAsStream(name + ".class")) {
                    if (in == null) throw new ClassNotFoundException(name);
                    byte[] b = in.readAllBytes();
                    return defineClass(name, b, 0, b.length);
                } catch (IOException e) {
                    throw new ClassNotFoundException(name, e);
                }
            }
        }
    }

    /// A new instance of `name`, defined by a new loader of its own.
    static Object fresh(String name) throws Exception {
        Constructor<?> c = new Own(name).loadClass(name).getDeclaredConstructor();
        c.setAccessible(true);
        return c.newInstance();
    }

    static void churn() {
        try {
            while (true) {
                passing = fresh("Passing");
                while (!drop) Thread.sleep(10);
                passing = null;
                long until = System.nanoTime() + 60_000_000_000L;
                while (drop) {
                    if (System.nanoTime() < until) {
                        System.gc();
                        fresh("Nudge");
                    }
                    Thread.sleep(50);
                }
            }
        } catch (Exception e) {
            e.printStackTrace();
        }
    }

    public static void main(String[] args) throws Exception {
        Runnable stay = (Runnable) fresh("Staying");
        Thread churn = new Thread(Loaders::churn, "churn");
        churn.setDaemon(true);
        churn.start();
        for (long n = 0; ; n++) {
            stay.run();
            System.out.println("tick " + n);
            System.out.flush();
            Thread.sleep(50);
        }
    }
}

/// Where the debugger stops: hold's last line, with `n`, `twice` and `tag` set.
class Staying implements Runnable {
    static String kind = "staying";
    final String name = "stay";
    int[] marks = {4, 5, 6};

    public void run() {
        hold(3);
    }

    int hold(int n) {
        int twice = n * 2;
        String tag = name.concat("#").concat(String.valueOf(n));
        return twice + tag.length() + marks.length;
    }
}

/// The class that unloads: nothing but its loader and an instance of it.
class Passing {
    static String kind = "passing";
}

/// Defined and dropped at each collection: its ClassPrepare is the agent's next event.
class Nudge {
}
