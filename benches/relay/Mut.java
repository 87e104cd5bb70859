// Sequential mutations as the JDK's JDI test UTF8Test makes them, ~57,000 of which no near
// answer serves: for each string, VirtualMachine.CreateString (vm.mirrorOf), the static
// String field Walk.label set to it (ClassType.setValue: JDI looks the field's type up by
// name first, a ClassesBySignature, then ClassType.SetValues), read back
// (ReferenceType.GetValues) and its value read (StringReference.Value), then compared with
// the string made. JDI waits for each reply before its next command. The VM runs all along
// (nothing is suspended), as in UTF8Test.
//
// The strings vary: a piece of a fixed list (ASCII, a NUL, two- and three-byte characters,
// a surrogate pair), the count, and one UTF-16 code unit walking through 1..0xFFFF (lone
// surrogates included: JDWP's modified UTF-8 carries them).
//
// Prints "ready" after attach and a warm-up, then waits for a line on standard input before
// it times COUNT strings (the harness reads its meters then); prints
//   chunk_ns=A,B,C...   (each CHUNK strings)
//   measured strings=N mismatches=M ns=T [first=INDEX]
// then waits for another line, puts the field's first value back and prints "done", and
// waits for standard input to close before it exits (the harness stops a relay first, so the
// VM sees one disconnect).
//   java Mut HOST PORT COUNT CHUNK WARM
import com.sun.jdi.*;
import java.io.*;

public class Mut {
    static final String[] PIECES = {
        "Hi!", "a\u0000b", "\u007f\u0080", "\u07ff\u0800", "caf\u00e9", "\u65e5\u672c\u8a9e",
        "\ud83d\ude00", "\uffff", "tab\tnew\nline", "",
    };

    static String make(int i) {
        char c = (char) (1 + (i % 0xFFFF));
        return PIECES[i % PIECES.length] + i + c;
    }

    public static void main(String[] a) throws Exception {
        int count = Integer.parseInt(a[2]);
        int chunk = Integer.parseInt(a[3]);
        int warm = Integer.parseInt(a[4]);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        VirtualMachine vm = Jdi.attach(a[0], a[1], "60000");
        ClassType walk = (ClassType) vm.classesByName("Walk").get(0);
        Field label = walk.fieldByName("label");
        Value first = walk.getValue(label);
        for (int i = 0; i < warm; i++) {
            if (!one(vm, walk, label, make(count + i))) throw new IllegalStateException("warm-up string " + i + " read back otherwise");
        }
        System.out.println("ready");
        System.out.flush();
        in.readLine();
        long[] chunks = new long[(count + chunk - 1) / chunk];
        int mismatches = 0, firstBad = -1;
        long t0 = System.nanoTime(), c0 = t0;
        for (int i = 0; i < count; i++) {
            if (!one(vm, walk, label, make(i))) {
                if (firstBad < 0) firstBad = i;
                mismatches++;
            }
            if ((i + 1) % chunk == 0 || i + 1 == count) {
                long now = System.nanoTime();
                chunks[i / chunk] = now - c0;
                c0 = now;
            }
        }
        long ns = System.nanoTime() - t0;
        StringBuilder s = new StringBuilder("chunk_ns=");
        for (int k = 0; k < chunks.length; k++) s.append(k == 0 ? "" : ",").append(chunks[k]);
        System.out.println(s);
        System.out.println("measured strings=" + count + " mismatches=" + mismatches + " ns=" + ns + (firstBad >= 0 ? " first=" + firstBad : ""));
        System.out.flush();
        in.readLine();
        walk.setValue(label, first);
        System.out.println("done");
        System.out.flush();
        while (in.readLine() != null) { }
    }

    /** One string made, set, read back and compared, as UTF8Test does. */
    static boolean one(VirtualMachine vm, ClassType walk, Field label, String want) throws Exception {
        StringReference made = vm.mirrorOf(want);
        walk.setValue(label, made);
        Value got = walk.getValue(label);
        return got instanceof StringReference && ((StringReference) got).value().equals(want);
    }
}
