// A small IDE made of JDI: it attaches like IntelliJ or Eclipse do (SocketAttach), then does
// what the test types on its standard input and prints what happens, one line each:
//   break CLASS METHOD all|thread   breakpoint at the method's first line   -> "breakpoint METHOD"
//   resume                          VirtualMachine.resume()                 -> "resumed"
//   resume-thread NAME              ThreadReference.resume() of that thread -> "resumed NAME"
//   suspend                         VirtualMachine.suspend()                -> "suspended"
//   status NAME                     the thread's suspend count, as JDI sees it -> "status NAME N"
//   clear                           deleteAllBreakpoints()                  -> "cleared"
//   dispose                         VirtualMachine.dispose(), then exit     -> "disposed"
//   exit                            exit without a word to the VM
// Events: "hit METHOD policy=P", "vm-start", "vm-death", "disconnected". A stop waits for the
// test's "resume", as it would wait for the user.
import com.sun.jdi.*;
import com.sun.jdi.connect.*;
import com.sun.jdi.event.*;
import com.sun.jdi.request.*;
import java.io.*;
import java.util.*;

public class Debugger {
    static synchronized void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    public static void main(String[] a) throws Exception {
        VirtualMachine vm = Jdi.attach(a[0], a[1]);
        say("attached " + vm.name() + " " + vm.version());
        Thread events = new Thread(() -> eventLoop(vm));
        events.setDaemon(true);
        events.start();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] w = line.trim().split(" ");
            try {
                switch (w[0]) {
                    case "break": {
                        ReferenceType t = vm.classesByName(w[1]).get(0);
                        Method m = t.methodsByName(w[2]).get(0);
                        BreakpointRequest r = vm.eventRequestManager().createBreakpointRequest(m.location());
                        r.setSuspendPolicy(w[3].equals("all") ? EventRequest.SUSPEND_ALL : EventRequest.SUSPEND_EVENT_THREAD);
                        r.enable();
                        say("breakpoint " + w[2]);
                        break;
                    }
                    case "resume":
                        vm.resume();
                        say("resumed");
                        break;
                    case "resume-thread":
                        thread(vm, w[1]).resume();
                        say("resumed " + w[1]);
                        break;
                    case "suspend":
                        vm.suspend();
                        say("suspended");
                        break;
                    case "status":
                        say("status " + w[1] + " " + thread(vm, w[1]).suspendCount());
                        break;
                    case "clear":
                        vm.eventRequestManager().deleteAllBreakpoints();
                        say("cleared");
                        break;
                    case "dispose":
                        vm.dispose();
                        say("disposed");
                        System.exit(0);
                        break;
                    case "exit":
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

    static ThreadReference thread(VirtualMachine vm, String name) {
        for (ThreadReference t : vm.allThreads()) {
            if (t.name().equals(name)) return t;
        }
        throw new IllegalArgumentException("no thread " + name);
    }

    static void eventLoop(VirtualMachine vm) {
        try {
            while (true) {
                EventSet set = vm.eventQueue().remove();
                for (Event e : set) {
                    if (e instanceof BreakpointEvent) {
                        say("hit " + ((BreakpointEvent) e).location().method().name() + " policy=" + set.suspendPolicy());
                    } else if (e instanceof VMStartEvent) {
                        say("vm-start");
                    } else if (e instanceof VMDeathEvent) {
                        say("vm-death");
                    } else if (e instanceof VMDisconnectEvent) {
                        say("disconnected");
                        return;
                    }
                }
                if (set.suspendPolicy() == EventRequest.SUSPEND_NONE) set.resume();
            }
        } catch (InterruptedException | VMDisconnectedException e) {
            say("disconnected");
        }
    }
}
