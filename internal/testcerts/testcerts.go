// Package testcerts makes X.509 certificates for tests of mutual TLS: a
// test CA, client certificates it issues, and a loopback server's TLS
// configuration. Nothing here is for production.
package testcerts

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"
)

// CA is a certificate authority made for one test.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	// PEM is the CA's certificate.
	PEM string
}

// NewCA makes a self-signed CA named name, valid from an hour ago for a day.
func NewCA(tb testing.TB, name string) *CA {
	tb.Helper()
	key := newECKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(tb),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"jobhooks tests"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return &CA{Cert: cert, Key: key, PEM: encode("CERTIFICATE", der)}
}

// Pool is a pool that trusts only the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Leaf describes a certificate to issue; zero fields take defaults: valid
// from an hour ago for a day, for client authentication, an ECDSA P-256 key.
type Leaf struct {
	CommonName  string
	NotBefore   time.Time
	NotAfter    time.Time
	ExtKeyUsage []x509.ExtKeyUsage
	IPs         []net.IP
	// RSA makes a 2048-bit RSA key (PKCS #1 PEM) instead.
	RSA bool
}

// Issue issues a certificate and returns it and its private key as PEM
// (PKCS #8 for ECDSA).
func (ca *CA) Issue(tb testing.TB, l Leaf) (certPEM, keyPEM string) {
	tb.Helper()
	if l.NotBefore.IsZero() {
		l.NotBefore = time.Now().Add(-time.Hour)
	}
	if l.NotAfter.IsZero() {
		l.NotAfter = time.Now().Add(24 * time.Hour)
	}
	if l.ExtKeyUsage == nil {
		l.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	var key crypto.Signer
	if l.RSA {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			tb.Fatal(err)
		}
		key, keyPEM = k, encode("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(k))
	} else {
		k := newECKey(tb)
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			tb.Fatal(err)
		}
		key, keyPEM = k, encode("PRIVATE KEY", der)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(tb),
		Subject:      pkix.Name{CommonName: l.CommonName, Organization: []string{"jobhooks tests"}},
		NotBefore:    l.NotBefore,
		NotAfter:     l.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  l.ExtKeyUsage,
		IPAddresses:  l.IPs,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		tb.Fatal(err)
	}
	return encode("CERTIFICATE", der), keyPEM
}

// ServerTLS is the TLS configuration of a loopback server (127.0.0.1 and
// ::1) with a certificate the CA issued, that requires a client
// certificate issued by clients.
func (ca *CA) ServerTLS(tb testing.TB, clients *CA) *tls.Config {
	tb.Helper()
	certPEM, keyPEM := ca.Issue(tb, Leaf{CommonName: "127.0.0.1", IPs: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	cert, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	if err != nil {
		tb.Fatal(err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    clients.Pool(),
		MinVersion:   tls.VersionTLS12,
	}
}

func newECKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

func serial(tb testing.TB) *big.Int {
	tb.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

func encode(typ string, der []byte) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
}
