// Events and commands in flight at once, made of JDI: a SUSPEND_NONE watchpoint on a static
// int's changes streams one event per change (each carries the new value, so a lost,
// repeated or reordered event shows as a value that is not the last one plus one), while
// two threads read elements of an int table in a loop (ArrayReference.GetValues, answered
// by the VM every time) and check each reply is that element's value (i * 7): a reply lost
// would hang the loop, one given to the wrong command would show. Commands on standard input:
//   watch CLASS FIELD TABLE   the watchpoint on CLASS.FIELD and the loops on CLASS.TABLE -> "watching"
//   status                    -> "status first=F last=L events=N commands=C bad=B"
//   exit
import com.sun.jdi.*;
import com.sun.jdi.connect.*;
import com.sun.jdi.event.*;
import com.sun.jdi.request.*;
import java.io.*;
import java.util.*;
import java.util.concurrent.atomic.AtomicLong;

public class Watcher {
    static volatile long first = -1, last = -1, events;
    static final AtomicLong commands = new AtomicLong(), bad = new AtomicLong();

    static synchronized void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    public static void main(String[] a) throws Exception {
        VirtualMachine vm = Jdi.attach(a[0], a[1]);
        say("attached " + vm.name());
        Thread ev = new Thread(() -> eventLoop(vm));
        ev.setDaemon(true);
        ev.start();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] w = line.trim().split(" ");
            try {
                switch (w[0]) {
                    case "watch": {
                        ReferenceType t = vm.classesByName(w[1]).get(0);
                        ArrayReference table = (ArrayReference) t.getValue(t.fieldByName(w[3]));
                        ModificationWatchpointRequest r = vm.eventRequestManager().createModificationWatchpointRequest(t.fieldByName(w[2]));
                        r.setSuspendPolicy(EventRequest.SUSPEND_NONE);
                        r.enable();
                        for (int k = 0; k < 2; k++) {
                            final int start = k * 500;
                            Thread loop = new Thread(() -> readLoop(table, start));
                            loop.setDaemon(true);
                            loop.start();
                        }
                        say("watching");
                        break;
                    }
                    case "status":
                        say("status first=" + first + " last=" + last + " events=" + events + " commands=" + commands.get() + " bad=" + bad.get());
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

    static void readLoop(ArrayReference table, int start) {
        int len = table.length();
        try {
            for (int i = start; ; i++) {
                int at = i % len;
                int got = ((IntegerValue) table.getValue(at)).value();
                if (got != at * 7) {
                    bad.incrementAndGet();
                    say("wrong reply: element " + at + " is " + got);
                }
                commands.incrementAndGet();
            }
        } catch (VMDisconnectedException e) {
            say("disconnected");
        } catch (Exception e) {
            bad.incrementAndGet();
            say("error " + e);
        }
    }

    static void eventLoop(VirtualMachine vm) {
        try {
            while (true) {
                EventSet set = vm.eventQueue().remove();
                for (Event e : set) {
                    if (e instanceof ModificationWatchpointEvent) {
                        long v = ((IntegerValue) ((ModificationWatchpointEvent) e).valueToBe()).value();
                        if (first < 0) first = v;
                        else if (v != last + 1) say("event out of order: " + v + " after " + last);
                        last = v;
                        events++;
                    } else if (e instanceof VMDisconnectEvent) {
                        say("disconnected");
                        return;
                    }
                }
            }
        } catch (InterruptedException | VMDisconnectedException e) {
            say("disconnected");
        }
    }
}
