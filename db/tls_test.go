package db

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openstack/magnum-conductor/internal/testkit"
	"github.com/openstack/magnum-conductor/test/testpki"
)

func TestMySQLURLTLSParameters(t *testing.T) {
	ca := testpki.New(t)
	pki := ca.Server(t, "db.internal")
	base := "mysql+pymysql://magnum:pw@db.example:3306/magnum?charset=utf8"
	parse := func(q string) (*URL, error) { return ParseURL(base + q) }

	if u, err := parse(""); err != nil || u.TLS != nil {
		t.Fatalf("no ssl parameters: TLS %v, %v", u.TLS, err)
	}
	u, err := parse("&ssl_ca=" + ca.File)
	if err != nil {
		t.Fatal(err)
	}
	if u.TLS == nil || u.TLS.InsecureSkipVerify || u.TLS.RootCAs == nil || u.TLS.ServerName != "db.example" {
		t.Fatalf("ssl_ca: %+v", u.TLS)
	}
	capathDir := t.TempDir()
	pemBytes, _ := os.ReadFile(ca.File)
	_ = os.WriteFile(filepath.Join(capathDir, "ab12cd34.0"), pemBytes, 0o600)
	_ = os.WriteFile(filepath.Join(capathDir, "README"), []byte("not a certificate"), 0o600)
	if u, err := parse("&ssl_capath=" + capathDir); err != nil || u.TLS == nil || u.TLS.RootCAs == nil {
		t.Fatalf("ssl_capath: %+v, %v", u, err)
	}
	u, err = parse("&ssl_ca=" + ca.File + "&ssl_check_hostname=false")
	if err != nil {
		t.Fatal(err)
	}
	if !u.TLS.InsecureSkipVerify || u.TLS.VerifyConnection == nil {
		t.Fatalf("ssl_check_hostname=false: the chain is not verified by hand: %+v", u.TLS)
	}
	u, err = parse("&ssl_cert=" + pki.CertFile + "&ssl_key=" + pki.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(u.TLS.Certificates) != 1 || !u.TLS.InsecureSkipVerify || u.TLS.VerifyConnection != nil {
		t.Fatalf("client certificate without a CA (PyMySQL verifies nothing): %+v", u.TLS)
	}
	for q, want := range map[string]string{
		"&ssl_ca=/nonexistent/ca.pem":                      "ssl_ca",
		"&ssl_ca=" + pki.KeyFile:                           "holds no certificate",
		"&ssl_capath=" + t.TempDir():                       "holds no certificate",
		"&ssl_ca=" + ca.File + "&ssl_check_hostname=maybe": "ssl_check_hostname",
		"&ssl_cert=" + pki.CertFile:                        "ssl_cert", // the key is not in the certificate's file
	} {
		if _, err := parse(q); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "pw@") {
			t.Errorf("%s: %v (want an error naming %s, no password)", q, err, want)
		}
	}
	if got := WithParameters("mysql://u@h/d", "ssl_ca=/x&charset=utf8"); got != "mysql://u@h/d?ssl_ca=/x&charset=utf8" {
		t.Errorf("WithParameters without a query: %s", got)
	}
	if got := WithParameters(base, "ssl_ca=/x"); got != base+"&ssl_ca=/x" {
		t.Errorf("WithParameters with a query: %s", got)
	}
	if got := WithParameters(base, ""); got != base {
		t.Errorf("WithParameters with nothing: %s", got)
	}
}

