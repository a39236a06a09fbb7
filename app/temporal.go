package app

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
)

// Environment variables of the Temporal connection that storeopt names in its help and errors.
// They are read by go.temporal.io/sdk/contrib/envconfig, like the temporal CLI reads them, with
// every other TEMPORAL_* variable it knows (TEMPORAL_TLS_CLIENT_CERT_DATA, TEMPORAL_GRPC_META_*…).
const (
	EnvTemporalAPIKey        = "TEMPORAL_API_KEY"
	EnvTemporalTLS           = "TEMPORAL_TLS"
	EnvTemporalTLSCert       = "TEMPORAL_TLS_CLIENT_CERT_PATH"
	EnvTemporalTLSKey        = "TEMPORAL_TLS_CLIENT_KEY_PATH"
	EnvTemporalTLSCA         = "TEMPORAL_TLS_SERVER_CA_CERT_PATH"
	EnvTemporalTLSServerName = "TEMPORAL_TLS_SERVER_NAME"
	EnvTemporalProfile       = "TEMPORAL_PROFILE"
	EnvTemporalConfigFile    = "TEMPORAL_CONFIG_FILE"
)

// temporalFlags holds the Temporal connection flags as parsed; LoadTemporalProfile applies the
// ones that were given over the profile and the environment.
type temporalFlags struct {
	fs                                              *pflag.FlagSet
	address, namespace, profile, configFile, apiKey string
	tls, disableHostVerification                    bool
	certPath, keyPath, caPath, serverName           string
}

// bindTemporalFlags registers the Temporal connection flags, named like the temporal CLI's
// where storeopt has no older name (--temporal-address is the CLI's --address).
func (c *Config) bindTemporalFlags(fs *pflag.FlagSet) {
	f := &temporalFlags{fs: fs}
	c.temporalFlags = f
	fs.StringVar(&f.address, "temporal-address", "", "Temporal frontend host:port (default: env "+EnvTemporalAddress+
		", else the profile's address, else "+DefaultTemporalAddress+")")
	fs.StringVar(&f.namespace, "namespace", "", "Temporal namespace (default: env "+EnvTemporalNamespace+
		", else the profile's namespace, else "+DefaultNamespace+")")
	fs.StringVar(&f.profile, "profile", "", "profile of the Temporal client config file (env "+EnvTemporalProfile+"; default \"default\")")
	fs.StringVar(&f.configFile, "config-file", "", "Temporal client config file, TOML (env "+EnvTemporalConfigFile+
		"; default "+envconfig.DefaultConfigFilePath()+"; a missing file is no error)")
	fs.StringVar(&f.apiKey, "api-key", "", "Temporal API key, sent as a bearer token; turns TLS on (env "+EnvTemporalAPIKey+")")
	fs.BoolVar(&f.tls, "tls", false, "connect to Temporal with TLS (env "+EnvTemporalTLS+"; on by default with an API key or any TLS setting)")
	fs.StringVar(&f.certPath, "tls-cert-path", "", "client certificate of mTLS to Temporal, PEM file (env "+EnvTemporalTLSCert+")")
	fs.StringVar(&f.keyPath, "tls-key-path", "", "private key of the client certificate, PEM file (env "+EnvTemporalTLSKey+")")
	fs.StringVar(&f.caPath, "tls-ca-path", "", "CA certificate that signed Temporal's server certificate, PEM file; default: the system's roots (env "+EnvTemporalTLSCA+")")
	fs.StringVar(&f.serverName, "tls-server-name", "", "server name to verify Temporal's certificate against, and SNI (env "+EnvTemporalTLSServerName+")")
	fs.BoolVar(&f.disableHostVerification, "tls-disable-host-verification", false, "do not verify Temporal's server certificate (testing only)")
}

// LoadTemporalProfile resolves the Temporal connection the way the temporal CLI does, through
// go.temporal.io/sdk/contrib/envconfig: the profile (--profile, else $TEMPORAL_PROFILE, else
// "default") of the client config file (--config-file, else $TEMPORAL_CONFIG_FILE, else
// <user config dir>/temporalio/temporal.toml; a missing file is no error), then the TEMPORAL_*
// environment variables over it (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY,
// TEMPORAL_TLS*, TEMPORAL_GRPC_META_*…; empty ones count as unset), then the flags that were
// given over both. TemporalAddress and Namespace still empty then take DefaultTemporalAddress
// and DefaultNamespace. It fills TemporalAddress, Namespace and Temporal. Call it once after the
// flags are parsed (the commands do); on a Config whose flags were not bound it does nothing.
// Errors: an unreadable or malformed config file, a profile that was named but is not in it, a
// boolean TEMPORAL_* variable that is not true, false, 1 or 0.
func (c *Config) LoadTemporalProfile() error {
	f := c.temporalFlags
	if f == nil {
		return nil
	}
	if err := checkTemporalBooleans(nonEmptyEnv{}); err != nil {
		return err
	}
	prof, err := envconfig.LoadClientConfigProfile(envconfig.LoadClientConfigProfileOptions{
		ConfigFilePath:    f.configFile,
		ConfigFileProfile: f.profile,
		EnvLookup:         nonEmptyEnv{},
	})
	if err != nil {
		return fmt.Errorf("temporal client config: %w", err)
	}
	c.TemporalAddress, c.Namespace = prof.Address, prof.Namespace
	prof.Address, prof.Namespace = "", ""
	c.Temporal = prof
	f.applyTo(c)
	if c.TemporalAddress == "" {
		c.TemporalAddress = DefaultTemporalAddress
	}
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	return nil
}

