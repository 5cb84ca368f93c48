package webhooksettings

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"slices"
	"strings"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
)

// Size bounds of the PEM texts.
const (
	MaxCertificatePEMBytes = 64 << 10
	MaxPrivateKeyPEMBytes  = 16 << 10
)

// Fields of the client certificate in errors.
const (
	fieldCertificate = "client_certificate.certificate"
	fieldPrivateKey  = "client_certificate.private_key"
)

// parsedCertificate is a client certificate that passed ParseCertificate.
type parsedCertificate struct {
	Info CertificateInfo
	// ChainPEM holds only the CERTIFICATE blocks, leaf first; KeyPEM only
	// the key's block.
	ChainPEM string
	KeyPEM   string
}

// ParseCertificate checks a client certificate for mutual TLS: PEM
// certificates (the leaf first, then any intermediates), an unencrypted PEM
// private key that matches the leaf, the leaf valid at now and usable for
// client authentication. Its problem names client_certificate.certificate
// or client_certificate.private_key.
func ParseCertificate(certPEM, keyPEM string, now time.Time) (parsedCertificate, *webhooks.Error) {
	chain, certs, e := parseChain(certPEM)
	if e != nil {
		return parsedCertificate{}, e
	}
	leaf := certs[0]
	switch {
	case now.After(leaf.NotAfter):
		return parsedCertificate{}, webhooks.FieldErrorf(fieldCertificate,
			"The client certificate expired on %s.", leaf.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(leaf.NotBefore):
		return parsedCertificate{}, webhooks.FieldErrorf(fieldCertificate,
			"The client certificate is not valid before %s.", leaf.NotBefore.UTC().Format(time.RFC3339))
	case len(leaf.ExtKeyUsage)+len(leaf.UnknownExtKeyUsage) > 0 &&
		!slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageClientAuth) && !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageAny):
		return parsedCertificate{}, webhooks.FieldErrorf(fieldCertificate,
			"The certificate is not for client authentication: its extended key usage does not include clientAuth.")
	case leaf.KeyUsage != 0 && leaf.KeyUsage&x509.KeyUsageDigitalSignature == 0:
		return parsedCertificate{}, webhooks.FieldErrorf(fieldCertificate,
			"The certificate cannot sign a TLS handshake: its key usage does not include digitalSignature.")
	}
	keyBlock, e := parseKey(keyPEM, leaf)
	if e != nil {
		return parsedCertificate{}, e
	}
	if _, err := tls.X509KeyPair([]byte(chain), []byte(keyBlock)); err != nil {
		return parsedCertificate{}, webhooks.FieldErrorf(fieldPrivateKey,
			"The certificate and private key cannot be used for TLS: %s.", strings.TrimPrefix(err.Error(), "tls: "))
	}
	return parsedCertificate{
		Info:     infoOf(leaf, sha256Hex(leaf.Raw)),
		ChainPEM: chain,
		KeyPEM:   keyBlock,
	}, nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func infoOf(leaf *x509.Certificate, sha string) CertificateInfo {
	return CertificateInfo{Subject: leaf.Subject.String(), Issuer: leaf.Issuer.String(),
		NotBefore: leaf.NotBefore.UTC(), NotAfter: leaf.NotAfter.UTC(), SHA256: sha}
}

// parseChain reads PEM CERTIFICATE blocks and nothing else: a private key
// pasted in with them must not be stored as if it were public.
func parseChain(text string) (string, []*x509.Certificate, *webhooks.Error) {
	if strings.TrimSpace(text) == "" {
		return "", nil, webhooks.FieldErrorf(fieldCertificate, "%s is required with private_key.", fieldCertificate)
	}
	if len(text) > MaxCertificatePEMBytes {
		return "", nil, webhooks.FieldErrorf(fieldCertificate, "%s is longer than %d bytes.", fieldCertificate, MaxCertificatePEMBytes)
	}
	var (
		out   bytes.Buffer
		certs []*x509.Certificate
		rest  = []byte(text)
	)
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return "", nil, webhooks.FieldErrorf(fieldCertificate,
				"%s may hold only CERTIFICATE blocks; it holds a %q block (a private key goes in private_key).", fieldCertificate, block.Type)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return "", nil, webhooks.FieldErrorf(fieldCertificate, "Certificate %d of %s could not be parsed: %s.",
				len(certs)+1, fieldCertificate, strings.TrimPrefix(err.Error(), "x509: "))
		}
		certs = append(certs, c)
		_ = pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: block.Bytes})
	}
	if len(certs) == 0 || len(bytes.TrimSpace(rest)) > 0 {
		return "", nil, webhooks.FieldErrorf(fieldCertificate,
			"%s must be PEM: one or more -----BEGIN CERTIFICATE----- blocks, the client's own first.", fieldCertificate)
	}
	return out.String(), certs, nil
}

// parseKey reads one unencrypted PEM private key (PKCS #8, or PKCS #1 RSA,
// or SEC 1 EC, possibly after an EC PARAMETERS block) that matches leaf.
func parseKey(text string, leaf *x509.Certificate) (string, *webhooks.Error) {
	if strings.TrimSpace(text) == "" {
		return "", webhooks.FieldErrorf(fieldPrivateKey, "%s is required with the certificate.", fieldPrivateKey)
	}
	if len(text) > MaxPrivateKeyPEMBytes {
		return "", webhooks.FieldErrorf(fieldPrivateKey, "%s is longer than %d bytes.", fieldPrivateKey, MaxPrivateKeyPEMBytes)
	}
	var (
		key  *pem.Block
		rest = []byte(text)
	)
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		switch {
		case block.Type == "EC PARAMETERS":
			continue
		case block.Type == "ENCRYPTED PRIVATE KEY" || block.Headers["Proc-Type"] != "":
			return "", webhooks.FieldErrorf(fieldPrivateKey, "%s must not be encrypted: the service seals it itself.", fieldPrivateKey)
		case !strings.HasSuffix(block.Type, "PRIVATE KEY"):
			return "", webhooks.FieldErrorf(fieldPrivateKey, "%s may hold only the private key; it holds a %q block.", fieldPrivateKey, block.Type)
		case key != nil:
			return "", webhooks.FieldErrorf(fieldPrivateKey, "%s holds more than one private key.", fieldPrivateKey)
		}
		key = block
	}
	if key == nil || len(bytes.TrimSpace(rest)) > 0 {
		return "", webhooks.FieldErrorf(fieldPrivateKey, "%s must be one PEM private key (-----BEGIN PRIVATE KEY-----).", fieldPrivateKey)
	}
	priv, err := parsePrivateKey(key)
	if err != nil {
		return "", webhooks.FieldErrorf(fieldPrivateKey, "%s could not be parsed: %s.", fieldPrivateKey, strings.TrimPrefix(err.Error(), "x509: "))
	}
	pub, ok := priv.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(leaf.PublicKey) {
		return "", webhooks.FieldErrorf(fieldPrivateKey, "The private key does not match the certificate's public key.")
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: key.Type, Bytes: key.Bytes})), nil
}

func parsePrivateKey(b *pem.Block) (crypto.Signer, error) {
	var (
		k   any
		err error
	)
	switch b.Type {
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(b.Bytes)
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(b.Bytes)
	default:
		k, err = x509.ParsePKCS8PrivateKey(b.Bytes)
	}
	if err != nil {
		return nil, err
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, errUnsupportedKey
	}
	return s, nil
}

var errUnsupportedKey = errors.New("unsupported key type")
