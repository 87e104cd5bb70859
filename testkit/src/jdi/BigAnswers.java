import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Big answers for a thin link: CLASSES classes with a long name each (an application's
 * generated handlers: an AllClassesWithGeneric of about 100 bytes a class), defined at run
 * time from class files made here (javac on 10,000 files would take minutes), and a string
 * of LEN chars in the static field `text`: order records as JSON lines, the kind of text a
 * debugger shows a large value of. Prints "bench debuggee ready" once both are there.
 *
 * Usage: BigAnswers CLASSES LEN
 */
public class BigAnswers {
    static String text;
    static final List<Class<?>> KEEP = new ArrayList<>();
    static final String PACKAGE = "com/example/shop/orders/internal/generated/handlers/";

    /** A class file for an empty public class `name` (internal form) extending Object. */
    static byte[] classFile(String name) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        DataOutputStream d = new DataOutputStream(b);
        d.writeInt(0xCAFEBABE);
        d.writeShort(0);
        d.writeShort(52);
        d.writeShort(5);
        d.writeByte(7);
        d.writeShort(2);
        d.writeByte(1);
        d.writeUTF(name);
        d.writeByte(7);
        d.writeShort(4);
        d.writeByte(1);
        d.writeUTF("java/lang/Object");
        d.writeShort(0x0021);
        d.writeShort(1);
        d.writeShort(3);
        d.writeShort(0);
        d.writeShort(0);
        d.writeShort(0);
        d.writeShort(0);
        return b.toByteArray();
    }

    static final class Loader extends ClassLoader {
        Loader() {
            super(BigAnswers.class.getClassLoader());
        }

        /** Defines `name` and initializes it: a debugger's class list holds prepared classes only. */
        Class<?> define(String name) throws IOException, ClassNotFoundException {
            byte[] b = classFile(name);
            Class<?> c = defineClass(name.replace('/', '.'), b, 0, b.length);
            return Class.forName(c.getName(), true, this);
        }
    }

    public static void main(String[] args) throws Exception {
        int classes = Integer.parseInt(args[0]);
        int len = Integer.parseInt(args[1]);
        Loader loader = new Loader();
        for (int i = 0; i < classes; i++) {
            KEEP.add(loader.define(String.format("%sOrderEventHandler%05d", PACKAGE, i)));
        }
        StringBuilder s = new StringBuilder(len + 200);
        Random r = new Random(42);
        for (int i = 0; s.length() < len; i++) {
            s.append("{\"id\":").append(100000 + i)
                .append(",\"customer\":\"customer-").append(r.nextInt(5000))
                .append("\",\"amount\":").append(r.nextInt(100000) / 100.0)
                .append(",\"status\":\"").append(i % 7 == 0 ? "REFUNDED" : "PAID")
                .append("\"}\n");
        }
        s.setLength(len);
        text = s.toString();
        System.out.println("bench debuggee ready " + classes);
        System.out.flush();
        while (true) {
            Thread.sleep(1000);
        }
    }
}
