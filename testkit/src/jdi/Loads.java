// The debuggee of the class load and unload test: a class defined and let go of between a
// debugger's attaches. Every 50 ms the main thread runs the LoadsGuest it holds (if any) and
// prints "tick N". In round R (from 1):
// - once the file load-R appears in the folder DIR names, it defines LoadsGuest from the
//   class folder named in that file (a folder under DIR) through a URLClassLoader of its own
//   (no parent but the boot loader), makes one and says "Loads loaded R";
// - once unload-R appears, it lets go of both and calls System.gc() until a WeakReference to
//   the loader is cleared (at most 600 times, 50 ms apart), then defines Nudge in a loader of
//   its own (HotSpot's JDWP agent reports the classes a collection unloaded at its next
//   event, and Nudge's ClassPrepare is one) and says "Loads unloaded R" (or "Loads kept R"
//   when the loader outlived the collections).
// Nothing here names LoadsGuest but by the string given to the loader, and no local
// variable of main holds the loader: an interpreted frame's dead slot would keep it alive.
//   java Loads DIR
import java.io.File;
import java.lang.ref.WeakReference;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;

public class Loads {
    static void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    /// A new LoadsGuest, defined from `folder` by a loader of its own.
    static Runnable load(File folder) throws Exception {
        ClassLoader own = new URLClassLoader(new URL[] {folder.toURI().toURL()}, null);
        return (Runnable) own.loadClass("LoadsGuest").getDeclaredConstructor().newInstance();
    }

    /// Defines and prepares Nudge in a loader of its own, and lets go of it.
    static void nudge(File dir) throws Exception {
        ClassLoader own = new URLClassLoader(new URL[] {dir.toURI().toURL()}, null);
        Class.forName("Nudge", true, own);
    }

    public static void main(String[] args) throws Exception {
        File dir = new File(args[0]);
        Runnable guest = null;
        int round = 1;
        // Bounded: half an hour of ticks.
        for (long n = 0; n < 36_000; n++) {
            File load = new File(dir, "load-" + round);
            if (guest == null && load.exists()) {
                String folder = new String(Files.readAllBytes(load.toPath()), "UTF-8").trim();
                guest = load(new File(dir, folder));
                say("Loads loaded " + round);
            }
            if (guest != null && new File(dir, "unload-" + round).exists()) {
                WeakReference<ClassLoader> gone = new WeakReference<>(guest.getClass().getClassLoader());
                guest = null;
                for (int i = 0; i < 600 && gone.get() != null; i++) {
                    System.gc();
                    Thread.sleep(50);
                }
                nudge(dir);
                say((gone.get() == null ? "Loads unloaded " : "Loads kept ") + round);
                round++;
            }
            if (guest != null) guest.run();
            say("tick " + n);
            Thread.sleep(50);
        }
    }
}

/// Defined and let go of after each unload: its ClassPrepare is the agent's next event.
class Nudge {
}
