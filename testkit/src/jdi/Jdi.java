// What every JDI program here starts with: attaching to HOST:PORT as an IDE's "remote JVM
// debug" configuration does, through JDI's socket attaching connector. Compiled beside each
// program (testkit/src/jdi.rs JDI_JAVA). The system property jdi.manager names another
// JDI implementation to attach through (Eclipse's: org.eclipse.jdi.internal.
// VirtualMachineManagerImpl, with its jar on the class path).
import com.sun.jdi.Bootstrap;
import com.sun.jdi.VirtualMachine;
import com.sun.jdi.VirtualMachineManager;
import com.sun.jdi.connect.AttachingConnector;
import com.sun.jdi.connect.Connector;
import java.util.Map;

class Jdi {
    static VirtualMachineManager manager() throws Exception {
        String impl = System.getProperty("jdi.manager");
        if (impl == null) return Bootstrap.virtualMachineManager();
        return (VirtualMachineManager) Class.forName(impl).getDeclaredConstructor().newInstance();
    }

    static VirtualMachine attach(String host, String port) throws Exception {
        return attach(host, port, null);
    }

    /** With a timeout in ms for the connection and the handshake (null: the connector's). */
    static VirtualMachine attach(String host, String port, String timeoutMs) throws Exception {
        for (AttachingConnector c : manager().attachingConnectors()) {
            if (!c.name().equals("com.sun.jdi.SocketAttach")) continue;
            Map<String, Connector.Argument> args = c.defaultArguments();
            args.get("hostname").setValue(host);
            args.get("port").setValue(port);
            if (timeoutMs != null) args.get("timeout").setValue(timeoutMs);
            return c.attach(args);
        }
        throw new IllegalStateException("JDI has no socket attaching connector");
    }
}
