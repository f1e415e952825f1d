package pqlab.impls;

import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.Provider;
import java.security.interfaces.RSAPublicKey;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.crypto.Cipher;
import javax.crypto.KeyGenerator;
import javax.crypto.SecretKey;
import javax.crypto.spec.IvParameterSpec;

import org.bouncycastle.asn1.pkcs.PrivateKeyInfo;
import org.bouncycastle.jce.provider.BouncyCastleProvider;

import pqlab.impls.Schemes.Keys;
import pqlab.impls.Schemes.Pke;

/**
 * The first study's classical algorithms (notebook 01), through Bouncy Castle's JCA provider as the study used
 * them: AES-256-CBC (PKCS#5 padding, IV drawn by the cipher) and RSA-2048 encryption (PKCS#1 v1.5).  The timed
 * call is init(key) + the operation, as in the study; the JCA objects are made once, before anything is timed.
 */
final class Study {
    private Study() {}

    static final Provider BC = new BouncyCastleProvider();

    static final List<String> NAMES = List.of("AES-256-CBC", "RSA-2048");

    static Pke make(String name) throws Exception {
        return name.equals("AES-256-CBC") ? new Aes() : new RsaEncryption();
    }

    /** A JCA scheme of provider BC: one Cipher of the transformation to encrypt with, one to decrypt with. */
    abstract static class Jca extends Pke {
        final Cipher enc, dec;

        Jca(String name, String kind, String skFormat, String transformation, String classes) throws Exception {
            super(name, kind, skFormat);
            this.api = "JCA " + transformation + " (provider BC)";
            this.classes = classes;
            enc = Cipher.getInstance(transformation, BC);
            dec = Cipher.getInstance(transformation, BC);
        }
    }

    static final class Aes extends Jca {
        final KeyGenerator kg;

        Aes() throws Exception {
            super("AES-256-CBC", "cipher", "raw", "AES/CBC/PKCS5Padding",
                "javax.crypto.KeyGenerator(AES, 256) + javax.crypto.Cipher(AES/CBC/PKCS5Padding), provider BC; "
                + "IV drawn by the cipher");
            kg = KeyGenerator.getInstance("AES", BC);
            kg.init(256, Schemes.RNG);
        }

        Keys keygen() { return new Keys(kg.generateKey()); }

        byte[] secretKeyBytes(Keys k) { return ((SecretKey) k.jca).getEncoded(); }

        /** IV || ciphertext. */
        byte[] encrypt(Keys k, byte[] msg) throws Exception {
            enc.init(Cipher.ENCRYPT_MODE, (SecretKey) k.jca, Schemes.RNG);
            byte[] iv = enc.getIV(), out = new byte[iv.length + enc.getOutputSize(msg.length)];
            System.arraycopy(iv, 0, out, 0, iv.length);
            int n = enc.doFinal(msg, 0, msg.length, out, iv.length);
            return n + iv.length == out.length ? out : Arrays.copyOf(out, n + iv.length);
        }

        byte[] decrypt(Keys k, byte[] out) throws Exception {
            dec.init(Cipher.DECRYPT_MODE, (SecretKey) k.jca, new IvParameterSpec(out, 0, 16));
            return dec.doFinal(out, 16, out.length - 16);
        }

        Map<String, Object> extraSizes(Keys k, byte[] out) {
            Map<String, Object> s = new LinkedHashMap<>();
            s.put("symmetric_key_bytes", secretKeyBytes(k).length);
            s.put("symmetric_key_format", "raw key bytes (SecretKey.getEncoded())");
            s.put("iv_bytes", 16);
            s.put("ciphertext_bytes", out.length - 16);
            s.put("ciphertext_format", "CBC ciphertext with PKCS#5 padding, IV not counted");
            return s;
        }
    }

    static final class RsaEncryption extends Jca {
        final KeyPairGenerator kpg;

        RsaEncryption() throws Exception {
            super("RSA-2048", "pke", "PKCS#8 DER", "RSA/ECB/PKCS1Padding",
                "java.security.KeyPairGenerator(RSA, 2048) + javax.crypto.Cipher(RSA/ECB/PKCS1Padding), provider BC");
            kpg = KeyPairGenerator.getInstance("RSA", BC);
            kpg.initialize(2048, Schemes.RNG);
        }

        Keys keygen() { return new Keys(kpg.generateKeyPair()); }

        /** X.509 SubjectPublicKeyInfo, DER. */
        byte[] publicKeyBytes(Keys k) { return ((KeyPair) k.jca).getPublic().getEncoded(); }

        byte[] secretKeyBytes(Keys k) { return ((KeyPair) k.jca).getPrivate().getEncoded(); }

        byte[] encrypt(Keys k, byte[] msg) throws Exception {
            enc.init(Cipher.ENCRYPT_MODE, ((KeyPair) k.jca).getPublic(), Schemes.RNG);
            return enc.doFinal(msg);
        }

        byte[] decrypt(Keys k, byte[] ct) throws Exception {
            dec.init(Cipher.DECRYPT_MODE, ((KeyPair) k.jca).getPrivate(), Schemes.RNG);
            return dec.doFinal(ct);
        }

        Map<String, Object> extraSizes(Keys k, byte[] out) throws Exception {
            KeyPair kp = (KeyPair) k.jca;
            RSAPublicKey pub = (RSAPublicKey) kp.getPublic();
            byte[] pkcs1 = PrivateKeyInfo.getInstance(kp.getPrivate().getEncoded()).parsePrivateKey().toASN1Primitive()
                .getEncoded("DER");
            Map<String, Object> s = new LinkedHashMap<>();
            s.put("modulus_bits", pub.getModulus().bitLength());
            s.put("public_exponent", pub.getPublicExponent().longValue());
            s.put("public_key_encoded_bytes", pub.getEncoded().length);
            s.put("public_key_encoded_format", "X.509 SubjectPublicKeyInfo, DER (getEncoded())");
            s.put("public_key_raw_bytes", (pub.getModulus().bitLength() + 7) / 8);
            s.put("public_key_raw_format", "modulus n, big-endian (exponent not counted)");
            s.put("secret_key_encoded_bytes", kp.getPrivate().getEncoded().length);
            s.put("secret_key_encoded_format", "PKCS#8 PrivateKeyInfo, DER (getEncoded())");
            s.put("secret_key_raw_bytes", pkcs1.length);
            s.put("secret_key_raw_format", "PKCS#1 RSAPrivateKey, DER (CRT form)");
            s.put("ciphertext_bytes", out.length);
            return s;
        }
    }
}
