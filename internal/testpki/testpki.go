// Package testpki makes, for one test, a CA with a server certificate for
// 127.0.0.1 / localhost and a client certificate (and a client certificate
// from another CA), written to the test's temp dir as PEM files. No key
// is ever committed.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is one test's certificates and their files.
type PKI struct {
	Dir                           string
	CAFile, CertFile, KeyFile     string // CA certificate, server certificate and key
	ClientCertFile, ClientKeyFile string
	CACertPEM                     []byte
	Pool                          *x509.CertPool  // trusts the CA
	Server                        tls.Certificate // for 127.0.0.1 and localhost, signed by the CA
	Client                        tls.Certificate // signed by the CA
	OtherClient                   tls.Certificate // signed by another CA

	t                   testing.TB
	serial              int64
	notBefore, notAfter time.Time
}

// New makes the certificates in a temp dir of t's.
func New(t testing.TB) *PKI {
	t.Helper()
	p := &PKI{t: t, Dir: t.TempDir(), notBefore: time.Now().Add(-time.Hour), notAfter: time.Now().Add(24 * time.Hour)}
	caKey, caCert, caPEM := p.newCA("tumbler test CA")
	otherKey, otherCert, _ := p.newCA("another CA")
	p.CACertPEM = caPEM
	p.Pool = x509.NewCertPool()
	p.Pool.AddCert(caCert)
	serverCert, serverKey := p.leaf(caCert, caKey, "127.0.0.1", true)
	clientCert, clientKey := p.leaf(caCert, caKey, "client", false)
	otherCertPEM, otherKeyPEM := p.leaf(otherCert, otherKey, "intruder", false)
	p.Server = p.pair(serverCert, serverKey)
	p.Client = p.pair(clientCert, clientKey)
	p.OtherClient = p.pair(otherCertPEM, otherKeyPEM)
	p.CAFile = p.write("ca.crt", caPEM)
	p.CertFile = p.write("server.crt", serverCert)
	p.KeyFile = p.write("server.key", serverKey)
	p.ClientCertFile = p.write("client.crt", clientCert)
	p.ClientKeyFile = p.write("client.key", clientKey)
	return p
}

func (p *PKI) pair(certPEM, keyPEM []byte) tls.Certificate {
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		p.t.Fatal(err)
	}
	return c
}

func (p *PKI) write(name string, data []byte) string {
	path := filepath.Join(p.Dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		p.t.Fatal(err)
	}
	return path
}

func (p *PKI) newCA(name string) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		p.t.Fatal(err)
	}
	p.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: name},
		NotBefore: p.notBefore, NotAfter: p.notAfter, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		p.t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return key, cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func (p *PKI) leaf(ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn string, server bool) (certPEM, keyPEM []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		p.t.Fatal(err)
	}
	p.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: p.notBefore, NotAfter: p.notAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		p.t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		p.t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}
