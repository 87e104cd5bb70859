// What a debugger sees of a VM's classes, made of JDI, for the class load and unload test.
// For each line "look COUNT LINE" on standard input: first waits (at most 10 s) until
// classesByName(CLASS) finds COUNT classes (a fresh attach finds the VM's own at once; JDI
// keeps the class list allClasses() read and updates it from ClassPrepare and ClassUnload
// events, which come after the VM's change), then prints the VM's classes whose name starts
// with PREFIX (vm.allClasses(), sorted), how many classes named CLASS classesByName finds
// and, of each, its source name, fields and methods with their line numbers; and when there
// is one, sets a breakpoint (SUSPEND_ALL) at LINE (locationsOfLine), waits for it (at most
// 30 s), prints where it stopped, deletes it and resumes. Ends each with "looked".
// At the end of standard input: prints "done" and disposes.
//   java ClassView HOST PORT PREFIX CLASS
import com.sun.jdi.*;
import com.sun.jdi.connect.*;
import com.sun.jdi.event.*;
import com.sun.jdi.request.*;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.*;

public class ClassView {
    static void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    public static void main(String[] a) throws Exception {
        String prefix = a[2];
        String name = a[3];
        VirtualMachine vm = Jdi.attach(a[0], a[1]);
        say("attached");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] w = line.trim().split(" ");
            if (w.length != 3 || !w[0].equals("look")) continue;
            look(vm, prefix, name, Integer.parseInt(w[1]), Integer.parseInt(w[2]));
            say("looked");
        }
        say("done");
        vm.dispose();
        System.exit(0);
    }

    static void look(VirtualMachine vm, String prefix, String name, int count, int line) throws Exception {
        long until = System.nanoTime() + 10_000_000_000L;
        while (vm.classesByName(name).size() != count && System.nanoTime() < until) Thread.sleep(20);
        List<String> names = new ArrayList<>();
        for (ReferenceType t : vm.allClasses()) {
            if (t.name().startsWith(prefix)) names.add(t.name());
        }
        Collections.sort(names);
        for (String n : names) say("class " + n);
        List<ReferenceType> found = vm.classesByName(name);
        say("found " + name + " " + found.size());
        for (ReferenceType t : found) {
            say("source " + t.sourceName() + " status prepared=" + t.isPrepared() + " initialized=" + t.isInitialized());
            for (Field f : t.fields()) say("field " + f.name() + " " + f.signature() + (f.isStatic() ? " static" : ""));
            for (Method m : t.methods()) {
                List<Integer> lines = new ArrayList<>();
                for (Location l : m.allLineLocations()) lines.add(l.lineNumber());
                say("method " + m.name() + m.signature() + " lines " + lines);
            }
            List<Location> at = t.locationsOfLine(line);
            say("line " + line + " locations " + at.size());
            if (at.isEmpty()) continue;
            EventRequestManager erm = vm.eventRequestManager();
            BreakpointRequest bp = erm.createBreakpointRequest(at.get(0));
            bp.setSuspendPolicy(EventRequest.SUSPEND_ALL);
            bp.enable();
            EventSet set = next(vm, 30_000);
            erm.deleteEventRequest(bp);
            if (set == null) {
                say("no hit at " + name + ":" + line + " within 30 s");
                continue;
            }
            for (Event e : set) {
                if (e instanceof BreakpointEvent) {
                    Location l = ((BreakpointEvent) e).location();
                    ThreadReference th = ((BreakpointEvent) e).thread();
                    say("hit " + l.declaringType().name() + "." + l.method().name() + ":" + l.lineNumber() + " thread=" + th.name()
                            + " frames=" + th.frameCount() + " this=" + th.frame(0).thisObject().referenceType().name());
                }
            }
            set.resume();
        }
    }

    /// The next event set holding a breakpoint event within `millis`, others resumed; null
    /// when none came.
    static EventSet next(VirtualMachine vm, long millis) throws InterruptedException {
        long until = System.nanoTime() + millis * 1_000_000L;
        while (true) {
            long left = (until - System.nanoTime()) / 1_000_000L;
            if (left <= 0) return null;
            EventSet set = vm.eventQueue().remove(left);
            if (set == null) return null;
            for (Event e : set) {
                if (e instanceof BreakpointEvent) return set;
            }
            set.resume();
        }
    }
}
