// An IDE's stepping session made of JDI, printing what an IDE's frames and variables views
// show so that two runs can be compared line by line: attach (SocketAttach), stop at a
// breakpoint at the first line of Ledger.work with the suspend policy given, step over STEPS
// lines (STEP_LINE, STEP_OVER, class exclusions, a count filter, resumed through the event
// set as IDEs do), and at the stop and after every step print the thread (name, status,
// frame count), its frames, the top frame's visible locals and their values, `this` and its
// fields, the statics of the method's class, strings' values and arrays' lengths and heads,
// and the threads view (every thread's name, suspend count and whether suspended; the status
// and frame count of the threads that stand still while the VM runs, as the others' depend
// on when the stop came; the Attach Listener left out, as a tool on the host may start it
// between two runs).
// At every stop `this.toString()` and each plain object local's, invoked on the stopped
// thread as IntelliJ's renderers do, then the thread and `this` read again; last, once more. Object ids
// are never printed: they are a connection's, not the VM's. Ends with "done" and disposes.
//   java Stepper HOST PORT all|thread STEPS
import com.sun.jdi.*;
import com.sun.jdi.connect.*;
import com.sun.jdi.event.*;
import com.sun.jdi.request.*;
import java.util.*;

public class Stepper {
    static void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    public static void main(String[] a) throws Exception {
        int policy = a[2].equals("all") ? EventRequest.SUSPEND_ALL : EventRequest.SUSPEND_EVENT_THREAD;
        int steps = Integer.parseInt(a[3]);
        VirtualMachine vm = Jdi.attach(a[0], a[1]);
        say("attached " + vm.name() + " " + vm.version());
        EventRequestManager erm = vm.eventRequestManager();
        ClassType ledger = (ClassType) vm.classesByName("Ledger").get(0);
        Method work = ledger.methodsByName("work").get(0);
        BreakpointRequest bp = erm.createBreakpointRequest(work.location());
        bp.setSuspendPolicy(policy);
        bp.enable();
        EventSet set = next(vm, BreakpointEvent.class);
        LocatableEvent hit = (LocatableEvent) first(set, BreakpointEvent.class);
        ThreadReference t = hit.thread();
        say("hit " + where(hit.location()) + " policy=" + set.suspendPolicy());
        show(t);
        threads(vm);
        erm.deleteEventRequest(bp);
        for (int i = 1; i <= steps; i++) {
            StepRequest step = erm.createStepRequest(t, StepRequest.STEP_LINE, StepRequest.STEP_OVER);
            for (String ex : new String[] {"java.*", "javax.*", "jdk.*", "sun.*"}) step.addClassExclusionFilter(ex);
            step.addCountFilter(1);
            step.setSuspendPolicy(policy);
            step.enable();
            set.resume();
            set = next(vm, StepEvent.class);
            LocatableEvent stepped = (LocatableEvent) first(set, StepEvent.class);
            erm.deleteEventRequest(step);
            say("step " + i + " " + where(stepped.location()) + " policy=" + set.suspendPolicy());
            show(t);
            threads(vm);
        }
        ObjectReference self = t.frame(0).thisObject();
        Method toString = self.referenceType().methodsByName("toString", "()Ljava/lang/String;").get(0);
        Value label = self.invokeMethod(t, toString, Collections.emptyList(), ObjectReference.INVOKE_SINGLE_THREADED);
        say("toString " + value(label));
        set.resume();
        say("done");
        vm.dispose();
        System.exit(0);
    }

    /// The next event set holding an event of `kind`; any other set is resumed (none is asked for).
    static EventSet next(VirtualMachine vm, Class<? extends Event> kind) throws InterruptedException {
        while (true) {
            EventSet set = vm.eventQueue().remove(60_000);
            if (set == null) throw new IllegalStateException("no " + kind.getSimpleName() + " within 60 s");
            if (first(set, kind) != null) return set;
            say("other events " + set);
            set.resume();
        }
    }

