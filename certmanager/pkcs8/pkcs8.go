// Package pkcs8 reads and writes password-encrypted PKCS#8 private keys
// ("BEGIN ENCRYPTED PRIVATE KEY", RFC 5958 EncryptedPrivateKeyInfo with
// PBES2 from RFC 8018), the format Magnum's Python conductor writes with
// cryptography's BestAvailableEncryption. The standard library reads and
// writes only unencrypted PKCS#8.
//
// Encrypt writes what cryptography 38 / OpenSSL 3 write: PBES2 with
// PBKDF2-HMAC-SHA256 (2048 iterations) and AES-256-CBC. Decrypt also reads
// the other PBES2 variants OpenSSL produces: PRF HMAC-SHA1/224/256/384/512
// and AES-128/192/256-CBC or DES-EDE3-CBC.
package pkcs8

import (
	"bytes"
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/des" //nolint:gosec // Decrypt reads DES-EDE3-CBC keys that OpenSSL writes; Encrypt uses AES-256
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // HMAC-SHA1 as PBKDF2's PRF, to read keys that OpenSSL writes; Encrypt uses SHA-256
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"hash"
)

// PEM block types.
const (
	EncryptedBlockType = "ENCRYPTED PRIVATE KEY"
	PlainBlockType     = "PRIVATE KEY"
)

// Iterations is the PBKDF2 iteration count Encrypt uses, OpenSSL's
// PKCS5_DEFAULT_ITER as cryptography 38 writes it. The passwords Magnum
// uses are random 60-bit short ids, so the count is not what protects them.
const Iterations = 2048

// saltSize is the PBKDF2 salt length Encrypt uses (OpenSSL writes 8; more
// costs nothing and every reader accepts it).
const saltSize = 16

// ErrIncorrectPassword is returned when the key cannot be decrypted with the
// password (bad padding or an undecodable plaintext).
var ErrIncorrectPassword = errors.New("pkcs8: incorrect password or corrupt key")

var (
	oidPBES2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA224 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 8}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA384 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 10}
	oidHMACSHA512 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
	oidDESEDE3CBC = asn1.ObjectIdentifier{1, 2, 840, 113549, 3, 7}
)

type encryptedPrivateKeyInfo struct {
	Algorithm     pkix.AlgorithmIdentifier
	EncryptedData []byte
}

type pbes2Params struct {
	KeyDerivationFunc pkix.AlgorithmIdentifier
	EncryptionScheme  pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt           []byte
	IterationCount int
	KeyLength      int                      `asn1:"optional"`
	PRF            pkix.AlgorithmIdentifier `asn1:"optional"`
}

// Encrypt returns key (an *rsa.PrivateKey, *ecdsa.PrivateKey or
// ed25519.PrivateKey) as an "ENCRYPTED PRIVATE KEY" PEM block protected by
// password, with a trailing newline as cryptography writes it.
func Encrypt(key crypto.PrivateKey, password []byte) ([]byte, error) {
	if len(password) == 0 {
		return nil, errors.New("pkcs8: empty password")
	}
	plain, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("pkcs8: marshal key: %w", err)
	}
	salt := make([]byte, saltSize)
	iv := make([]byte, aes.BlockSize)
	if _, err := rand.Read(salt); err != nil {
		return nil, err
	}
	if _, err := rand.Read(iv); err != nil {
		return nil, err
	}
	dk, err := pbkdf2.Key(sha256.New, string(password), salt, Iterations, 32)
	if err != nil {
		return nil, fmt.Errorf("pkcs8: derive key: %w", err)
	}
	block, err := aes.NewCipher(dk)
	if err != nil {
		return nil, err
	}
	pad := aes.BlockSize - len(plain)%aes.BlockSize
	data := append(plain, bytes.Repeat([]byte{byte(pad)}, pad)...)
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(data, data)

	kdfParams, err := asn1.Marshal(pbkdf2Params{
		Salt: salt, IterationCount: Iterations,
		PRF: pkix.AlgorithmIdentifier{Algorithm: oidHMACSHA256, Parameters: asn1.NullRawValue},
	})
	if err != nil {
		return nil, err
	}
	ivDER, err := asn1.Marshal(iv)
	if err != nil {
		return nil, err
	}
	params, err := asn1.Marshal(pbes2Params{
		KeyDerivationFunc: pkix.AlgorithmIdentifier{Algorithm: oidPBKDF2, Parameters: asn1.RawValue{FullBytes: kdfParams}},
		EncryptionScheme:  pkix.AlgorithmIdentifier{Algorithm: oidAES256CBC, Parameters: asn1.RawValue{FullBytes: ivDER}},
	})
	if err != nil {
		return nil, err
	}
	der, err := asn1.Marshal(encryptedPrivateKeyInfo{
		Algorithm:     pkix.AlgorithmIdentifier{Algorithm: oidPBES2, Parameters: asn1.RawValue{FullBytes: params}},
		EncryptedData: data,
	})
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: EncryptedBlockType, Bytes: der}), nil
}

