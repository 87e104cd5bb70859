// What an IDE does while a person steps through code, made of JDI: attach, stop at a
// breakpoint in Walk.run (suspend policy ALL), then step over line after line (STEP_LINE,
// STEP_OVER, the JDK's packages excluded, a count filter of 1, suspend policy ALL) and, after
// every stop, read what the frames and variables views show: the thread's frames, the top
// frame's visible variables and their values, `this` and its fields, the statics of its class,
// the value of every string and the head (up to 100 elements) of every array among those,
// and the thread's name. JDI waits for each reply before its next command, as IDEs do.
//
// Times: attach to the first stop shown (the breakpoint's views read), then each step from
// its request to its views read. Prints
//   stop_ns=S       (the breakpoint's event received: the first stop's reads begin)
//   first_ns=F
//   step_ns=A,B,C...
//   done steps=S values=V
// then waits for standard input to close before it exits (the harness stops a relay first,
// so the VM sees one disconnect).
// With "view", the attach asks the class list first (vm.allClasses(), as IntelliJ does) and
// each stop also reads what IntelliJ shows beside: the threads view (every thread's name,
// status, suspend count and frame count) and this.toString(), invoked on the stopped thread
// (its renderer's label for `this`), and the String it returned read, as the label shows it.
//   java Step HOST PORT LINE STEPS [MAX_MS [view]]     (LINE: the breakpoint's line in Walk.run)
import com.sun.jdi.*;
import com.sun.jdi.connect.*;
import com.sun.jdi.event.*;
import com.sun.jdi.request.*;
import java.util.*;

public class Step {
    static final String[] EXCLUDED = { "java.*", "javax.*", "sun.*", "jdk.*", "com.sun.*" };
    static long values;
    static boolean view;

    public static void main(String[] a) throws Exception {
        int line = Integer.parseInt(a[2]);
        int want = Integer.parseInt(a[3]);
        long maxNs = a.length > 4 ? Long.parseLong(a[4]) * 1_000_000L : Long.MAX_VALUE;
        view = a.length > 5 && a[5].equals("view");
        long t0 = System.nanoTime();
        VirtualMachine vm = Jdi.attach(a[0], a[1], "60000");
        // IntelliJ asks the class list right after attach (its class tree, and to place the
        // breakpoints of classes loaded already), before it looks the breakpoint's class up.
        if (view && vm.allClasses().isEmpty()) throw new IllegalStateException("no classes");
        EventRequestManager erm = vm.eventRequestManager();
        ClassType walk = (ClassType) vm.classesByName("Walk").get(0);
        Method run = walk.methodsByName("run").get(0);
        List<Location> at = run.locationsOfLine(line);
        if (at.isEmpty()) throw new IllegalStateException("no code at Walk line " + line);
        BreakpointRequest bp = erm.createBreakpointRequest(at.get(0));
        bp.setSuspendPolicy(EventRequest.SUSPEND_ALL);
        bp.enable();
        Field go = walk.fieldByName("go");
        walk.setValue(go, vm.mirrorOf(true));
        ThreadReference thread = null;
        while (thread == null) {
            for (Event e : vm.eventQueue().remove()) {
                if (e instanceof BreakpointEvent) thread = ((BreakpointEvent) e).thread();
            }
        }
        System.out.println("stop_ns=" + (System.nanoTime() - t0));
        System.out.flush();
        erm.deleteEventRequest(bp);
        show(thread);
        long first = System.nanoTime() - t0;
        System.out.println("first_ns=" + first);
        System.out.flush();
        long[] took = new long[want];
        int steps = 0;
        long s0 = System.nanoTime();
        while (steps < want && System.nanoTime() - s0 < maxNs) {
            long t = System.nanoTime();
            StepRequest step = erm.createStepRequest(thread, StepRequest.STEP_LINE, StepRequest.STEP_OVER);
            for (String x : EXCLUDED) step.addClassExclusionFilter(x);
            step.addCountFilter(1);
            step.setSuspendPolicy(EventRequest.SUSPEND_ALL);
            step.enable();
            vm.resume();
            boolean stepped = false;
            while (!stepped) {
                for (Event e : vm.eventQueue().remove()) {
                    stepped |= e instanceof StepEvent;
                }
            }
            erm.deleteEventRequest(step);
            show(thread);
            took[steps++] = System.nanoTime() - t;
        }
        StringBuilder line2 = new StringBuilder("step_ns=");
        for (int i = 0; i < steps; i++) {
            if (i > 0) line2.append(',');
            line2.append(took[i]);
        }
        System.out.println(line2);
        walk.setValue(go, vm.mirrorOf(false));
        vm.resume();
        System.out.println("done steps=" + steps + " values=" + values);
        System.out.flush();
        while (System.in.read() >= 0) { }
        System.exit(0);
    }

    /// What the frames and variables views read at a stop.
    static void show(ThreadReference thread) throws Exception {
        List<StackFrame> frames = thread.frames();
        StackFrame top = frames.get(0);
        if (top.location().lineNumber() < 0) throw new IllegalStateException("no line");
        List<LocalVariable> vars = top.visibleVariables();
        Map<LocalVariable, Value> locals = top.getValues(vars);
        List<Value> seen = new ArrayList<>(locals.values());
        ObjectReference self = top.thisObject();
        ReferenceType type = top.location().declaringType();
        if (self != null) {
            seen.addAll(self.getValues(self.referenceType().visibleFields()).values());
        }
        List<Field> statics = new ArrayList<>();
        for (Field f : type.visibleFields()) {
            if (f.isStatic()) statics.add(f);
        }
        seen.addAll(type.getValues(statics).values());
        for (Value v : seen) {
            values++;
            if (v instanceof StringReference) {
                if (((StringReference) v).value() == null) throw new IllegalStateException("null string");
            } else if (v instanceof ArrayReference) {
                ArrayReference arr = (ArrayReference) v;
                int n = arr.length();
                if (n > 0) values += arr.getValues(0, Math.min(n, 100)).size();
            }
        }
        if (thread.name().isEmpty()) throw new IllegalStateException("no thread name");
        if (!view) return;
        for (ThreadReference t : thread.virtualMachine().allThreads()) {
            if (t.name().isEmpty() || t.status() < -1 || t.suspendCount() < 1 || t.frameCount() < 0) {
                throw new IllegalStateException("odd thread " + t.name());
            }
        }
        if (self != null) {
            Method m = self.referenceType().methodsByName("toString", "()Ljava/lang/String;").get(0);
            Value label = self.invokeMethod(thread, m, Collections.emptyList(), ObjectReference.INVOKE_SINGLE_THREADED);
            if (!(label instanceof StringReference)) throw new IllegalStateException("toString gave " + label);
            // Shown, as the renderer's label is: its value read (StringReference.Value).
            if (((StringReference) label).value() == null) throw new IllegalStateException("toString gave null");
        }
    }
}
