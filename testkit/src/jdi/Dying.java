// A thread that ends between a stop and the next read, made of JDI, against `Brief`
// (Brief.java): for each suspend policy given, stop at a breakpoint in Brief.run, read what
// the frames and variables views read, ask for the thread's death event, let the thread go,
// and once its ThreadDeath event came read the thread again: it must be seen as ended (status
// ZOMBIE, not suspended, its frames refused, gone from the threads view), never as the
// stop read it; each round's thread is a new one, listed in the threads view at its stop. A stale read says
// "STALE ..." and exits with 1; each round ends with "ok thread-death POLICY"; then "done".
//   java Dying HOST PORT all|thread...
import com.sun.jdi.*;
import com.sun.jdi.connect.*;
import com.sun.jdi.event.*;
import com.sun.jdi.request.*;
import java.util.*;

public class Dying {
    static void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    static void expect(String what, Object want, Object got) {
        if (!Objects.equals(String.valueOf(want), String.valueOf(got))) {
            say("STALE " + what + ": expected " + want + ", read " + got);
            System.exit(1);
        }
    }

    public static void main(String[] a) throws Exception {
        VirtualMachine vm = Jdi.attach(a[0], a[1]);
        say("attached " + vm.name());
        EventRequestManager erm = vm.eventRequestManager();
        ClassType brief = (ClassType) vm.classesByName("Brief").get(0);
        for (int i = 2; i < a.length; i++) {
            BreakpointRequest bp = erm.createBreakpointRequest(brief.methodsByName("run").get(0).location());
            bp.setSuspendPolicy(a[i].equals("all") ? EventRequest.SUSPEND_ALL : EventRequest.SUSPEND_EVENT_THREAD);
            bp.enable();
            EventSet set = next(vm, BreakpointEvent.class, null);
            erm.deleteEventRequest(bp);
            ThreadReference t = ((LocatableEvent) set.iterator().next()).thread();
            String name = t.name();
            if (!name.startsWith("brief-")) throw new IllegalStateException("stopped in " + name);
            // Held from collection while it is read after its end, as an IDE's threads view
            // holds it: an ended thread nothing else references may be collected, and its
            // reads would then fail with ObjectCollectedException instead of saying ZOMBIE.
            t.disableCollection();
            show(t);
            expect("frames at the stop", true, t.frameCount() >= 2);
            // Each round stops in a thread started since the last: the threads view lists it.
            expect("the stopped thread in the threads view", true, vm.allThreads().contains(t));
            ThreadDeathRequest death = erm.createThreadDeathRequest();
            death.addThreadFilter(t);
            death.setSuspendPolicy(EventRequest.SUSPEND_NONE);
            death.enable();
            set.resume();
            next(vm, ThreadDeathEvent.class, t);
            erm.deleteEventRequest(death);
            // The event comes from the ending thread itself, so it may still be finishing: it
            // is never seen suspended again, and is seen ended within 10 s.
            long until = System.nanoTime() + 10_000_000_000L;
            while (t.status() != ThreadReference.THREAD_STATUS_ZOMBIE && System.nanoTime() < until) {
                expect("suspended after the thread's death event", false, t.isSuspended());
                Thread.sleep(10);
            }
            expect("status after the thread's death", ThreadReference.THREAD_STATUS_ZOMBIE, t.status());
            expect("suspended after the thread's death", false, t.isSuspended());
            expect("name after the thread's death", name, t.name());
            String frames;
            try {
                frames = "read " + t.frames().size() + " frames";
            } catch (IncompatibleThreadStateException e) {
                frames = "refused";
            }
            expect("frames after the thread's death", "refused", frames);
            // Ended: it leaves the threads view once it has exited, within 10 s.
            long gone = System.nanoTime() + 10_000_000_000L;
            while (vm.allThreads().contains(t) && System.nanoTime() < gone) Thread.sleep(10);
            expect("the ended thread in the threads view", false, vm.allThreads().contains(t));
            t.enableCollection();
            say("ok thread-death " + a[i]);
        }
        say("done");
        vm.dispose();
        System.exit(0);
    }

    /// The next event set holding an event of `kind` (of `thread`, if given); others resumed.
    static EventSet next(VirtualMachine vm, Class<? extends Event> kind, ThreadReference thread) throws InterruptedException {
        while (true) {
            EventSet set = vm.eventQueue().remove(60_000);
            if (set == null) throw new IllegalStateException("no " + kind.getSimpleName() + " within 60 s");
            for (Event e : set) {
                if (kind.isInstance(e) && (thread == null || thread.equals(((ThreadDeathEvent) e).thread()))) return set;
            }
            set.resume();
        }
    }

    static void show(ThreadReference t) throws Exception {
        t.status();
        for (StackFrame f : t.frames()) f.location();
        StackFrame top = t.frame(0);
        top.getValues(top.visibleVariables());
        ObjectReference self = top.thisObject();
        for (Value v : self.getValues(self.referenceType().visibleFields()).values()) {
            if (v instanceof StringReference) ((StringReference) v).value();
            if (v instanceof ArrayReference) ((ArrayReference) v).getValues();
        }
        ReferenceType type = top.location().declaringType();
        List<Field> statics = new ArrayList<>();
        for (Field f : type.visibleFields()) {
            if (f.isStatic()) statics.add(f);
        }
        type.getValues(statics);
    }
}