// tlsMariaDB starts a private MariaDB server that refuses connections
// without TLS (require_secure_transport), with a certificate for
// db.internal only, and returns its address.
func tlsMariaDB(t *testing.T, ca *testpki.CA, pki testpki.Pair) string {
	t.Helper()
	for _, bin := range []string{"mariadb-install-db", "mariadbd"} {
		if _, err := exec.LookPath(bin); err != nil {
			if _, err := os.Stat("/usr/sbin/" + bin); err != nil {
				t.Fatalf("%s is needed (Debian package mariadb-server): %v", bin, err)
			}
		}
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	install := exec.Command("mariadb-install-db", "--no-defaults", "--datadir="+data, "--user=root",
		"--auth-root-authentication-method=normal", "--skip-test-db")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	srv := exec.Command("/usr/sbin/mariadbd", "--no-defaults", "--datadir="+data, "--user=root",
		"--bind-address=127.0.0.1", fmt.Sprintf("--port=%d", port), "--socket="+filepath.Join(dir, "sock"),
		"--pid-file="+filepath.Join(dir, "pid"), "--log-error="+filepath.Join(dir, "err.log"),
		"--skip-log-bin", "--innodb-buffer-pool-size=16M", "--skip-name-resolve",
		"--ssl-ca="+ca.File, "--ssl-cert="+pki.CertFile, "--ssl-key="+pki.KeyFile, "--require-secure-transport=ON")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = srv.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = srv.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = srv.Process.Kill()
			<-done
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if testkit.Poll(30*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	}) != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "err.log"))
		t.Fatalf("the TLS MariaDB did not start:\n%s", log)
	}
	return addr
}

// TestLiveMySQLOverTLS: a MariaDB server that requires TLS, with a
// certificate for db.internal reached at 127.0.0.1, through the URL
// parameters PyMySQL takes (and [database] connection_parameters): without
// them the server refuses the connection; with its CA the host name check
// fails (the certificate does not name 127.0.0.1); with
// ssl_check_hostname=false the chain is checked and the session is
// encrypted; a CA that did not sign the certificate is refused.
func TestLiveMySQLOverTLS(t *testing.T) {
	ca, other := testpki.New(t), testpki.New(t)
	addr := tlsMariaDB(t, ca, ca.Server(t, "db.internal"))
	base := "mysql+pymysql://root@" + addr + "/mysql?charset=utf8"
	open := func(conn, params string) (*Store, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return Open(ctx, Options{Connection: conn, ConnectionParameters: params, SkipSchemaCheck: true,
			MaxRetries: 1, RetryInterval: 10 * time.Millisecond}, slog.New(slog.DiscardHandler))
	}
	sslVersion := func(s *Store) string {
		var name, version string
		if err := s.SQLDB().QueryRow("SHOW SESSION STATUS LIKE 'Ssl_version'").Scan(&name, &version); err != nil {
			t.Fatal(err)
		}
		return version
	}

	// MariaDB answers a plain login under require_secure_transport with
	// "Access denied" (the same user logs in below over TLS).
	if s, err := open(base, ""); err == nil {
		s.Close()
		t.Fatal("a plain connection to a server requiring TLS was accepted")
	} else if !strings.Contains(err.Error(), "Access denied") {
		t.Fatalf("plain connection: %v", err)
	}
	if s, err := open(base+"&ssl_ca="+ca.File, ""); err == nil {
		s.Close()
		t.Fatal("the host name check passed for a certificate that does not name 127.0.0.1")
	} else if !strings.Contains(err.Error(), "doesn't contain any IP SANs") {
		t.Fatalf("host name check: %v", err)
	}
	s, err := open(base+"&ssl_ca="+ca.File+"&ssl_check_hostname=false", "")
	if err != nil {
		t.Fatal(err)
	}
	if v := sslVersion(s); !strings.HasPrefix(v, "TLSv1.") {
		t.Errorf("session Ssl_version %q", v)
	}
	s.Close()
	s, err = open(base, "ssl_ca="+ca.File+"&ssl_check_hostname=false")
	if err != nil {
		t.Fatalf("the same through connection_parameters: %v", err)
	}
	if v := sslVersion(s); !strings.HasPrefix(v, "TLSv1.") {
		t.Errorf("session Ssl_version %q through connection_parameters", v)
	}
	s.Close()
	if s, err := open(base+"&ssl_ca="+other.File+"&ssl_check_hostname=false", ""); err == nil {
		s.Close()
		t.Fatal("a certificate from another CA was accepted")
	} else if !strings.Contains(err.Error(), "signed by unknown authority") {
		t.Fatalf("other CA: %v", err)
	}
}