// applyTo sets the connection settings whose flags were given.
func (f *temporalFlags) applyTo(c *Config) {
	set := f.fs.Changed
	tls := func() *envconfig.ClientConfigTLS {
		if c.Temporal.TLS == nil {
			c.Temporal.TLS = &envconfig.ClientConfigTLS{}
		}
		return c.Temporal.TLS
	}
	if set("temporal-address") {
		c.TemporalAddress = f.address
	}
	if set("namespace") {
		c.Namespace = f.namespace
	}
	if set("api-key") {
		c.Temporal.APIKey = f.apiKey
	}
	if set("tls") {
		tls().Disabled = !f.tls
	}
	if set("tls-cert-path") {
		tls().ClientCertPath, tls().ClientCertData = f.certPath, nil
	}
	if set("tls-key-path") {
		tls().ClientKeyPath, tls().ClientKeyData = f.keyPath, nil
	}
	if set("tls-ca-path") {
		tls().ServerCACertPath, tls().ServerCACertData = f.caPath, nil
	}
	if set("tls-server-name") {
		tls().ServerName = f.serverName
	}
	if set("tls-disable-host-verification") {
		tls().DisableHostVerification = f.disableHostVerification
	}
}

// TemporalClientOptions returns the Temporal client options of this configuration: HostPort and
// Namespace from TemporalAddress and Namespace; API key credentials, TLS, gRPC metadata and
// authority from Temporal. TLS is on when Temporal.TLS is set and not disabled, or when an API
// key is set and TLS is not disabled. Errors: TLS certificates or keys that cannot be read or
// parsed, contradictory TLS settings.
func (c Config) TemporalClientOptions() (client.Options, error) {
	p := c.Temporal
	p.Address, p.Namespace = c.TemporalAddress, c.Namespace
	opts, err := p.ToClientOptions(envconfig.ToClientOptionsRequest{})
	if err != nil {
		return client.Options{}, fmt.Errorf("temporal client config: %w", err)
	}
	return opts, nil
}

// temporalTLS says how the client connects, for logs and errors: "plaintext", "TLS" or "mTLS".
func (c Config) temporalTLS() string {
	t := c.Temporal.TLS
	switch {
	case t != nil && t.Disabled, t == nil && c.Temporal.APIKey == "":
		return "plaintext"
	case t != nil && (t.ClientCertPath != "" || len(t.ClientCertData) > 0):
		return "mTLS"
	}
	return "TLS"
}

// temporalBooleans are the TEMPORAL_* variables envconfig reads as booleans.
var temporalBooleans = []string{EnvTemporalTLS, "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION"}

// checkTemporalBooleans refuses a boolean TEMPORAL_* variable envconfig would ignore: it takes
// only 1, 0, true and false (any case) and silently skips anything else, so TEMPORAL_TLS=yes
// would connect without TLS.
func checkTemporalBooleans(env nonEmptyEnv) error {
	for _, name := range temporalBooleans {
		v, ok := env.LookupEnv(name)
		if !ok {
			continue
		}
		switch strings.ToLower(v) {
		case "1", "0", "true", "false":
		default:
			return fmt.Errorf("%s=%q: want true, false, 1 or 0", name, v)
		}
	}
	return nil
}

// nonEmptyEnv is the process environment without its empty variables: storeopt treats an empty
// variable as unset everywhere, while envconfig would take an empty TEMPORAL_TLS_CLIENT_CERT_PATH
// as "TLS on, no certificate".
type nonEmptyEnv struct{}

func (nonEmptyEnv) Environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" && v != "" {
			out = append(out, kv)
		}
	}
	return out
}

func (nonEmptyEnv) LookupEnv(key string) (string, bool) {
	v, ok := os.LookupEnv(key)
	return v, ok && v != ""
}
