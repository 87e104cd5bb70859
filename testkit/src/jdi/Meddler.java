// An IDE that changes what it shows, made of JDI, against `Ledger` (Ledger.java): at each stop
// in Ledger.work (a breakpoint at its first line with the suspend policy given, then two
// steps over, so `sum` and `label` are visible), it first reads what the frames and variables
// views read (frames, visible locals and their values, `this` and its fields, the statics,
// strings, array heads, the thread's name and status), then does one thing that changes the
// VM's truth and reads again, checking what it reads against what its own change must give:
//   set       sets the local `sum`, the field `count`, amounts[0] and the static `title`
//             (StackFrame/ObjectReference/ArrayReference/ClassType.SetValues)
//   invoke    invokes this.work(2) on the stopped thread: `count` and `next` change
//   pop       pops work's frame: the thread's top frame is its caller's
//   redefine  redefines Ledger (REDEFINED: a class file whose toString is SHIFT lines lower
//             and says "Ledger2("), then back (ORIGINAL: Ledger's own class file)
//   second    a second debugger on the same VM reads the stopped thread's `this`, sees the
//             first one's change of `count`, sets `title` and resumes; the first one's stop
//             holds and it reads the second one's `title`
// A read that is not what the change must give is a stale answer: the program says
// "STALE CASE: ..." and exits with 1. Each case ends with "ok CASE" and the stop is resumed.
// Ends with "done".
//   java Meddler HOST PORT all|thread ORIGINAL REDEFINED SHIFT CASE...
import com.sun.jdi.*;
import com.sun.jdi.connect.*;
import com.sun.jdi.event.*;
import com.sun.jdi.request.*;
import java.nio.file.*;
import java.util.*;

public class Meddler {
    static String host, port;
    static int policy;

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

    static VirtualMachine attach() throws Exception {
        return Jdi.attach(host, port);
    }

    public static void main(String[] a) throws Exception {
        host = a[0];
        port = a[1];
        policy = a[2].equals("all") ? EventRequest.SUSPEND_ALL : EventRequest.SUSPEND_EVENT_THREAD;
        byte[] original = Files.readAllBytes(Paths.get(a[3]));
        byte[] redefined = Files.readAllBytes(Paths.get(a[4]));
        int shift = Integer.parseInt(a[5]);
        VirtualMachine vm = attach();
        say("attached " + vm.name());
        for (int i = 6; i < a.length; i++) {
            String what = a[i];
            EventSet set = stop(vm);
            ThreadReference t = ((LocatableEvent) set.iterator().next()).thread();
            show(t);
            switch (what) {
                case "set": set(vm, t); break;
                case "invoke": invoke(t); break;
                case "pop": pop(t); break;
                case "redefine": redefine(vm, t, original, redefined, shift); break;
                case "second": second(vm, t); break;
                default: throw new IllegalArgumentException(what);
            }
            show(t);
            say("ok " + what);
            set.resume();
        }
        say("done");
        vm.dispose();
        System.exit(0);
    }

    /// A stop in Ledger.work two lines in: the breakpoint, then two steps over.
    static EventSet stop(VirtualMachine vm) throws Exception {
        EventRequestManager erm = vm.eventRequestManager();
        ClassType ledger = (ClassType) vm.classesByName("Ledger").get(0);
        BreakpointRequest bp = erm.createBreakpointRequest(ledger.methodsByName("work").get(0).location());
        bp.setSuspendPolicy(policy);
        bp.enable();
        EventSet set = next(vm, BreakpointEvent.class);
        erm.deleteEventRequest(bp);
        ThreadReference t = ((LocatableEvent) set.iterator().next()).thread();
        show(t);
        for (int i = 0; i < 2; i++) {
            StepRequest step = erm.createStepRequest(t, StepRequest.STEP_LINE, StepRequest.STEP_OVER);
            step.addCountFilter(1);
            step.setSuspendPolicy(policy);
            step.enable();
            set.resume();
            set = next(vm, StepEvent.class);
            erm.deleteEventRequest(step);
            show(t);
        }
        return set;
    }

