package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestCA is a certificate authority made for one test. Its certificate is the PEM file CertPath;
// Issue signs server and client certificates with it.
type TestCA struct {
	// CertPath is the CA certificate, PEM.
	CertPath string
	cert     *x509.Certificate
	key      *ecdsa.PrivateKey
	dir      string
	pool     *x509.CertPool
}

// NewTestCA makes a CA named name (ECDSA P-256, valid for a day) with its files in a temporary
// directory of the test.
func NewTestCA(t testing.TB, name string) *TestCA {
	t.Helper()
	key := newKey(t)
	tmpl := certTemplate(t, name)
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("testenv: create CA %s: %v", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &TestCA{cert: cert, key: key, dir: t.TempDir(), pool: x509.NewCertPool()}
	ca.pool.AddCert(cert)
	ca.CertPath = writePEM(t, ca.dir, name+"-ca.pem", "CERTIFICATE", der)
	return ca
}

// Issue signs a certificate for commonName, valid for 127.0.0.1 and localhost (a server) and
// for client authentication (a client), and returns the paths of its certificate and key (PEM).
func (ca *TestCA) Issue(t testing.TB, commonName string) (certPath, keyPath string) {
	t.Helper()
	key := newKey(t)
	tmpl := certTemplate(t, commonName)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	tmpl.IPAddresses, tmpl.DNSNames = []net.IP{net.IPv4(127, 0, 0, 1)}, []string{"localhost"}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatalf("testenv: issue certificate %s: %v", commonName, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return writePEM(t, ca.dir, commonName+".pem", "CERTIFICATE", der),
		writePEM(t, ca.dir, commonName+"-key.pem", "EC PRIVATE KEY", keyDER)
}

// certTemplate returns the template of a certificate for commonName, valid for a day from an
// hour ago, with a random serial number.
func certTemplate(t testing.TB, commonName string) *x509.Certificate {
	return &x509.Certificate{SerialNumber: serial(t), Subject: pkix.Name{CommonName: commonName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func writePEM(t testing.TB, dir, name, blockType string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// StartTLSProxy stands in for a Temporal frontend secured with mTLS, as Temporal Cloud and most
// production clusters are: it listens on a free port of 127.0.0.1 with a server certificate
// signed by serverCA, requires every client to present a certificate signed by clientCA
// (refusing the handshake otherwise), and forwards the bytes of each accepted connection to
// target (the plaintext gRPC port of a dev server). It returns the proxy's host:port and stops
// when the test ends.
func StartTLSProxy(t testing.TB, target string, serverCA, clientCA *TestCA) string {
	t.Helper()
	certPath, keyPath := serverCA.Issue(t, "temporal-frontend")
	cert, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    clientCA.pool,
		MinVersion:   tls.VersionTLS12,
		NextProtos:   []string{"h2"},
	})
	if err != nil {
		t.Fatalf("testenv: TLS proxy: %v", err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	track := func(c net.Conn, open bool) {
		mu.Lock()
		defer mu.Unlock()
		if open {
			conns[c] = true
		} else {
			delete(conns, c)
		}
	}
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { forward(c, target, track) })
		}
	})
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		for c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String()
}

// forward completes the TLS handshake of client (a refused certificate ends it there) and
// copies bytes both ways between it and a new connection to target until either side closes.
func forward(client net.Conn, target string, track func(net.Conn, bool)) {
	track(client, true)
	defer track(client, false)
	defer client.Close()
	if err := client.(*tls.Conn).Handshake(); err != nil {
		return
	}
	server, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	track(server, true)
	defer track(server, false)
	defer server.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(server, client); done <- struct{}{} }()
	go func() { _, _ = io.Copy(client, server); done <- struct{}{} }()
	<-done
}
