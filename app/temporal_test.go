package app

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.temporal.io/sdk/contrib/envconfig"
)

// writeTOML writes a temporal.toml and points TEMPORAL_CONFIG_FILE at it.
func writeTOML(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "temporal.toml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvTemporalConfigFile, path)
	return path
}

const profiles = `
[profile.default]
address = "file-default:7233"
namespace = "file-ns"

[profile.cloud]
address = "my-ns.a1b2c.tmprl.cloud:7233"
namespace = "my-ns.a1b2c"
[profile.cloud.tls]
client_cert_path = "/certs/client.pem"
client_key_path = "/certs/client.key"

[profile.apikey]
address = "us-east-1.aws.api.temporal.io:7233"
namespace = "my-ns.a1b2c"
api_key = "key-from-file"
`

// TestTemporalConnectionPrecedence: the temporal.toml profile, then TEMPORAL_* variables, then
// flags, then the defaults, as the temporal CLI resolves them.
func TestTemporalConnectionPrecedence(t *testing.T) {
	clearEnv(t)
	cfg := parse(t)
	if cfg.TemporalAddress != DefaultTemporalAddress || cfg.Namespace != DefaultNamespace || cfg.Temporal.TLS != nil {
		t.Fatalf("no file, no variables, no flags: %+v", cfg)
	}

	writeTOML(t, profiles)
	cfg = parse(t)
	if cfg.TemporalAddress != "file-default:7233" || cfg.Namespace != "file-ns" {
		t.Errorf("default profile: address %q namespace %q", cfg.TemporalAddress, cfg.Namespace)
	}
	t.Setenv(EnvTemporalAddress, "env:7233")
	cfg = parse(t)
	if cfg.TemporalAddress != "env:7233" || cfg.Namespace != "file-ns" {
		t.Errorf("variable over profile: address %q namespace %q", cfg.TemporalAddress, cfg.Namespace)
	}
	cfg = parse(t, "--temporal-address", "flag:7233", "--namespace", "flag-ns")
	if cfg.TemporalAddress != "flag:7233" || cfg.Namespace != "flag-ns" {
		t.Errorf("flags over variables: address %q namespace %q", cfg.TemporalAddress, cfg.Namespace)
	}
	t.Setenv(EnvTemporalAddress, "")

	cfg = parse(t, "--profile", "cloud")
	want := &envconfig.ClientConfigTLS{ClientCertPath: "/certs/client.pem", ClientKeyPath: "/certs/client.key"}
	if cfg.TemporalAddress != "my-ns.a1b2c.tmprl.cloud:7233" || cfg.Namespace != "my-ns.a1b2c" || !reflect.DeepEqual(cfg.Temporal.TLS, want) {
		t.Errorf("--profile cloud: %+v TLS %+v", cfg, cfg.Temporal.TLS)
	}
	if got := cfg.temporalTLS(); got != "mTLS" {
		t.Errorf("--profile cloud connects with %s, want mTLS", got)
	}
	t.Setenv(EnvTemporalProfile, "cloud")
	t.Setenv(EnvTemporalTLSCert, "/env/client.pem")
	cfg = parse(t, "--tls-key-path", "/flag/client.key")
	want = &envconfig.ClientConfigTLS{ClientCertPath: "/env/client.pem", ClientKeyPath: "/flag/client.key"}
	if !reflect.DeepEqual(cfg.Temporal.TLS, want) {
		t.Errorf("TEMPORAL_PROFILE=cloud, a variable and a flag: TLS %+v, want %+v", cfg.Temporal.TLS, want)
	}
	t.Setenv(EnvTemporalTLSCert, "")

	t.Setenv(EnvTemporalProfile, "apikey")
	cfg = parse(t)
	if cfg.Temporal.APIKey != "key-from-file" || cfg.temporalTLS() != "TLS" {
		t.Errorf("profile with an API key: key %q, %s", cfg.Temporal.APIKey, cfg.temporalTLS())
	}
	cfg = parse(t, "--api-key", "key-from-flag", "--tls=false")
	if cfg.Temporal.APIKey != "key-from-flag" || cfg.temporalTLS() != "plaintext" {
		t.Errorf("--api-key --tls=false: key %q, %s", cfg.Temporal.APIKey, cfg.temporalTLS())
	}

	if _, err := tryParse("--profile", "missing"); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a named profile that is not in the file: %v", err)
	}
	writeTOML(t, "[profile.default\naddress = 1")
	if _, err := tryParse(); err == nil || !strings.Contains(err.Error(), "temporal client config") {
		t.Errorf("a malformed file: %v", err)
	}
}

