package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Path is where Server serves the metrics.
const Path = "/metrics"

// Server serves a Registry's metrics over HTTP at Path.
type Server struct {
	srv  *http.Server
	addr string
	done chan struct{}
}

// Listen listens on address (host:port; port 0 picks a free port) and serves r's metrics at Path
// in a goroutine until Close. It fails at once when the address cannot be listened on (in use,
// malformed), so a worker does not start without the metrics it was asked for. Serving errors
// after the start are logged.
func Listen(address string, r *Registry, logger *slog.Logger) (*Server, error) {
	if logger == nil {
		logger = slog.Default()
	}
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return nil, fmt.Errorf("metrics address %s: %w", address, err)
	}
	mux := http.NewServeMux()
	mux.Handle(Path, r.Handler())
	s := &Server{
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
			ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)},
		addr: ln.Addr().String(),
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics server stopped", "address", s.addr, "error", err)
		}
	}()
	return s, nil
}

// Addr returns the host:port the server listens on.
func (s *Server) Addr() string { return s.addr }

// URL returns the URL of the metrics: http://<Addr>/metrics.
func (s *Server) URL() string { return "http://" + s.addr + Path }

// Close stops the server, waiting up to 5 s for scrapes in progress.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.done
	return err
}
