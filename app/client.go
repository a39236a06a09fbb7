package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// DialTimeout is how long Dial keeps retrying an unreachable Temporal frontend.
const DialTimeout = 30 * time.Second

// Dial connects to the Temporal frontend with cfg's client options (TemporalClientOptions:
// address, namespace, TLS or mTLS, API key), retrying with backoff for up to DialTimeout (the
// server may still be starting). The client logs through logger; WithMetrics makes it report the
// Temporal SDK's metrics. A refused TLS handshake, an untrusted server certificate or a refused
// API key is not retried: the error says what was refused and which setting to change.
// Otherwise it returns the last connection error when the frontend stays unreachable, or ctx's
// error when ctx ends first.
func Dial(ctx context.Context, cfg Config, logger *slog.Logger, options ...Option) (client.Client, error) {
	opts, err := cfg.TemporalClientOptions()
	if err != nil {
		return nil, err
	}
	opts.Logger = tlog.NewStructuredLogger(logger)
	opts.MetricsHandler = applyOptions(options).metricsHandler()
	where := fmt.Sprintf("temporal at %s (namespace %s, %s)", cfg.TemporalAddress, cfg.Namespace, cfg.temporalTLS())
	deadline := time.Now().Add(DialTimeout)
	wait := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		c, err := client.DialContext(ctx, opts)
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if refused := connectionRefusal(ctx, cfg, opts.ConnectionOptions.TLS, err); refused != "" {
			return nil, fmt.Errorf("%s: %s", where, refused)
		}
		if time.Now().Add(wait).After(deadline) {
			return nil, fmt.Errorf("%s unreachable after %s: %w%s", where, DialTimeout, err, plaintextHint(cfg, err))
		}
		logger.Warn("temporal not reachable yet, retrying", "address", cfg.TemporalAddress,
			"attempt", attempt, "error", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 4*time.Second)
	}
}

// connectionRefusal explains a dial error that no retry can fix (the server refused the client's
// certificate or API key, the client does not trust the server's certificate, one side does not
// speak TLS), or returns "". With TLS 1.3 a server that refuses the client certificate says so
// only after the handshake, and the client often sees just a broken connection: then a probe
// handshake of its own reads the server's alert. A Go client sends its certificate only when it
// is issued by a CA the server names, so "certificate required" with a certificate configured
// means that certificate was not acceptable.
func connectionRefusal(ctx context.Context, cfg Config, tlsConfig *tls.Config, err error) string {
	if s, ok := status.FromError(err); ok && (s.Code() == codes.Unauthenticated || s.Code() == codes.PermissionDenied) {
		return fmt.Sprintf("the server refused the credentials (%s): check the API key (--api-key, %s) or the client certificate, and the namespace",
			s.Message(), EnvTemporalAPIKey)
	}
	msg := err.Error()
	if tlsConfig != nil && !isTLSError(msg) {
		if probe := probeTLS(ctx, cfg.TemporalAddress, tlsConfig); probe != nil {
			msg = probe.Error()
		}
	}
	switch {
	case strings.Contains(msg, "certificate required") && cfg.temporalTLS() != "mTLS":
		return fmt.Sprintf("the server requires a client certificate (mTLS) and none was given (%s): set --tls-cert-path and --tls-key-path (%s, %s) or the profile's client_cert_path and client_key_path",
			tlsCause(msg), EnvTemporalTLSCert, EnvTemporalTLSKey)
	case strings.Contains(msg, "remote error: tls:"):
		return fmt.Sprintf("the server refused the client certificate%s (%s): use a certificate signed by a CA the server trusts (for Temporal Cloud, the CA certificate uploaded to the namespace), --tls-cert-path and --tls-key-path (%s, %s)",
			clientCertName(cfg), tlsCause(msg), EnvTemporalTLSCert, EnvTemporalTLSKey)
	case strings.Contains(msg, "x509:"):
		return fmt.Sprintf("the server's certificate is not trusted (%s): give the CA that signed it with --tls-ca-path (%s), or the name it was issued for with --tls-server-name (%s)",
			tlsCause(msg), EnvTemporalTLSCA, EnvTemporalTLSServerName)
	case strings.Contains(msg, "first record does not look like a TLS handshake"):
		return fmt.Sprintf("the server does not speak TLS (%s): connect without TLS (--tls=false, %s=false) or to its TLS port",
			tlsCause(msg), EnvTemporalTLS)
	}
	return ""
}

// clientCertName returns " <path>" of the configured client certificate file, or "".
func clientCertName(cfg Config) string {
	if t := cfg.Temporal.TLS; t != nil && t.ClientCertPath != "" {
		return " " + t.ClientCertPath
	}
	return ""
}

// isTLSError reports whether a dial error message already names the TLS cause.
func isTLSError(msg string) bool {
	return strings.Contains(msg, "tls:") || strings.Contains(msg, "x509:")
}

// tlsCause returns the TLS part of an error message ("remote error: tls: bad certificate").
func tlsCause(msg string) string {
	for _, marker := range []string{"remote error: tls:", "tls:", "x509:"} {
		if i := strings.Index(msg, marker); i >= 0 {
			return strings.TrimRight(msg[i:], `"`)
		}
	}
	return msg
}

// probeTLS makes one TLS connection to addr with the client's TLS configuration and waits
// briefly for the server's first bytes, to catch an alert the server sends after a TLS 1.3
// handshake. It returns the handshake's or the alert's error, or nil when the server kept the
// connection open.
func probeTLS(ctx context.Context, addr string, tlsConfig *tls.Config) error {
	conf := tlsConfig.Clone()
	conf.NextProtos = []string{"h2"}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := (&tls.Dialer{Config: conf}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	var b [1]byte
	if _, err := conn.Read(b[:]); err != nil && isTLSError(err.Error()) {
		return err
	}
	return nil
}

// plaintextHint adds a hint to the last error of a plaintext client whose connections were
// closed at once, as a TLS-only frontend does.
func plaintextHint(cfg Config, err error) string {
	var se interface{ GRPCStatus() *status.Status }
	if cfg.temporalTLS() == "plaintext" && (strings.Contains(err.Error(), "server preface") || errors.As(err, &se) && strings.Contains(err.Error(), "EOF")) {
		return fmt.Sprintf(" (the connection is plaintext: if the server requires TLS, turn it on with --tls, %s=true, a client certificate or an API key)", EnvTemporalTLS)
	}
	return ""
}
