// An IDE's attach made of JDI, shaped like IntelliJ's: attach (SocketAttach: handshake,
// IDSizes, Version, capabilities, JDI's own ClassPrepare and ClassUnload requests), every
// loaded class (allClasses(), as IntelliJ's VM proxy reads them), the thread tracking
// requests (ThreadStart, ThreadDeath, suspend policy NONE), a ClassPrepare request for the
// breakpoint's class (suspend policy EVENT_THREAD, a class filter), the class found by name
// (in the list allClasses() read: nothing is looked up), the breakpoint's line found in it
// (ReferenceType.locationsOfLine: every method's line table), the breakpoint set
// (SUSPEND_ALL) and the VM resumed. Then prints "armed" (the attach is done: the harness
// counts the link's round trips up to here), waits for the breakpoint and prints where it
// stopped and the thread's top frame.
// Mode "wait": deletes the breakpoint, resumes, prints "done" and disposes. Mode "hold": prints
// "holding" and stays stopped until standard input closes, then does the same.
// Mode "arm": prints "done" once armed and disposes without waiting for the breakpoint (a
// second debugger while another holds the VM stopped).
//   java Attacher HOST PORT CLASS METHOD wait|hold|arm
import com.sun.jdi.*;
import com.sun.jdi.connect.*;
import com.sun.jdi.event.*;
import com.sun.jdi.request.*;
import java.util.*;

public class Attacher {
    static void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    public static void main(String[] a) throws Exception {
        String cls = a[2];
        String method = a[3];
        String mode = a[4];
        long t0 = System.nanoTime();
        VirtualMachine vm = Jdi.attach(a[0], a[1]);
        EventRequestManager erm = vm.eventRequestManager();
        say("attached " + vm.name() + " canRedefine=" + vm.canRedefineClasses() + " canPop=" + vm.canPopFrames());
        if (vm.allClasses().isEmpty()) throw new IllegalStateException("no classes");
        ThreadStartRequest ts = erm.createThreadStartRequest();
        ts.setSuspendPolicy(EventRequest.SUSPEND_NONE);
        ts.enable();
        ThreadDeathRequest td = erm.createThreadDeathRequest();
        td.setSuspendPolicy(EventRequest.SUSPEND_NONE);
        td.enable();
        ClassPrepareRequest cp = erm.createClassPrepareRequest();
        cp.addClassFilter(cls);
        cp.setSuspendPolicy(EventRequest.SUSPEND_EVENT_THREAD);
        cp.enable();
        List<ReferenceType> found = vm.classesByName(cls);
        if (found.isEmpty()) throw new IllegalStateException("no class " + cls);
        ReferenceType type = found.get(0);
        Method m = type.methodsByName(method).get(0);
        int line = m.location().lineNumber();
        List<Location> at = type.locationsOfLine(line);
        if (at.isEmpty()) throw new IllegalStateException("no code at " + cls + " line " + line);
        BreakpointRequest bp = erm.createBreakpointRequest(at.get(0));
        bp.setSuspendPolicy(EventRequest.SUSPEND_ALL);
        bp.enable();
        vm.resume();
        long took = System.nanoTime() - t0;
        say("armed " + cls + ":" + line + " methods=" + type.methods().size());
        say("attach_ms=" + took / 1_000_000);
        if (mode.equals("arm")) {
            say("done");
            vm.dispose();
            System.exit(0);
        }
        // The breakpoint can be hit after the VM took it and before it took vm.resume(): that
        // resume then lets the stopped thread run on (JDWP's own race, which IntelliJ's attach
        // has as well). Such a stop is passed over and the next one taken.
        long deadline = System.nanoTime() + 60_000_000_000L;
        EventSet set = null;
        LocatableEvent hit = null;
        ThreadReference t = null;
        StackFrame top = null;
        while (top == null) {
            long left = (deadline - System.nanoTime()) / 1_000_000;
            set = left > 0 ? vm.eventQueue().remove(left) : null;
            if (set == null) throw new IllegalStateException("no breakpoint within 60 s");
            hit = null;
            for (Event e : set) {
                if (e instanceof BreakpointEvent) hit = (LocatableEvent) e;
            }
            if (hit == null) {
                set.resume();
                continue;
            }
            t = hit.thread();
            try {
                top = t.frame(0);
            } catch (IncompatibleThreadStateException raced) {
                top = null;
            }
        }
        say("hit " + hit.location().declaringType().name() + "." + hit.location().method().name() + ":" + hit.location().lineNumber()
            + " thread=" + t.name() + " frames=" + t.frameCount() + " policy=" + set.suspendPolicy());
        for (LocalVariable v : top.visibleVariables()) {
            say("  local " + v.name() + " = " + top.getValue(v));
        }
        if (mode.equals("hold")) {
            say("holding");
            while (System.in.read() >= 0) { }
        }
        erm.deleteEventRequest(bp);
        set.resume();
        say("done");
        vm.dispose();
        System.exit(0);
    }
}
