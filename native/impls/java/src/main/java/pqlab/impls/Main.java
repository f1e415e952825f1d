package pqlab.impls;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.bouncycastle.jce.provider.BouncyCastleProvider;

import pqlab.impls.Schemes.Scheme;

/**
 * pqlab's Java program (native/PROTOCOL.md, protocol 2): Bouncy Castle timed in Java's own loop, for notebook 01's
 * rows (AES-256-CBC, RSA-2048, SPHINCS+/SLH-DSA: cold calls and warm samples) and notebook 08's (ML-KEM, ML-DSA,
 * SLH-DSA, classical).  {@code list}, {@code time --impl bouncycastle --alg NAME ...} and {@code serve}.
 *
 * This file: the entry point, what the program is ({@code list}) and the checks of an implementation and algorithm
 * name the commands share.  {@link Time}: the {@code time} command (its arguments, first calls, setup and
 * document); {@link Timer} and {@link Batch}: one operation's sampling; {@link Serve}: the {@code serve} command.
 */
public final class Main {
    static final int PROTOCOL = 2;
    static final String PROGRAM = "java";
    static final List<String> COMMANDS = List.of("time", "serve");
    static final String IMPL = "bouncycastle";

    /** Bad input: exit 2 with {"error": ...}. */
    static final class BadInput extends RuntimeException {
        private static final long serialVersionUID = 1L;

        BadInput(String why) { super(why); }
    }

    static PrintStream out;

    public static void main(String[] argv) {
        out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);
        int status;
        try {
            if (argv.length == 0) throw new BadInput("no command: run with list, time or serve (see native/PROTOCOL.md)");
            switch (argv[0]) {
                case "list":
                    if (argv.length > 1) throw new BadInput("list takes no arguments; got " + String.join(" ", Arrays.copyOfRange(argv, 1, argv.length)));
                    out.println(Json.write(list()));
                    status = 0;
                    break;
                case "time":
                    status = Time.run(Arrays.copyOfRange(argv, 1, argv.length));
                    break;
                case "serve":
                    if (argv.length > 1) throw new BadInput("serve takes no arguments; it reads one JSON request per line on stdin");
                    Serve.run();
                    status = 0;
                    break;
                default:
                    throw new BadInput("unknown command '" + argv[0] + "': use list, time or serve (native/PROTOCOL.md)");
            }
        } catch (BadInput e) {
            out.println(Json.write(Map.of("error", e.getMessage())));
            status = 2;
        }
        out.flush();
        System.exit(status);
    }

    // ------------------------------------------------------------------------------------------ about

    private static String version;

    /** The version of the Bouncy Castle provider on the class path, read at run time (e.g. "1.87"). */
    static String version() {
        if (version == null) version = new BouncyCastleProvider().getVersionStr();
        return version;
    }

    static String toolchain() {
        return "java " + System.getProperty("java.version") + " (" + System.getProperty("java.vm.name") + ")";
    }

    /** The Java runtime, for the time document (the first study's rows name it). */
    static Map<String, Object> runtime() {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("java_version", System.getProperty("java.version"));
        r.put("java_runtime", System.getProperty("java.runtime.name") + " " + System.getProperty("java.runtime.version"));
        r.put("jvm", System.getProperty("java.vm.name") + " " + System.getProperty("java.vm.version") + " ("
            + System.getProperty("java.vm.info") + ")");
        r.put("jvm_args", java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments());
        r.put("available_processors", Runtime.getRuntime().availableProcessors());
        return r;
    }

    /** The algorithms this jar can make (a group compiled only in part is left out, with a note on stderr). */
    static List<String> usable() {
        List<String> ok = new ArrayList<>();
        for (String name : Schemes.NAMES) {
            try {
                if (Schemes.get(name) != null) ok.add(name);
            } catch (LinkageError | IllegalStateException e) {
                System.err.println("java: leaving out " + name + ": " + oneLine(e));
            }
        }
        return ok;
    }

    static Map<String, Object> list() {
        Map<String, Object> impl = new LinkedHashMap<>();
        impl.put("implementation", IMPL);
        impl.put("version", version());
        impl.put("package", "org.bouncycastle:bcprov-jdk18on");
        impl.put("provenance", "https://central.sonatype.com/artifact/org.bouncycastle/bcprov-jdk18on/" + version());
        impl.put("options", "pure Java; JIT: " + System.getProperty("java.vm.name") + " " + System.getProperty("java.vm.version")
            + "; lightweight API (org.bouncycastle.crypto); SecureRandom " + Schemes.RNG.getAlgorithm());
        List<Object> algs = new ArrayList<>();
        for (String name : usable()) {
            Scheme s = Schemes.get(name);
            Map<String, Object> a = new LinkedHashMap<>();
            a.put("implementation", IMPL);
            a.put("algorithm", name);
            a.put("kind", s.kind);
            a.put("seeded", s.seeded);
            algs.add(a);
        }
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("protocol", PROTOCOL);
        doc.put("program", PROGRAM);
        doc.put("language", "Java");
        doc.put("toolchain", toolchain());
        doc.put("commands", COMMANDS);
        doc.put("implementations", List.of(impl));
        doc.put("algorithms", algs);
        return doc;
    }

    static void checkImpl(String impl) {
        if (IMPL.equals(impl)) return;
        throw new BadInput("unknown implementation '" + impl + "': this program has only " + IMPL
            + (Schemes.closeMatches(impl, List.of(IMPL)).isEmpty() ? "" : " (did you mean " + IMPL + "?)"));
    }

    static Scheme scheme(String alg) {
        Scheme s;
        try {
            s = Schemes.get(alg);
        } catch (LinkageError | IllegalStateException e) {
            throw new BadInput(alg + " is not usable in this build of Bouncy Castle " + version() + ": " + oneLine(e));
        }
        if (s != null) return s;
        List<String> close = Schemes.closeMatches(alg, Schemes.NAMES);
        throw new BadInput("unknown algorithm '" + alg + "' for " + IMPL + ": "
            + (close.isEmpty() ? "use one of " + String.join(", ", Schemes.NAMES) : "did you mean " + String.join(", ", close) + "?"));
    }

    static String oneLine(Throwable e) {
        String m = e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage());
        return m.replace('\n', ' ').replace('\r', ' ');
    }
}
