// What an IDE reads about a class, made of JDI: it attaches like IntelliJ or Eclipse do
// (SocketAttach), then does what the test types on its standard input:
//   show CLASS               one "data ..." line per fact, then "shown CLASS"
//   redefine CLASS FILE      VirtualMachine.redefineClasses with FILE's bytes -> "redefined CLASS"
//   exit                     VirtualMachine.dispose(), then exit                 -> "bye"
// Each JDI connection asks the VM once per fact (JDI keeps what it was told), so a second
// program asks everything again: the near cache's case.
import com.sun.jdi.*;
import com.sun.jdi.connect.*;
import java.io.*;
import java.nio.file.*;
import java.util.*;

public class ClassData {
    static void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    public static void main(String[] a) throws Exception {
        VirtualMachine vm = Jdi.attach(a[0], a[1]);
        say("attached " + vm.name() + " " + vm.version());
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] w = line.trim().split(" ");
            try {
                switch (w[0]) {
                    case "show":
                        show(vm, w[1]);
                        say("shown " + w[1]);
                        break;
                    case "redefine": {
                        ReferenceType t = vm.classesByName(w[1]).get(0);
                        vm.redefineClasses(Map.of(t, Files.readAllBytes(Paths.get(w[2]))));
                        say("redefined " + w[1]);
                        break;
                    }
                    case "exit":
                        vm.dispose();
                        say("bye");
                        return;
                    default:
                        say("unknown command " + w[0]);
                }
            } catch (Exception e) {
                say("failed " + line + ": " + e);
            }
        }
    }

    static void show(VirtualMachine vm, String name) throws Exception {
        ClassType t = (ClassType) vm.classesByName(name).get(0);
        say("data capabilities redefine=" + vm.canRedefineClasses() + " bytecodes=" + vm.canGetBytecodes()
                + " pool=" + vm.canGetConstantPool());
        say("data sig " + t.signature() + " generic " + t.genericSignature());
        say("data source " + t.sourceName());
        say("data modifiers " + t.modifiers());
        say("data superclass " + t.superclass().name());
        StringBuilder ifs = new StringBuilder();
        for (InterfaceType i : t.interfaces()) ifs.append(' ').append(i.name());
        say("data interfaces" + ifs);
        for (Field f : t.fields()) {
            say("data field " + f.name() + " " + f.signature() + " " + f.genericSignature() + " " + f.modifiers());
        }
        for (Method m : t.methods()) {
            say("data method " + m.name() + m.signature() + " " + m.genericSignature() + " " + m.modifiers());
            if (m.isAbstract() || m.isNative()) continue;
            StringBuilder lines = new StringBuilder();
            for (Location l : m.allLineLocations()) lines.append(' ').append(l.lineNumber());
            say("data lines " + m.name() + lines);
            StringBuilder vars = new StringBuilder();
            for (LocalVariable v : m.variables()) vars.append(' ').append(v.name()).append(':').append(v.signature());
            say("data vars " + m.name() + vars);
            say("data bytecodes " + m.name() + " " + Arrays.toString(m.bytecodes()));
            say("data obsolete " + m.name() + " " + m.isObsolete());
        }
        say("data version " + t.majorVersion() + "." + t.minorVersion());
        say("data constants " + t.constantPoolCount() + " " + Arrays.hashCode(t.constantPool()));
    }
}
