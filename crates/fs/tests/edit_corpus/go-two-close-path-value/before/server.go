package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"
)

// Config holds the server settings read from the environment.
type Config struct {
	Addr         string
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	MaxBodyBytes int64
}

type Server struct {
	cfg    Config
	store  Store
	logger *slog.Logger
}

type Store interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Put(ctx context.Context, key string, value []byte) error
}

var ErrNotFound = errors.New("not found")

func New(cfg Config, store Store, logger *slog.Logger) *Server {
	return &Server{cfg: cfg, store: store, logger: logger}
}

func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{key}", s.getItem)
	mux.HandleFunc("PUT /items/{key}", s.putItem)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
	})
	return mux
}

func (s *Server) getItem(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	value, err := s.store.Get(r.Context(), key)
	if errors.Is(err, ErrNotFound) {
		http.Error(w, "no such item", http.StatusNotFound)
		return
	}
	if err != nil {
		s.logger.Error("get failed", "key", key, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(value)
}

func (s *Server) putItem(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	var payload struct {
		Value []byte `json:"value"`
	}
	if err := json.NewDecoder(body).Decode(&payload); err != nil {
		http.Error(w, "bad request body", http.StatusBadRequest)
		return
	}
	if err := s.store.Put(r.Context(), key, payload.Value); err != nil {
		s.logger.Error("put failed", "key", key, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) ListenAndServe(ctx context.Context) error {
	srv := &http.Server{
		Addr:         s.cfg.Addr,
		Handler:      s.Handler(),
		ReadTimeout:  s.cfg.ReadTimeout,
		WriteTimeout: s.cfg.WriteTimeout,
	}
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdownCtx)
	}()
	return srv.ListenAndServe()
}