// Decrypt parses a PEM private key. An "ENCRYPTED PRIVATE KEY" block is
// decrypted with password; an unencrypted "PRIVATE KEY" (PKCS#8) or
// "RSA PRIVATE KEY" (PKCS#1) block is accepted as is, as cryptography's
// load_pem_private_key accepts it when no password is needed.
func Decrypt(pemBytes, password []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("pkcs8: no PEM block found")
	}
	var der []byte
	switch block.Type {
	case EncryptedBlockType:
		var err error
		if der, err = decryptDER(block.Bytes, password); err != nil {
			return nil, err
		}
	case PlainBlockType:
		der = block.Bytes
	case "RSA PRIVATE KEY":
		k, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("pkcs8: parse PKCS#1 key: %w", err)
		}
		return k, nil
	default:
		return nil, fmt.Errorf("pkcs8: unsupported PEM block type %q", block.Type)
	}
	key, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		if block.Type == EncryptedBlockType {
			return nil, ErrIncorrectPassword
		}
		return nil, fmt.Errorf("pkcs8: parse key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("pkcs8: unsupported key type %T", key)
	}
	return signer, nil
}

// MarshalPlain returns key as an unencrypted PKCS#8 "PRIVATE KEY" PEM block,
// what Magnum's get_decrypted_private_key returns.
func MarshalPlain(key crypto.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("pkcs8: marshal key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: PlainBlockType, Bytes: der}), nil
}

func decryptDER(der, password []byte) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if rest, err := asn1.Unmarshal(der, &info); err != nil || len(rest) != 0 {
		return nil, errors.New("pkcs8: malformed EncryptedPrivateKeyInfo")
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("pkcs8: unsupported encryption algorithm %v (only PBES2)", info.Algorithm.Algorithm)
	}
	var params pbes2Params
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, errors.New("pkcs8: malformed PBES2 parameters")
	}
	if !params.KeyDerivationFunc.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("pkcs8: unsupported key derivation %v (only PBKDF2)", params.KeyDerivationFunc.Algorithm)
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(params.KeyDerivationFunc.Parameters.FullBytes, &kdf); err != nil {
		return nil, errors.New("pkcs8: malformed PBKDF2 parameters")
	}
	if kdf.IterationCount <= 0 || kdf.IterationCount > 10_000_000 {
		return nil, fmt.Errorf("pkcs8: unreasonable PBKDF2 iteration count %d", kdf.IterationCount)
	}
	var prf func() hash.Hash
	switch alg := kdf.PRF.Algorithm; {
	case len(alg) == 0, alg.Equal(oidHMACSHA1):
		prf = sha1.New
	case alg.Equal(oidHMACSHA224):
		prf = sha256.New224
	case alg.Equal(oidHMACSHA256):
		prf = sha256.New
	case alg.Equal(oidHMACSHA384):
		prf = sha512.New384
	case alg.Equal(oidHMACSHA512):
		prf = sha512.New
	default:
		return nil, fmt.Errorf("pkcs8: unsupported PBKDF2 PRF %v", alg)
	}
	var keyLen int
	var newCipher func([]byte) (cipher.Block, error)
	switch alg := params.EncryptionScheme.Algorithm; {
	case alg.Equal(oidAES128CBC):
		keyLen, newCipher = 16, aes.NewCipher
	case alg.Equal(oidAES192CBC):
		keyLen, newCipher = 24, aes.NewCipher
	case alg.Equal(oidAES256CBC):
		keyLen, newCipher = 32, aes.NewCipher
	case alg.Equal(oidDESEDE3CBC):
		keyLen, newCipher = 24, des.NewTripleDESCipher
	default:
		return nil, fmt.Errorf("pkcs8: unsupported cipher %v", alg)
	}
	if kdf.KeyLength != 0 && kdf.KeyLength != keyLen {
		return nil, fmt.Errorf("pkcs8: PBKDF2 key length %d does not match the cipher", kdf.KeyLength)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(params.EncryptionScheme.Parameters.FullBytes, &iv); err != nil {
		return nil, errors.New("pkcs8: malformed cipher IV")
	}
	dk, err := pbkdf2.Key(prf, string(password), kdf.Salt, kdf.IterationCount, keyLen)
	if err != nil {
		return nil, fmt.Errorf("pkcs8: derive key: %w", err)
	}
	block, err := newCipher(dk)
	if err != nil {
		return nil, err
	}
	bs := block.BlockSize()
	if len(iv) != bs {
		return nil, errors.New("pkcs8: IV length does not match the cipher")
	}
	if len(info.EncryptedData) == 0 || len(info.EncryptedData)%bs != 0 {
		return nil, errors.New("pkcs8: encrypted data is not a whole number of blocks")
	}
	out := make([]byte, len(info.EncryptedData))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, info.EncryptedData)
	pad := int(out[len(out)-1])
	if pad == 0 || pad > bs || pad > len(out) {
		return nil, ErrIncorrectPassword
	}
	for _, b := range out[len(out)-pad:] {
		if int(b) != pad {
			return nil, ErrIncorrectPassword
		}
	}
	return out[:len(out)-pad], nil
}
