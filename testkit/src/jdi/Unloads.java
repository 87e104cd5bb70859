// A class unloaded between a stop and the next read, made of JDI, against `Loaders`
// (Loaders.java). For each suspend policy given: stop at a breakpoint in Staying.hold
// (Staying is defined by a class loader of its own), read what the frames and variables
// views read, ask for ClassUnload events of Passing (suspend policy NONE) and set
// Loaders.drop: the debuggee's thread "churn" lets go of its Passing (defined by another
// loader of its own) and calls System.gc() until the class unloads; with SUSPEND_ALL that
// thread is resumed alone first. The stopped thread stays suspended throughout. Once the
// ClassUnload event came, read again: the same thread, frames, locals, `this`, fields and
// statics as before, Staying.hold's values at the breakpoint, and no class Passing left; with
// SUSPEND_EVENT_THREAD, the Passing read before the unload (a static, and whether its
// constructor is obsolete: Method.IsObsolete, which JDI asks the VM each time) is refused
// after it.
// With SUSPEND_ALL no Passing is named before the unload: HotSpot's agent holds everything it
// gave a debugger strongly while every thread is suspended, and such a class never unloads.
// Each round prints what it read and ends with "ok class-unload POLICY"; then "done". A read
// that is not the VM's truth says "STALE ..." and exits with 1; no unload within 30 s of the
// loader dropped says "NO-UNLOAD ..." and exits with 1.
//   java Unloads HOST PORT all|thread...
import com.sun.jdi.*;
import com.sun.jdi.connect.*;
import com.sun.jdi.event.*;
import com.sun.jdi.request.*;
import java.util.*;

public class Unloads {
    static void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    static void fail(String s) {
        say(s);
        System.exit(1);
    }

    static void expect(String what, Object want, Object got) {
        if (!Objects.equals(String.valueOf(want), String.valueOf(got))) {
            fail("STALE " + what + ": expected " + want + ", read " + got);
        }
    }

    public static void main(String[] a) throws Exception {
        VirtualMachine vm = Jdi.attach(a[0], a[1]);
        say("attached " + vm.name());
        EventRequestManager erm = vm.eventRequestManager();
        ClassType loaders = (ClassType) vm.classesByName("Loaders").get(0);
        Field drop = loaders.fieldByName("drop");
        ReferenceType staying = vm.classesByName("Staying").get(0);
        List<Location> lines = staying.methodsByName("hold").get(0).allLineLocations();
        // hold's last line: n, twice and tag are visible.
        Location at = lines.get(lines.size() - 1);
        for (int i = 2; i < a.length; i++) {
            boolean all = a[i].equals("all");
            ReferenceType passing = all ? null : onePassing(vm);
            Method made = passing == null ? null : passing.methodsByName("<init>").get(0);
            if (passing != null) {
                String read = about(passing, made);
                say("Passing before the unload: " + read);
                expect("Passing before the unload", "kind read \"passing\", <init> obsolete read false", read);
            }
            BreakpointRequest bp = erm.createBreakpointRequest(at);
            bp.setSuspendPolicy(all ? EventRequest.SUSPEND_ALL : EventRequest.SUSPEND_EVENT_THREAD);
            bp.enable();
            EventSet set = next(vm, BreakpointEvent.class, 60_000);
            if (set == null) fail("no breakpoint in Staying.hold within 60 s");
            erm.deleteEventRequest(bp);
            ThreadReference t = ((LocatableEvent) set.iterator().next()).thread();
            String before = show(t);
            say(before);
            for (String known : new String[] {"suspended true", "at Staying.hold:", "at Staying.run:", "at Loaders.main:", "local n = 3",
                    "local twice = 6", "local tag = \"stay#3\"", "field name = \"stay\"", "field marks = [4, 5, 6]", "static kind = \"staying\""}) {
                expect("at the stop, " + known, true, before.contains(known));
            }
            ClassUnloadRequest unload = erm.createClassUnloadRequest();
            unload.addClassFilter("Passing");
            unload.setSuspendPolicy(EventRequest.SUSPEND_NONE);
            unload.enable();
            loaders.setValue(drop, vm.mirrorOf(true));
            if (all) thread(vm, "churn").resume();
            EventSet unloaded = next(vm, ClassUnloadEvent.class, 30_000);
            if (unloaded == null) fail("NO-UNLOAD: no ClassUnload of Passing within 30 s of its loader dropped and System.gc() called");
            for (Event e : unloaded) {
                if (e instanceof ClassUnloadEvent) expect("the class unloaded", "Passing", ((ClassUnloadEvent) e).className());
            }
            say("unloaded Passing");
            String after = show(t);
            expect("the stop's views after the unload", before, after);
            expect("classes named Passing after the unload", 0, vm.classesByName("Passing").size());
            if (passing != null) {
                String read = about(passing, made);
                say("Passing after the unload: " + read);
                expect("Passing read before, refused after the unload: " + read, false, read.contains("read"));
            }
            loaders.setValue(drop, vm.mirrorOf(false));
            erm.deleteEventRequest(unload);
            say("ok class-unload " + a[i]);
            set.resume();
        }
        say("done");
        vm.dispose();
        System.exit(0);
    }