    static EventSet next(VirtualMachine vm, Class<? extends Event> kind) throws InterruptedException {
        while (true) {
            EventSet set = vm.eventQueue().remove(60_000);
            if (set == null) throw new IllegalStateException("no " + kind.getSimpleName() + " within 60 s");
            for (Event e : set) {
                if (kind.isInstance(e)) return set;
            }
            set.resume();
        }
    }

    static LocalVariable local(StackFrame f, String name) throws Exception {
        LocalVariable v = f.visibleVariableByName(name);
        if (v == null) throw new IllegalStateException("no local " + name + " at " + f.location());
        return v;
    }

    static void set(VirtualMachine vm, ThreadReference t) throws Exception {
        StackFrame f = t.frame(0);
        LocalVariable sum = local(f, "sum");
        f.setValue(sum, vm.mirrorOf(777));
        expect("set local", 777, t.frame(0).getValue(sum));
        expect("set local, all locals", 777, t.frame(0).getValues(t.frame(0).visibleVariables()).get(sum));
        ObjectReference self = t.frame(0).thisObject();
        Field count = self.referenceType().fieldByName("count");
        self.setValue(count, vm.mirrorOf(55));
        expect("set field", 55, self.getValue(count));
        expect("set field, all fields", 55, self.getValues(self.referenceType().visibleFields()).get(count));
        ArrayReference amounts = (ArrayReference) self.getValue(self.referenceType().fieldByName("amounts"));
        amounts.setValue(0, vm.mirrorOf(99));
        expect("set array element", "[99, 20, 30, 40]", amounts.getValues(0, 4));
        ClassType ledger = (ClassType) self.referenceType();
        Field title = ledger.fieldByName("title");
        ledger.setValue(title, vm.mirrorOf("meddled"));
        expect("set static", "\"meddled\"", ledger.getValue(title));
        expect("set static, all statics", "\"meddled\"", ledger.getValues(statics(ledger)).get(title));
        ledger.setValue(title, vm.mirrorOf("ledger"));
        expect("static set back", "\"ledger\"", ledger.getValue(title));
    }

    static List<Field> statics(ReferenceType type) {
        List<Field> s = new ArrayList<>();
        for (Field f : type.visibleFields()) {
            if (f.isStatic()) s.add(f);
        }
        return s;
    }

    static void invoke(ThreadReference t) throws Exception {
        ObjectReference self = t.frame(0).thisObject();
        ReferenceType type = self.referenceType();
        Field count = type.fieldByName("count");
        Field next = type.fieldByName("next");
        expect("count before", 0, self.getValue(count));
        expect("next before", null, self.getValue(next));
        Method work = type.methodsByName("work").get(0);
        int frames = t.frameCount();
        Value r = self.invokeMethod(t, work, List.of(t.virtualMachine().mirrorOf(2)), ObjectReference.INVOKE_SINGLE_THREADED);
        // work(2): sum 100, count 100 / 2, next a Ledger of "ann/2", returns 100 + 5 letters.
        expect("invoke's result", 105, r);
        expect("count after invoke", 50, self.getValue(count));
        expect("count after invoke, all fields", 50, self.getValues(type.visibleFields()).get(count));
        ObjectReference made = (ObjectReference) self.getValue(next);
        if (made == null) expect("next after invoke", "a Ledger", null);
        expect("next's owner", "\"ann/2\"", made.getValue(made.referenceType().fieldByName("owner")));
        expect("frames after invoke", frames, t.frameCount());
        expect("top after invoke", "work", t.frame(0).location().method().name());
    }

    static void pop(ThreadReference t) throws Exception {
        int frames = t.frameCount();
        String caller = t.frame(1).location().method().name();
        t.popFrames(t.frame(0));
        expect("frames after pop", frames - 1, t.frameCount());
        expect("frames after pop, listed", frames - 1, t.frames().size());
        expect("top after pop", caller, t.frame(0).location().method().name());
        expect("this after pop", null, t.frame(0).thisObject());
    }