    static Event first(EventSet set, Class<? extends Event> kind) {
        for (Event e : set) {
            if (kind.isInstance(e)) return e;
        }
        return null;
    }

    static String where(Location l) {
        return l.declaringType().name() + "." + l.method().name() + ":" + l.lineNumber();
    }

    /// Threads waiting in the VM's own code for as long as it runs: their status and frame
    /// count are the same at every stop.
    static final Set<String> STEADY = Set.of("Reference Handler", "Signal Dispatcher");

    static void threads(VirtualMachine vm) throws Exception {
        List<String> rows = new ArrayList<>();
        for (ThreadReference x : vm.allThreads()) {
            if (x.name().equals("Attach Listener")) continue;
            String row = "  thread view " + x.name() + " suspendCount=" + x.suspendCount() + " suspended=" + x.isSuspended();
            if (STEADY.contains(x.name()) && x.isSuspended()) row += " status=" + x.status() + " frames=" + x.frameCount();
            rows.add(row);
        }
        Collections.sort(rows);
        for (String r : rows) say(r);
    }

    static void show(ThreadReference t) throws Exception {
        say("thread " + t.name() + " status=" + t.status() + " suspended=" + t.isSuspended() + " frames=" + t.frameCount());
        for (StackFrame f : t.frames()) say("  frame " + where(f.location()));
        StackFrame top = t.frame(0);
        List<LocalVariable> vars = top.visibleVariables();
        Map<LocalVariable, Value> values = top.getValues(vars);
        for (LocalVariable v : vars) say("  local " + v.typeName() + " " + v.name() + " = " + value(values.get(v)));
        ObjectReference self = top.thisObject();
        if (self == null) {
            say("  this null");
        } else {
            say("  this " + self.referenceType().name());
            for (Field f : self.referenceType().allFields()) {
                if (!f.isStatic()) say("  field " + f.typeName() + " " + f.name() + " = " + value(self.getValue(f)));
            }
        }
        ReferenceType type = top.location().declaringType();
        for (Field f : type.allFields()) {
            if (f.isStatic()) say("  static " + f.typeName() + " " + f.name() + " = " + value(type.getValue(f)));
        }
        // As IntelliJ's renderer: toString() of `this` and of every local that is a plain
        // object, each an invoke on the stopped thread; then the thread and `this` read again.
        if (self != null) say("  this.toString " + render(t, self));
        for (LocalVariable v : vars) {
            Value x = values.get(v);
            if (x instanceof ObjectReference && !(x instanceof StringReference) && !(x instanceof ArrayReference)) {
                say("  " + v.name() + ".toString " + render(t, (ObjectReference) x));
            }
        }
        say("  after toString frames=" + t.frameCount() + " top=" + where(t.frame(0).location()));
        if (self != null) {
            for (Field f : self.referenceType().allFields()) {
                if (!f.isStatic()) say("  after toString field " + f.name() + " = " + value(t.frame(0).thisObject().getValue(f)));
            }
        }
    }

    static String render(ThreadReference t, ObjectReference o) throws Exception {
        Method m = o.referenceType().methodsByName("toString", "()Ljava/lang/String;").get(0);
        return value(o.invokeMethod(t, m, Collections.emptyList(), ObjectReference.INVOKE_SINGLE_THREADED));
    }

    static String value(Value v) {
        if (v == null) return "null";
        if (v instanceof StringReference) return "\"" + ((StringReference) v).value() + "\"";
        if (v instanceof ArrayReference) {
            ArrayReference r = (ArrayReference) v;
            int n = r.length();
            StringBuilder b = new StringBuilder(r.referenceType().name() + " length " + n + " {");
            List<Value> head = r.getValues(0, Math.min(n, 3));
            for (int i = 0; i < head.size(); i++) b.append(i == 0 ? "" : ", ").append(value(head.get(i)));
            return b.append(n > 3 ? ", ...}" : "}").toString();
        }
        if (v instanceof ObjectReference) return "instance of " + ((ObjectReference) v).referenceType().name();
        return v.toString();
    }
}