    /// The one class Passing the debuggee holds (after a round it makes a new one).
    static ReferenceType onePassing(VirtualMachine vm) throws InterruptedException {
        long until = System.nanoTime() + 30_000_000_000L;
        while (System.nanoTime() < until) {
            List<ReferenceType> found = vm.classesByName("Passing");
            if (found.size() == 1) return found.get(0);
            Thread.sleep(20);
        }
        fail("no single class Passing within 30 s");
        return null;
    }

    static ThreadReference thread(VirtualMachine vm, String name) {
        for (ThreadReference t : vm.allThreads()) {
            if (t.name().equals(name)) return t;
        }
        fail("no thread " + name);
        return null;
    }

    /// The next event set holding an event of `kind` within `millis`, others resumed; null
    /// when none came.
    static EventSet next(VirtualMachine vm, Class<? extends Event> kind, long millis) throws InterruptedException {
        long until = System.nanoTime() + millis * 1_000_000L;
        while (true) {
            long left = (until - System.nanoTime()) / 1_000_000L;
            if (left <= 0) return null;
            EventSet set = vm.eventQueue().remove(left);
            if (set == null) return null;
            for (Event e : set) {
                if (kind.isInstance(e)) return set;
            }
            set.resume();
        }
    }

    /// Passing's static `kind` and whether `made` (its constructor) is obsolete, each read or
    /// why the VM refused it.
    static String about(ReferenceType type, Method made) {
        String kind, obsolete;
        try {
            kind = "read " + render(type.getValue(type.fieldByName("kind")));
        } catch (RuntimeException e) {
            kind = "refused (" + e.getClass().getSimpleName() + ")";
        }
        try {
            obsolete = "read " + made.isObsolete();
        } catch (RuntimeException e) {
            obsolete = "refused (" + e.getClass().getSimpleName() + ")";
        }
        return "kind " + kind + ", <init> obsolete " + obsolete;
    }

    /// What the frames and variables views read at a stop, as text.
    static String show(ThreadReference t) throws Exception {
        StringBuilder s = new StringBuilder();
        s.append("thread ").append(t.name()).append(" status ").append(t.status()).append(" suspended ").append(t.isSuspended());
        s.append(" frames ").append(t.frameCount());
        for (StackFrame f : t.frames()) {
            Location l = f.location();
            s.append("\n  at ").append(l.declaringType().name()).append('.').append(l.method().name()).append(':').append(l.lineNumber());
        }
        StackFrame top = t.frame(0);
        List<LocalVariable> locals = top.visibleVariables();
        Map<LocalVariable, Value> values = top.getValues(locals);
        for (LocalVariable v : locals) s.append("\n  local ").append(v.name()).append(" = ").append(render(values.get(v)));
        ObjectReference self = top.thisObject();
        s.append("\n  this ").append(self.referenceType().name());
        List<Field> fields = new ArrayList<>();
        for (Field f : self.referenceType().visibleFields()) {
            if (!f.isStatic()) fields.add(f);
        }
        Map<Field, Value> got = self.getValues(fields);
        for (Field f : fields) s.append("\n  field ").append(f.name()).append(" = ").append(render(got.get(f)));
        ReferenceType type = top.location().declaringType();
        List<Field> statics = new ArrayList<>();
        for (Field f : type.visibleFields()) {
            if (f.isStatic()) statics.add(f);
        }
        Map<Field, Value> held = type.getValues(statics);
        for (Field f : statics) s.append("\n  static ").append(f.name()).append(" = ").append(render(held.get(f)));
        return s.toString();
    }

    static String render(Value v) {
        if (v == null) return "null";
        if (v instanceof StringReference) return "\"" + ((StringReference) v).value() + "\"";
        if (v instanceof ArrayReference) {
            List<String> parts = new ArrayList<>();
            for (Value x : ((ArrayReference) v).getValues()) parts.add(render(x));
            return parts.toString();
        }
        if (v instanceof ObjectReference) return "instance of " + ((ObjectReference) v).referenceType().name();
        return v.toString();
    }
}