    static void redefine(VirtualMachine vm, ThreadReference t, byte[] original, byte[] bytes, int shift) throws Exception {
        ClassType ledger = (ClassType) t.frame(0).location().declaringType();
        ObjectReference self = t.frame(0).thisObject();
        int line = ledger.methodsByName("toString").get(0).allLineLocations().get(0).lineNumber();
        int at = t.frame(0).location().lineNumber();
        expect("toString before", "\"Ledger(ann, 0)\"", self.invokeMethod(t, ledger.methodsByName("toString").get(0), List.of(), ObjectReference.INVOKE_SINGLE_THREADED));
        vm.redefineClasses(Map.of(ledger, bytes));
        Method toString = ledger.methodsByName("toString").get(0);
        expect("toString's first line after redefine", line + shift, toString.allLineLocations().get(0).lineNumber());
        expect("toString after redefine", "\"Ledger2(ann, 0)\"", self.invokeMethod(t, toString, List.of(), ObjectReference.INVOKE_SINGLE_THREADED));
        expect("the stop's line after redefine", at, t.frame(0).location().lineNumber());
        expect("owner after redefine", "\"ann\"", self.getValue(ledger.fieldByName("owner")));
        vm.redefineClasses(Map.of(ledger, original));
        toString = ledger.methodsByName("toString").get(0);
        expect("toString's first line redefined back", line, toString.allLineLocations().get(0).lineNumber());
        expect("toString redefined back", "\"Ledger(ann, 0)\"", self.invokeMethod(t, toString, List.of(), ObjectReference.INVOKE_SINGLE_THREADED));
    }

    static void second(VirtualMachine vm, ThreadReference t) throws Exception {
        VirtualMachine other = attach();
        ThreadReference seen = null;
        for (ThreadReference x : other.allThreads()) {
            if (x.name().equals(t.name())) seen = x;
        }
        if (seen == null) throw new IllegalStateException("the second debugger sees no " + t.name());
        ObjectReference mine = t.frame(0).thisObject();
        Field count = mine.referenceType().fieldByName("count");
        ObjectReference theirs = seen.frame(0).thisObject();
        Field theirCount = theirs.referenceType().fieldByName("count");
        expect("the second debugger's count", 0, theirs.getValue(theirCount));
        mine.setValue(count, vm.mirrorOf(4242));
        expect("the second debugger's count after the first one's change", 4242, theirs.getValue(theirCount));
        expect("the second debugger's fields after the first one's change", 4242, theirs.getValues(theirs.referenceType().visibleFields()).get(theirCount));
        ClassType theirLedger = (ClassType) theirs.referenceType();
        theirLedger.setValue(theirLedger.fieldByName("title"), other.mirrorOf("from B"));
        other.resume();
        ClassType ledger = (ClassType) mine.referenceType();
        Field title = ledger.fieldByName("title");
        expect("the first debugger's title after the second one's change", "\"from B\"", ledger.getValue(title));
        expect("the first debugger's statics after the second one's change", "\"from B\"", ledger.getValues(statics(ledger)).get(title));
        expect("the first debugger's stop after the second one's resume", true, t.isSuspended());
        expect("the first debugger's count", 4242, mine.getValue(count));
        expect("the first debugger's top frame", "work", t.frame(0).location().method().name());
        ledger.setValue(title, vm.mirrorOf("ledger"));
        other.dispose();
    }

    /// What the views read; the values are checked by the cases, the reads are what an IDE does.
    static void show(ThreadReference t) throws Exception {
        if (t.name().isEmpty()) throw new IllegalStateException("no thread name");
        t.status();
        for (StackFrame f : t.frames()) f.location();
        StackFrame top = t.frame(0);
        List<LocalVariable> vars = top.visibleVariables();
        List<Value> seen = new ArrayList<>(top.getValues(vars).values());
        ObjectReference self = top.thisObject();
        if (self != null) seen.addAll(self.getValues(self.referenceType().visibleFields()).values());
        ReferenceType type = top.location().declaringType();
        seen.addAll(type.getValues(statics(type)).values());
        for (Value v : seen) {
            if (v instanceof StringReference) ((StringReference) v).value();
            if (v instanceof ArrayReference) {
                ArrayReference r = (ArrayReference) v;
                int n = r.length();
                if (n > 0) r.getValues(0, Math.min(n, 100));
            }
        }
    }
}
