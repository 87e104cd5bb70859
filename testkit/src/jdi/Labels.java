// What an IDE's variables view does for `this` at each stop, and nothing else: IntelliJ's
// renderer invokes `this.toString()` on the stopped thread and shows the String it returned.
// Attach, stop at the first line of Ledger.work with the suspend policy given (all or
// thread) HITS times (resumed through the event set in between), and at each stop invoke
// `this.toString()` (INVOKE_SINGLE_THREADED) and print the String's value. The program reads
// no field or local, so every StringReference.Value it sends is one of an invoke's String.
// Ends with "done" and disposes.
//   java Labels HOST PORT all|thread HITS
import com.sun.jdi.*;
import com.sun.jdi.event.*;
import com.sun.jdi.request.*;
import java.util.*;

public class Labels {
    public static void main(String[] a) throws Exception {
        int policy = a[2].equals("all") ? EventRequest.SUSPEND_ALL : EventRequest.SUSPEND_EVENT_THREAD;
        int hits = Integer.parseInt(a[3]);
        VirtualMachine vm = Jdi.attach(a[0], a[1]);
        ClassType ledger = (ClassType) vm.classesByName("Ledger").get(0);
        Method work = ledger.methodsByName("work").get(0);
        Method toString = ledger.methodsByName("toString", "()Ljava/lang/String;").get(0);
        BreakpointRequest bp = vm.eventRequestManager().createBreakpointRequest(work.location());
        bp.setSuspendPolicy(policy);
        bp.enable();
        for (int i = 1; i <= hits; i++) {
            EventSet set = vm.eventQueue().remove(60_000);
            if (set == null) throw new IllegalStateException("no breakpoint within 60 s");
            BreakpointEvent hit = null;
            for (Event e : set) {
                if (e instanceof BreakpointEvent) hit = (BreakpointEvent) e;
            }
            if (hit == null) {
                set.resume();
                i--;
                continue;
            }
            ThreadReference t = hit.thread();
            ObjectReference self = t.frame(0).thisObject();
            Value label = self.invokeMethod(t, toString, Collections.emptyList(), ObjectReference.INVOKE_SINGLE_THREADED);
            if (!(label instanceof StringReference)) throw new IllegalStateException("toString gave " + label);
            System.out.println("label " + i + " policy=" + set.suspendPolicy() + " " + ((StringReference) label).value());
            System.out.flush();
            if (i == hits) bp.disable();
            set.resume();
        }
        System.out.println("done");
        System.out.flush();
        vm.dispose();
        System.exit(0);
    }
}
