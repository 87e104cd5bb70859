// What an IDE does while a user steps, made of JDI: a breakpoint that suspends every thread,
// steps over lines, and at every stop what the frames and variables views read (the thread's
// name, its frames, the top frame's visible locals and their values, `this` and its fields,
// the statics of the frame's class, strings, array heads). Commands on standard input:
//   go CLASS METHOD FLAG   a SUSPEND_ALL breakpoint at METHOD's first line, then CLASS.FLAG = true
//   step                   step over one line (the stop's thread; java.*, jdk.*, sun.* excluded)
//   finish                 every request deleted, the VM resumed   -> "finished"
//   view                   from now on each stop also reads what IntelliJ shows beside: the
//                          threads view (every thread's name, status, suspend count and frame
//                          count) and this.toString(), invoked on the stopped thread
//   exit
// Each stop prints "stop N ..." lines, then "stopped N". Object ids differ between runs, so
// an object is shown by its type; everything else by its value.
import com.sun.jdi.*;
import com.sun.jdi.connect.*;
import com.sun.jdi.event.*;
import com.sun.jdi.request.*;
import java.io.*;
import java.util.*;

public class StepDriver {
    static volatile ThreadReference stopped;
    static volatile boolean view;
    static int stops;

    static synchronized void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    public static void main(String[] a) throws Exception {
        VirtualMachine vm = Jdi.attach(a[0], a[1]);
        say("attached " + vm.name());
        Thread events = new Thread(() -> eventLoop(vm));
        events.setDaemon(true);
        events.start();
        EventRequestManager erm = vm.eventRequestManager();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] w = line.trim().split(" ");
            try {
                switch (w[0]) {
                    case "go": {
                        ClassType t = (ClassType) vm.classesByName(w[1]).get(0);
                        Method m = t.methodsByName(w[2]).get(0);
                        BreakpointRequest r = erm.createBreakpointRequest(m.location());
                        r.setSuspendPolicy(EventRequest.SUSPEND_ALL);
                        r.enable();
                        t.setValue(t.fieldByName(w[3]), vm.mirrorOf(true));
                        say("going");
                        break;
                    }
                    case "step": {
                        StepRequest r = erm.createStepRequest(stopped, StepRequest.STEP_LINE, StepRequest.STEP_OVER);
                        for (String p : new String[] {"java.*", "javax.*", "jdk.*", "sun.*", "com.sun.*"}) r.addClassExclusionFilter(p);
                        r.addCountFilter(1);
                        r.setSuspendPolicy(EventRequest.SUSPEND_ALL);
                        r.enable();
                        vm.resume();
                        break;
                    }
                    case "finish":
                        erm.deleteAllBreakpoints();
                        erm.deleteEventRequests(new ArrayList<>(erm.stepRequests()));
                        vm.resume();
                        say("finished");
                        break;
                    case "view":
                        view = true;
                        say("viewing");
                        break;
                    case "exit":
                        vm.dispose();
                        System.exit(0);
                        break;
                    default:
                        say("unknown command " + w[0]);
                }
            } catch (Exception e) {
                say("error " + e);
            }
        }
    }

    static void eventLoop(VirtualMachine vm) {
        try {
            while (true) {
                EventSet set = vm.eventQueue().remove();
                // One stop per event set, as an IDE shows it: a step that ends on a
                // breakpoint's line brings both events at once.
                String what = null;
                ThreadReference at = null;
                for (Event e : set) {
                    if (e instanceof StepEvent) {
                        what = "step";
                        at = ((StepEvent) e).thread();
                    } else if (e instanceof BreakpointEvent) {
                        if (what == null) what = "breakpoint";
                        at = ((BreakpointEvent) e).thread();
                    } else if (e instanceof VMDisconnectEvent) {
                        say("disconnected");
                        return;
                    }
                }
                if (at == null) continue;
                // A stop ends the step under way, as in an IDE: a breakpoint hit while
                // stepping over a call leaves its step request pending otherwise.
                EventRequestManager erm = vm.eventRequestManager();
                erm.deleteEventRequests(new ArrayList<>(erm.stepRequests()));
                stop(what, at);
            }
        } catch (InterruptedException | VMDisconnectedException e) {
            say("disconnected");
        } catch (Exception e) {
            say("error " + e);
        }
    }

    static void stop(String what, ThreadReference t) throws Exception {
        int n = stops++;
        List<String> out = new ArrayList<>();
        out.add(what + " thread=" + t.name());
        List<StackFrame> frames = t.frames();
        for (StackFrame f : frames) out.add("frame " + f.location().declaringType().name() + "." + f.location().method().name() + ":" + f.location().lineNumber());
        StackFrame top = frames.get(0);
        for (LocalVariable v : top.visibleVariables()) out.add("local " + v.name() + "=" + show(top.getValue(v)));
        ObjectReference self = top.thisObject();
        if (self != null) {
            for (Field f : self.referenceType().fields()) {
                if (!f.isStatic()) out.add("this." + f.name() + "=" + show(self.getValue(f)));
            }
        }
        ReferenceType type = top.location().declaringType();
        for (Field f : type.fields()) {
            if (f.isStatic()) out.add("static " + f.name() + "=" + show(type.getValue(f)));
        }
        if (view) {
            int threads = 0;
            for (ThreadReference x : t.virtualMachine().allThreads()) {
                if (x.name().isEmpty() || x.status() < -1 || x.suspendCount() < 1 || x.frameCount() < 0) throw new IllegalStateException("odd thread " + x.name());
                threads++;
            }
            out.add("threads " + threads);
            if (self != null) {
                Method m = self.referenceType().methodsByName("toString", "()Ljava/lang/String;").get(0);
                out.add("toString " + show(self.invokeMethod(t, m, Collections.emptyList(), ObjectReference.INVOKE_SINGLE_THREADED)));
            }
        }
        for (String s : out) say("stop " + n + " " + s);
        stopped = t;
        say("stopped " + n);
    }

    static String show(Value v) {
        if (v == null) return "null";
        if (v instanceof StringReference) return "\"" + ((StringReference) v).value() + "\"";
        if (v instanceof ArrayReference) {
            ArrayReference arr = (ArrayReference) v;
            int len = arr.length();
            StringBuilder b = new StringBuilder(arr.referenceType().name() + "[" + len + "] {");
            for (Value x : arr.getValues(0, Math.min(len, 4))) b.append(' ').append(show(x));
            return b.append(" }").toString();
        }
        if (v instanceof ObjectReference) return "a " + ((ObjectReference) v).referenceType().name();
        return v.toString();
    }
}