// TestTemporalClientOptions: an API key gives bearer credentials and turns TLS on; mTLS loads the
// certificate files; an empty TEMPORAL_TLS_CLIENT_CERT_PATH does not turn TLS on; Validate
// reports an unreadable certificate with its path.
func TestTemporalClientOptions(t *testing.T) {
	clearEnv(t)
	t.Setenv(EnvTemporalAPIKey, "secret-key")
	opts, err := parse(t).TemporalClientOptions()
	if err != nil {
		t.Fatal(err)
	}
	if opts.Credentials == nil || opts.ConnectionOptions.TLS == nil {
		t.Errorf("API key: credentials %v, TLS %v; want both", opts.Credentials, opts.ConnectionOptions.TLS)
	}
	if opts.HostPort != DefaultTemporalAddress || opts.Namespace != DefaultNamespace {
		t.Errorf("host %q namespace %q", opts.HostPort, opts.Namespace)
	}
	t.Setenv(EnvTemporalAPIKey, "")

	t.Setenv(EnvTemporalTLSCert, "")
	opts, err = parse(t).TemporalClientOptions()
	if err != nil || opts.ConnectionOptions.TLS != nil || opts.Credentials != nil {
		t.Errorf("empty variables: TLS %v credentials %v err %v; want a plaintext connection", opts.ConnectionOptions.TLS, opts.Credentials, err)
	}

	cfg := parse(t, "--tls-cert-path", "/nonexistent/client.pem", "--tls-key-path", "/nonexistent/client.key")
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "/nonexistent/client.pem") {
		t.Errorf("unreadable client certificate: %v", err)
	}
	cfg = parse(t, "--tls-cert-path", "/nonexistent/client.pem")
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "key") {
		t.Errorf("certificate without key: %v", err)
	}
	opts, err = parse(t, "--tls", "--tls-server-name", "frontend.example").TemporalClientOptions()
	if err != nil || opts.ConnectionOptions.TLS == nil || opts.ConnectionOptions.TLS.ServerName != "frontend.example" {
		t.Errorf("--tls --tls-server-name: TLS %+v err %v", opts.ConnectionOptions.TLS, err)
	}
}

// TestTemporalBooleanVariables: envconfig takes only 1, 0, true and false (any case) for
// TEMPORAL_TLS and TEMPORAL_TLS_DISABLE_HOST_VERIFICATION and silently ignores anything else, so
// TEMPORAL_TLS=yes connected without TLS; storeopt refuses such a value, naming the variable.
func TestTemporalBooleanVariables(t *testing.T) {
	for _, name := range []string{EnvTemporalTLS, "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION"} {
		for _, value := range []string{"yes", "on", "maybe", " true"} {
			clearEnv(t)
			t.Setenv(name, value)
			_, err := tryParse()
			if err == nil || !strings.Contains(err.Error(), name+"=") || !strings.Contains(err.Error(), "true, false, 1 or 0") {
				t.Errorf("%s=%q: error %v, want one naming the variable and the values it takes", name, value, err)
			}
		}
		for _, value := range []string{"true", "FALSE", "1", "0", "True"} {
			clearEnv(t)
			t.Setenv(name, value)
			if _, err := tryParse(); err != nil {
				t.Errorf("%s=%q: %v", name, value, err)
			}
		}
	}
	clearEnv(t)
	t.Setenv(EnvTemporalTLS, "TRUE")
	if cfg := parse(t); cfg.temporalTLS() != "TLS" {
		t.Errorf("TEMPORAL_TLS=TRUE connects with %s, want TLS", cfg.temporalTLS())
	}
}
