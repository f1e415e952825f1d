package pqlab.impls;

import static pqlab.impls.Main.checkImpl;
import static pqlab.impls.Main.oneLine;
import static pqlab.impls.Main.scheme;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.bouncycastle.crypto.params.AsymmetricKeyParameter;
import org.bouncycastle.util.encoders.Hex;

import pqlab.impls.Main.BadInput;
import pqlab.impls.Schemes.Kem;
import pqlab.impls.Schemes.Keys;
import pqlab.impls.Schemes.Pke;
import pqlab.impls.Schemes.Scheme;
import pqlab.impls.Schemes.Sig;

/** The {@code serve} command (native/PROTOCOL.md): one JSON request per line on stdin, one answer per line. */
final class Serve {
    private Serve() {}

    static final class Held {
        final Scheme s;
        final Keys keys;

        Held(Scheme s, Keys keys) { this.s = s; this.keys = keys; }
    }

    static void run() {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Map<String, Held> handles = new HashMap<>();
        int next = 1;
        String line;
        while (true) {
            try {
                line = in.readLine();
            } catch (java.io.IOException e) {
                break;
            }
            if (line == null) break;
            if (line.isBlank()) continue;
            Map<String, Object> answer;
            try {
                Object parsed;
                try {
                    parsed = Json.read(line);
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException("a request is one JSON object per line; " + e.getMessage());
                }
                if (!(parsed instanceof Map)) throw new IllegalArgumentException("a request is a JSON object");
                @SuppressWarnings("unchecked")
                Map<String, Object> req = (Map<String, Object>) parsed;
                answer = new LinkedHashMap<>();
                answer.put("ok", true);
                String op = str(req, "op");
                try {
                    checkImpl(str(req, "impl"));
                } catch (BadInput e) {
                    throw new IllegalArgumentException(e.getMessage());
                }
                Scheme s;
                try {
                    s = scheme(str(req, "alg"));
                } catch (BadInput e) {
                    throw new IllegalArgumentException(e.getMessage());
                }
                if (s instanceof Pke)
                    throw new IllegalArgumentException(s.name + " (a " + s.kind + ") is not served: serve answers KEMs and signatures");
                List<String> ops = List.of(s.operations());
                if (!ops.contains(op)) throw new IllegalArgumentException("unknown op '" + op + "' for " + s.name + ": use one of " + String.join(", ", ops));
                List<String> fields = new ArrayList<>(List.of("op", "impl", "alg"));
                fields.addAll(FIELDS.get(op));
                for (String k : req.keySet())
                    if (!fields.contains(k)) throw new IllegalArgumentException("unknown field '" + k + "' for " + op + ": it takes " + String.join(", ", fields));
                switch (op) {
                    case "keygen": {
                        byte[] seed = optHex(req, "seed");
                        if (seed != null && !s.seeded.contains("keygen")) throw new IllegalArgumentException(s.name + " keygen takes no seed here (seeded: " + s.seeded + ")");
                        Keys k = seed == null ? s.keygen() : s.keygenFromSeed(seed);
                        String h = "k" + next++;
                        handles.put(h, new Held(s, k));
                        answer.put("handle", h);
                        answer.put("public_key", Hex.toHexString(s.publicKeyBytes(k)));
                        break;
                    }
                    case "encaps": {
                        Kem kem = (Kem) s;
                        byte[] seed = optHex(req, "seed");
                        if (seed != null && !s.seeded.contains("encaps")) throw new IllegalArgumentException(s.name + " encaps takes no seed here (seeded: " + s.seeded + ")");
                        AsymmetricKeyParameter pub = kem.parsePublicKey(hex(req, "public_key"));
                        byte[][] r = seed == null ? kem.encapsulator(pub).encaps() : kem.encapsFromSeed(pub, seed);
                        answer.put("ciphertext", Hex.toHexString(r[0]));
                        answer.put("shared_secret", Hex.toHexString(r[1]));
                        break;
                    }
                    case "decaps": {
                        Held held = held(handles, req, s);
                        answer.put("shared_secret", Hex.toHexString(((Kem) s).decapsulator(held.keys).decaps(hex(req, "ciphertext"))));
                        break;
                    }
                    case "sign": {
                        Held held = held(handles, req, s);
                        Object det = req.get("deterministic");
                        if (det != null && !(det instanceof Boolean)) throw new IllegalArgumentException("deterministic must be true or false");
                        boolean deterministic = Boolean.TRUE.equals(det);
                        if (deterministic && !s.seeded.contains("sign")) throw new IllegalArgumentException(s.name + " has no deterministic signing here (seeded: " + s.seeded + ")");
                        answer.put("signature", Hex.toHexString(((Sig) s).signer(held.keys, deterministic).sign(hex(req, "message"))));
                        break;
                    }
                    default: {  // verify
                        byte[] pk = hex(req, "public_key"), m = hex(req, "message"), sig = hex(req, "signature");
                        boolean valid;
                        try {
                            valid = ((Sig) s).verifier(s.parsePublicKey(pk)).verify(m, sig);
                        } catch (Exception e) {
                            valid = false;  // a malformed key or signature is not valid
                        }
                        answer.put("valid", valid);
                    }
                }
            } catch (Exception e) {
                answer = new LinkedHashMap<>();
                answer.put("ok", false);
                answer.put("error", e instanceof IllegalArgumentException && e.getMessage() != null ? e.getMessage().replace('\n', ' ') : oneLine(e));
            }
            Main.out.println(Json.write(answer));
            Main.out.flush();
        }
    }

    /** The fields each request takes besides op, impl and alg. */
    static final Map<String, List<String>> FIELDS = Map.of(
        "keygen", List.of("seed"), "encaps", List.of("public_key", "seed"), "decaps", List.of("handle", "ciphertext"),
        "sign", List.of("handle", "message", "deterministic"), "verify", List.of("public_key", "message", "signature"));

    static String str(Map<String, Object> req, String key) {
        Object v = req.get(key);
        if (!(v instanceof String)) throw new IllegalArgumentException("the request needs \"" + key + "\" as a string");
        return (String) v;
    }

    static byte[] hex(Map<String, Object> req, String key) {
        byte[] b = optHex(req, key);
        if (b == null) throw new IllegalArgumentException("the request needs \"" + key + "\" as lowercase hex");
        return b;
    }

    static byte[] optHex(Map<String, Object> req, String key) {
        Object v = req.get(key);
        if (v == null) return null;
        if (!(v instanceof String) || ((String) v).length() % 2 != 0 || !((String) v).matches("[0-9a-f]*"))
            throw new IllegalArgumentException("\"" + key + "\" must be lowercase hex of whole bytes");
        return Hex.decode((String) v);
    }

    static Held held(Map<String, Held> handles, Map<String, Object> req, Scheme s) {
        String h = str(req, "handle");
        Held held = handles.get(h);
        if (held == null) throw new IllegalArgumentException("unknown handle '" + h + "': keygen first");
        if (held.s != s) throw new IllegalArgumentException("handle " + h + " is a " + held.s.name + " key, not " + s.name);
        return held;
    }
}
