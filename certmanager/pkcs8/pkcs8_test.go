package pkcs8

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type equaler interface{ Equal(crypto.PrivateKey) bool }

func TestEncryptWritesPBES2WithPBKDF2SHA256AndAES256CBC(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Encrypt(key, []byte("abcdefghijkl"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(out, []byte("-----BEGIN ENCRYPTED PRIVATE KEY-----\n")) || !bytes.HasSuffix(out, []byte("-----END ENCRYPTED PRIVATE KEY-----\n")) {
		t.Fatalf("unexpected PEM framing:\n%s", out)
	}
	block, _ := pem.Decode(out)
	var info encryptedPrivateKeyInfo
	if _, err := asn1.Unmarshal(block.Bytes, &info); err != nil {
		t.Fatal(err)
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		t.Fatalf("algorithm %v, want PBES2", info.Algorithm.Algorithm)
	}
	var params pbes2Params
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		t.Fatal(err)
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(params.KeyDerivationFunc.Parameters.FullBytes, &kdf); err != nil {
		t.Fatal(err)
	}
	if !params.KeyDerivationFunc.Algorithm.Equal(oidPBKDF2) || !kdf.PRF.Algorithm.Equal(oidHMACSHA256) ||
		kdf.IterationCount != Iterations || len(kdf.Salt) != saltSize {
		t.Fatalf("kdf = %v %+v", params.KeyDerivationFunc.Algorithm, kdf)
	}
	if !params.EncryptionScheme.Algorithm.Equal(oidAES256CBC) {
		t.Fatalf("cipher %v, want aes-256-cbc", params.EncryptionScheme.Algorithm)
	}
	if bytes.Contains(out, []byte("abcdefghijkl")) {
		t.Fatal("password appears in output")
	}
	got, err := Decrypt(out, []byte("abcdefghijkl"))
	if err != nil {
		t.Fatal(err)
	}
	if !got.(equaler).Equal(key) {
		t.Fatal("round trip changed the key")
	}
	// Two encryptions differ (fresh salt and IV).
	again, _ := Encrypt(key, []byte("abcdefghijkl"))
	if bytes.Equal(out, again) {
		t.Fatal("salt/IV reused")
	}
}

func TestDecryptRejectsWrongPasswordAndCorruptData(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	out, err := Encrypt(key, []byte("abcdefghijkl"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decrypt(out, []byte("abcdefghijkm")); !errors.Is(err, ErrIncorrectPassword) {
		t.Fatalf("wrong password: err = %v", err)
	}
	if _, err := Decrypt(out, nil); err == nil {
		t.Fatal("empty password accepted")
	}
	block, _ := pem.Decode(out)
	for name, mutate := range map[string]func([]byte) []byte{
		"truncated":     func(b []byte) []byte { return b[:len(b)-16] },
		"flipped block": func(b []byte) []byte { c := bytes.Clone(b); c[len(c)-20] ^= 0xff; return c },
		"garbage":       func([]byte) []byte { return []byte{0x30, 0x03, 0x02, 0x01, 0x00} },
	} {
		t.Run(name, func(t *testing.T) {
			bad := pem.EncodeToMemory(&pem.Block{Type: EncryptedBlockType, Bytes: mutate(block.Bytes)})
			if _, err := Decrypt(bad, []byte("abcdefghijkl")); err == nil {
				t.Fatal("corrupt key accepted")
			}
		})
	}
	if _, err := Decrypt([]byte("not pem"), []byte("x")); err == nil {
		t.Fatal("non-PEM accepted")
	}
	if _, err := Encrypt(key, nil); err == nil {
		t.Fatal("empty password accepted for encryption")
	}
}

// Fixtures written by `openssl pkcs8 -topk8 -v2 <cipher> -v2prf <prf>`
// (OpenSSL 3.0) from plain.pem, password "abcdefghijkl".
func TestDecryptReadsOpenSSLVariants(t *testing.T) {
	plainPEM, err := os.ReadFile("testdata/plain.pem")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Decrypt(plainPEM, nil)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("testdata/enc-*.pem")
	if len(files) != 4 {
		t.Fatalf("fixtures: %v", files)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".pem"), func(t *testing.T) {
			data, _ := os.ReadFile(f)
			got, err := Decrypt(data, []byte("abcdefghijkl"))
			if err != nil {
				t.Fatal(err)
			}
			if !got.(equaler).Equal(want) {
				t.Fatal("decrypted key differs from plain.pem")
			}
			if _, err := Decrypt(data, []byte("wrong-passwd")); err == nil {
				t.Fatal("wrong password accepted")
			}
		})
	}
	ecEnc, _ := os.ReadFile("testdata/ec-enc.pem")
	ecPlain, _ := os.ReadFile("testdata/ec-plain.pem")
	a, err := Decrypt(ecEnc, []byte("abcdefghijkl"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Decrypt(ecPlain, nil)
	if err != nil || !a.(equaler).Equal(b) {
		t.Fatalf("EC key: %v", err)
	}
}

func TestMarshalPlainWritesUnencryptedPKCS8(t *testing.T) {
	key, _ := rsa.GenerateKey(rand.Reader, 1024)
	out, err := MarshalPlain(key)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(out, []byte("-----BEGIN PRIVATE KEY-----\n")) {
		t.Fatalf("got %s", out[:40])
	}
	got, err := Decrypt(out, nil)
	if err != nil || !got.(equaler).Equal(key) {
		t.Fatalf("round trip: %v", err)
	}
}

func TestDecryptRefusesUnsupportedSchemes(t *testing.T) {
	// PBES1 (pbeWithSHA1And3-KeyTripleDES-CBC) is not PBES2.
	der, _ := asn1.Marshal(encryptedPrivateKeyInfo{
		Algorithm:     pkix.AlgorithmIdentifier{Algorithm: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 1, 3}},
		EncryptedData: make([]byte, 16),
	})
	_, err := Decrypt(pem.EncodeToMemory(&pem.Block{Type: EncryptedBlockType, Bytes: der}), []byte("x"))
	if err == nil || !strings.Contains(err.Error(), "only PBES2") {
		t.Fatalf("err = %v", err)
	}
}
