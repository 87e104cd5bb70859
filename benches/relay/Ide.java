// An IDE's stepping session, made of JDI: attach, stop at a breakpoint in Work.spin, then
// step over line after line and, after every step, look at what an IDE's debugger view
// shows (the frames, the top frame's variables and their values, the thread's status),
// until CALLS JDI calls have been made or MAX_MS milliseconds of stepping have passed (a
// path that stalls on delayed ACKs would otherwise take minutes). Prints "done calls=C
// steps=S ns=N", then waits for
// standard input to close before it exits (the harness stops a relay first, so the VM sees
// one disconnect).
//   java Ide HOST PORT CALLS [MAX_MS]
import com.sun.jdi.*;
import com.sun.jdi.connect.*;
import com.sun.jdi.event.*;
import com.sun.jdi.request.*;
import java.util.*;

public class Ide {
    public static void main(String[] a) throws Exception {
        long want = Long.parseLong(a[2]);
        long maxNs = a.length > 3 ? Long.parseLong(a[3]) * 1_000_000L : Long.MAX_VALUE;
        VirtualMachine vm = Jdi.attach(a[0], a[1]);
        EventRequestManager erm = vm.eventRequestManager();
        ClassType work = (ClassType) vm.classesByName("Work").get(0);
        Field go = work.fieldByName("go");
        work.setValue(go, vm.mirrorOf(true));
        Method spin = work.methodsByName("spin").get(0);
        BreakpointRequest bp = erm.createBreakpointRequest(spin.allLineLocations().get(2));
        bp.setSuspendPolicy(EventRequest.SUSPEND_ALL);
        bp.enable();
        ThreadReference thread = null;
        while (thread == null) {
            for (Event e : vm.eventQueue().remove()) {
                if (e instanceof BreakpointEvent) thread = ((BreakpointEvent) e).thread();
            }
        }
        erm.deleteEventRequest(bp);
        long calls = 0, steps = 0, values = 0;
        long t0 = System.nanoTime();
        while (calls < want && System.nanoTime() - t0 < maxNs) {
            StepRequest step = erm.createStepRequest(thread, StepRequest.STEP_LINE, StepRequest.STEP_OVER);
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
            calls += 4;
            steps++;
            List<StackFrame> frames = thread.frames();
            StackFrame top = frames.get(0);
            Location where = top.location();
            List<LocalVariable> vars = top.visibleVariables();
            Map<LocalVariable, Value> vals = top.getValues(vars);
            values += vals.size();
            int status = thread.status();
            int depth = thread.frameCount();
            calls += 7;
            if (where.lineNumber() < 0 || status < 0 || depth < 1) throw new IllegalStateException("odd frame");
        }
        long ns = System.nanoTime() - t0;
        work.setValue(go, vm.mirrorOf(false));
        vm.resume();
        System.out.println("done calls=" + calls + " steps=" + steps + " values=" + values + " ns=" + ns);
        System.out.flush();
        while (System.in.read() >= 0) { }
        System.exit(0);
    }
}
