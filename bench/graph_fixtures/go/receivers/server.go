package srv

import "net/http"

type Store struct{}

func (st *Store) Save(key string) error { return nil }

func (st Store) Load(key string) string { return key }

type Server struct {
	store *Store
	mux   *http.ServeMux
}

func (s *Server) Start() {
	s.routes()
	s.store.Save("started")
	s.mux.HandleFunc("/", nil)
	go func() {
		s.stop()
	}()
}

func (s *Server) routes() {
	_ = s.store.Load("routes")
}

func (s *Server) stop() {}

// Save on another type: s.store.Save must not land here.
type Cache struct{}

func (c *Cache) Save(key string) error { return nil }
