package pqlab.impls;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Minimal JSON: a writer for maps, lists, strings, numbers, booleans and null, and a strict reader of one value. */
final class Json {
    private Json() {}

    static String write(Object v) {
        StringBuilder b = new StringBuilder();
        write(b, v);
        return b.toString();
    }

    static void write(StringBuilder b, Object v) {
        if (v == null) {
            b.append("null");
        } else if (v instanceof Map) {
            b.append('{');
            String sep = "";
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                b.append(sep);
                write(b, String.valueOf(e.getKey()));
                b.append(": ");
                write(b, e.getValue());
                sep = ", ";
            }
            b.append('}');
        } else if (v instanceof List) {
            b.append('[');
            String sep = "";
            for (Object o : (List<?>) v) {
                b.append(sep);
                write(b, o);
                sep = ", ";
            }
            b.append(']');
        } else if (v instanceof double[]) {
            b.append('[');
            String sep = "";
            for (double d : (double[]) v) {
                b.append(sep);
                write(b, d);
                sep = ", ";
            }
            b.append(']');
        } else if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            b.append(Double.isFinite(d) ? Double.toString(d) : "null");
        } else if (v instanceof Number || v instanceof Boolean) {
            b.append(v);
        } else {
            String s = v.toString();
            b.append('"');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                if (c == '"' || c == '\\') b.append('\\').append(c);
                else if (c == '\n') b.append("\\n");
                else if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
                else b.append(c);
            }
            b.append('"');
        }
    }

    /** One JSON value (objects as LinkedHashMap, arrays as ArrayList, numbers as Double); IllegalArgumentException
     *  on anything else, including trailing text. */
    static Object read(String text) {
        Reader r = new Reader(text);
        r.space();
        Object v = r.value();
        r.space();
        if (r.at < text.length()) throw r.fail("unexpected text after the value");
        return v;
    }

    private static final class Reader {
        final String s;
        int at;

        Reader(String s) { this.s = s; }

        IllegalArgumentException fail(String why) {
            return new IllegalArgumentException("bad JSON at character " + at + ": " + why);
        }

        void space() {
            while (at < s.length() && " \t\r\n".indexOf(s.charAt(at)) >= 0) at++;
        }

        char peek() {
            if (at >= s.length()) throw fail("unexpected end");
            return s.charAt(at);
        }

        void expect(String word) {
            if (!s.startsWith(word, at)) throw fail("expected " + word);
            at += word.length();
        }

        Object value() {
            char c = peek();
            switch (c) {
                case '{': return object();
                case '[': return array();
                case '"': return string();
                case 't': expect("true"); return Boolean.TRUE;
                case 'f': expect("false"); return Boolean.FALSE;
                case 'n': expect("null"); return null;
                default:
                    if (c == '-' || (c >= '0' && c <= '9')) return number();
                    throw fail("unexpected character '" + c + "'");
            }
        }

        Map<String, Object> object() {
            Map<String, Object> m = new LinkedHashMap<>();
            at++;
            space();
            if (peek() == '}') { at++; return m; }
            while (true) {
                space();
                if (peek() != '"') throw fail("expected a key");
                String k = string();
                space();
                if (peek() != ':') throw fail("expected ':'");
                at++;
                space();
                if (m.containsKey(k)) throw fail("duplicate key " + k);
                m.put(k, value());
                space();
                char c = peek();
                at++;
                if (c == '}') return m;
                if (c != ',') throw fail("expected ',' or '}'");
            }
        }

        List<Object> array() {
            List<Object> l = new ArrayList<>();
            at++;
            space();
            if (peek() == ']') { at++; return l; }
            while (true) {
                space();
                l.add(value());
                space();
                char c = peek();
                at++;
                if (c == ']') return l;
                if (c != ',') throw fail("expected ',' or ']'");
            }
        }

        String string() {
            StringBuilder b = new StringBuilder();
            at++;
            while (true) {
                char c = peek();
                at++;
                if (c == '"') return b.toString();
                if (c < 0x20) throw fail("control character in a string");
                if (c != '\\') { b.append(c); continue; }
                char e = peek();
                at++;
                switch (e) {
                    case '"': case '\\': case '/': b.append(e); break;
                    case 'b': b.append('\b'); break;
                    case 'f': b.append('\f'); break;
                    case 'n': b.append('\n'); break;
                    case 'r': b.append('\r'); break;
                    case 't': b.append('\t'); break;
                    case 'u':
                        if (at + 4 > s.length()) throw fail("short \\u escape");
                        try {
                            b.append((char) Integer.parseInt(s.substring(at, at + 4), 16));
                        } catch (NumberFormatException x) {
                            throw fail("bad \\u escape");
                        }
                        at += 4;
                        break;
                    default: throw fail("bad escape \\" + e);
                }
            }
        }

        Double number() {
            int start = at;
            while (at < s.length() && "+-0123456789.eE".indexOf(s.charAt(at)) >= 0) at++;
            try {
                return Double.valueOf(s.substring(start, at));
            } catch (NumberFormatException x) {
                throw fail("bad number");
            }
        }
    }
}
