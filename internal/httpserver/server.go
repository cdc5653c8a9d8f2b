// Package httpserver is the HTTP edge: three gin engines (public, control,
// metrics) with explicit middleware, and the net/http servers that run
// them. Domain packages hand it plain net/http handlers; gin types never
// leave this package.
package httpserver

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/devspace-dev/devspace/internal/control"
	"github.com/devspace-dev/devspace/internal/metrics"
	"github.com/devspace-dev/devspace/internal/oauth"
)

// Admin is what the control listener exposes; app implements it.
type Admin interface {
	ListGrants(ctx context.Context, all bool) ([]oauth.GrantSummary, error)
	RevokeGrant(ctx context.Context, id string) error
	RevokeAll(ctx context.Context) (int, error)
	RotatePassword(ctx context.Context, password []byte) (int, error)
	Projects() []control.ProjectInfo
	// ListProjects is Projects with each tool home's size.
	ListProjects(ctx context.Context) ([]control.ProjectInfo, error)
	// ClearTools empties a Project's tool home (control.ErrProjectNotFound).
	ClearTools(ctx context.Context, label string) (control.ClearToolsResult, error)
	// OrphanTools measures the tool homes no configured Project has.
	OrphanTools(ctx context.Context) (control.OrphanTools, error)
	// ClearOrphanTools removes them (control.ErrOrphansUnsure, wrapped).
	ClearOrphanTools(ctx context.Context) (control.ClearToolsResult, error)
	// ConsoleLink returns a one-time sign-in URL of the Owner's console;
	// control.ErrConsoleOff (wrapped) when the console is off.
	ConsoleLink(ctx context.Context) (string, error)
}

// ReadinessCheck is one named /readyz check. An Info check is reported
// but does not make the server unready.
type ReadinessCheck struct {
	Name  string
	Check func(ctx context.Context) bool
	Info  bool
}

// Route is a public endpoint served by a plain handler.
type Route struct {
	Method  string
	Path    string
	Handler http.Handler
}

// Options configure the listeners.
type Options struct {
	PublicAddr, ControlAddr, MetricsAddr string
	// ConsoleAddr is the Owner's console listener (DEVSPACE_ADMIN_LISTEN);
	// empty means none. Console is its handler, served there and nowhere
	// else.
	ConsoleAddr  string
	Console      http.Handler
	AllowedHosts []string
	MaxBodyBytes int64
	// Limits bound slow and numerous clients; the zero value means the
	// defaults (see Limits).
	Limits     Limits
	Routes     []Route // public routes (OAuth, /mcp, …)
	Readiness  []ReadinessCheck
	Admin      Admin
	ControlKey []byte // bearer key for the control API
	Metrics    *metrics.Metrics
	Logger     *slog.Logger
}

// Server owns the three listeners.
type Server struct {
	opts    Options
	log     *slog.Logger
	servers []*http.Server
	addrs   []net.Addr
	// lims are the listeners' connection trackers after Start: the
	// public one bounded (Limits.MaxConnections), the others not.
	lims []*connLimiter

	// baseCtx is every request's parent context; cancelling it ends
	// long-lived requests (MCP event streams) at shutdown.
	baseCtx    context.Context
	cancelBase context.CancelFunc

	mu       sync.Mutex
	shutdown bool
}

// streamGrace is how long Shutdown lets in-flight requests finish on their
// own before it cancels them: an open event stream (GET /mcp) never
// finishes, and must not hold the server for the whole drain deadline.
const streamGrace = 200 * time.Millisecond

// listenerNames name s.servers and s.lims in order (the console's only
// when it is on).
var listenerNames = [...]string{"public", "control", "metrics", "console"}

// slowDrain is when Shutdown logs the connections it still waits for.
const slowDrain = time.Second

func init() { gin.SetMode(gin.ReleaseMode) }

// New builds the engines; nothing listens until Start.
func New(opts Options) *Server {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	opts.Limits = opts.Limits.withDefaults()
	s := &Server{opts: opts, log: log.With("component", "http")}
	s.baseCtx, s.cancelBase = context.WithCancel(context.Background())
	s.servers = []*http.Server{
		s.httpServer(opts.PublicAddr, s.publicEngine()),
		s.httpServer(opts.ControlAddr, s.controlEngine()),
		s.httpServer(opts.MetricsAddr, s.metricsEngine()),
	}
	if opts.ConsoleAddr != "" && opts.Console != nil {
		s.servers = append(s.servers, s.httpServer(opts.ConsoleAddr, s.consoleEngine()))
	}
	return s
}

func (s *Server) httpServer(addr string, h http.Handler) *http.Server {
	lim := s.opts.Limits
	return &http.Server{
		Addr: addr,
		// Bodies are timed out by bodyDeadline (a stall or the whole body)
		// rather than ReadTimeout, which would also cut off long responses'
		// keep-alive reads; headers by ReadHeaderTimeout.
		Handler:           bodyDeadline(h, lim.BodyIdleTimeout, lim.BodyTimeout),
		ReadHeaderTimeout: lim.ReadHeaderTimeout,
		IdleTimeout:       lim.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return s.baseCtx },
	}
}

func (s *Server) base(name string) *gin.Engine {
	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.ContextWithFallback = true
	log := s.log.With("listener", name)
	e.Use(recovery(log), requestID(), accessLog(log), instrument(s.opts.Metrics))
	return e
}

// PublicHandler returns the public engine (for httptest servers).
func (s *Server) PublicHandler() http.Handler { return s.servers[0].Handler }

// ControlHandler returns the control engine (for httptest servers).
func (s *Server) ControlHandler() http.Handler { return s.servers[1].Handler }

// MetricsHandler returns the metrics engine (for httptest servers).
func (s *Server) MetricsHandler() http.Handler { return s.servers[2].Handler }

// ConsoleHandler returns the console engine (for httptest servers); nil
// when the console is off.
func (s *Server) ConsoleHandler() http.Handler {
	if len(s.servers) < 4 {
		return nil
	}
	return s.servers[3].Handler
}

// consoleEngine serves the Owner's console: its own checks (Host, Origin,
// session, CSRF) are the console package's; here it gets the common
// recovery, request ID, access log and metrics, and a body cap.
func (s *Server) consoleEngine() *gin.Engine {
	e := s.base("console")
	e.Use(bodyLimit(1 << 20))
	h := gin.WrapH(s.opts.Console)
	e.NoRoute(h)
	e.NoMethod(h)
	e.HandleMethodNotAllowed = false
	return e
}

func (s *Server) publicEngine() *gin.Engine {
	e := s.base("public")
	e.Use(hostAllowlist(s.opts.AllowedHosts), bodyLimit(s.opts.MaxBodyBytes), securityHeaders())
	e.GET("/healthz", func(c *gin.Context) {
		c.Header("Cache-Control", "no-store")
		c.JSON(http.StatusOK, gin.H{"status": "ok"})
	})
	e.GET("/readyz", s.readyz)
	// We are not an OpenID provider; an explicit 404 keeps probing clients
	// from guessing.
	e.GET("/.well-known/openid-configuration", func(c *gin.Context) {
		c.JSON(http.StatusNotFound, gin.H{"error": "not an OpenID provider"})
	})
	for _, r := range s.opts.Routes {
		e.Handle(r.Method, r.Path, gin.WrapH(r.Handler))
	}
	e.NoRoute(func(c *gin.Context) { c.JSON(http.StatusNotFound, gin.H{"error": "not found"}) })
	e.NoMethod(func(c *gin.Context) { c.JSON(http.StatusMethodNotAllowed, gin.H{"error": "method not allowed"}) })
	return e
}

func (s *Server) readyz(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 3*time.Second)
	defer cancel()
	checks := make(map[string]bool, len(s.opts.Readiness))
	ready := true
	for _, rc := range s.opts.Readiness {
		ok := rc.Check(ctx)
		checks[rc.Name] = ok
		ready = ready && (ok || rc.Info)
	}
	status := http.StatusOK
	if !ready {
		status = http.StatusServiceUnavailable
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(status, gin.H{"ready": ready, "checks": checks})
}

func (s *Server) metricsEngine() *gin.Engine {
	e := s.base("metrics")
	e.GET("/metrics", gin.WrapH(promhttp.HandlerFor(s.opts.Metrics.Registry, promhttp.HandlerOpts{})))
	return e
}

func (s *Server) controlEngine() *gin.Engine {
	e := s.base("control")
	e.Use(bodyLimit(1<<20), s.controlAuth())
	v1 := e.Group("/v1")
	v1.GET("/grants", func(c *gin.Context) {
		grants, err := s.opts.Admin.ListGrants(c.Request.Context(), c.Query("all") == "1")
		if err != nil {
			s.controlError(c, err)
			return
		}
		c.JSON(http.StatusOK, grants)
	})
	v1.POST("/grants/:id/revoke", func(c *gin.Context) {
		err := s.opts.Admin.RevokeGrant(c.Request.Context(), c.Param("id"))
		if errors.Is(err, oauth.ErrNotRecorded) {
			c.JSON(http.StatusOK, control.RevokeAllResult{NotRecorded: true})
			return
		}
		if err != nil {
			s.controlError(c, err)
			return
		}
		c.Status(http.StatusNoContent)
	})
	v1.POST("/revoke-all", func(c *gin.Context) {
		n, err := s.opts.Admin.RevokeAll(c.Request.Context())
		s.controlRevoked(c, n, err)
	})
	v1.POST("/owner/rotate-password", func(c *gin.Context) {
		var req control.RotateRequest
		if err := json.NewDecoder(c.Request.Body).Decode(&req); err != nil || len(req.Password) < 8 {
			c.JSON(http.StatusBadRequest, control.Error{Error: "a new password of at least 8 characters is required"})
			return
		}
		n, err := s.opts.Admin.RotatePassword(c.Request.Context(), []byte(req.Password))
		s.controlRevoked(c, n, err)
	})
	v1.GET("/projects", func(c *gin.Context) {
		if c.Query("tools") != "1" {
			c.JSON(http.StatusOK, s.opts.Admin.Projects())
			return
		}
		projects, err := s.opts.Admin.ListProjects(c.Request.Context())
		if err != nil {
			s.controlError(c, err)
			return
		}
		c.JSON(http.StatusOK, projects)
	})
	v1.POST("/projects/:label/clear-tools", func(c *gin.Context) {
		res, err := s.opts.Admin.ClearTools(c.Request.Context(), c.Param("label"))
		if errors.Is(err, control.ErrProjectNotFound) {
			c.JSON(http.StatusNotFound, control.Error{Error: "no Project with that label"})
			return
		}
		if err != nil {
			s.controlError(c, err)
			return
		}
		c.JSON(http.StatusOK, res)
	})
	v1.GET("/tools/orphans", func(c *gin.Context) {
		res, err := s.opts.Admin.OrphanTools(c.Request.Context())
		if err != nil {
			s.controlError(c, err)
			return
		}
		c.JSON(http.StatusOK, res)
	})
	v1.POST("/tools/orphans/clear", func(c *gin.Context) {
		res, err := s.opts.Admin.ClearOrphanTools(c.Request.Context())
		if errors.Is(err, control.ErrOrphansUnsure) {
			c.JSON(http.StatusConflict, control.Error{Error: control.ErrOrphansUnsure.Error()})
			return
		}
		if err != nil {
			s.controlError(c, err)
			return
		}
		c.JSON(http.StatusOK, res)
	})
	v1.POST("/console/link", func(c *gin.Context) {
		link, err := s.opts.Admin.ConsoleLink(c.Request.Context())
		if errors.Is(err, control.ErrConsoleOff) {
			c.JSON(http.StatusConflict, control.Error{Error: err.Error()})
			return
		}
		if err != nil {
			s.controlError(c, err)
			return
		}
		c.JSON(http.StatusOK, control.ConsoleLink{URL: link})
	})
	return e
}

// controlAuth requires the derived control key as a bearer token.
func (s *Server) controlAuth() gin.HandlerFunc {
	want := []byte("Bearer " + control.EncodeKey(s.opts.ControlKey))
	return func(c *gin.Context) {
		got := []byte(c.GetHeader("Authorization"))
		if len(s.opts.ControlKey) == 0 || subtle.ConstantTimeCompare(got, want) != 1 {
			c.AbortWithStatusJSON(http.StatusUnauthorized, control.Error{Error: "control key required"})
			return
		}
		c.Next()
	}
}

// controlRevoked answers an emergency action that ended n grants: done,
// done but not yet recorded (oauth.ErrNotRecorded: it holds in this
// process and is retried), or failed.
func (s *Server) controlRevoked(c *gin.Context, n int, err error) {
	if err != nil && !errors.Is(err, oauth.ErrNotRecorded) {
		s.controlError(c, err)
		return
	}
	c.JSON(http.StatusOK, control.RevokeAllResult{Revoked: n, NotRecorded: err != nil})
}

func (s *Server) controlError(c *gin.Context, err error) {
	if errors.Is(err, oauth.ErrGrantNotFound) {
		c.JSON(http.StatusNotFound, control.Error{Error: "no grant with that ID"})
		return
	}
	s.log.ErrorContext(c.Request.Context(), "control request failed", "route", routeLabel(c), "err", err,
		"request_id", RequestID(c.Request.Context()))
	c.JSON(http.StatusInternalServerError, control.Error{Error: "internal error; see the server log"})
}

// Start binds all three listeners (failing fast if any address is taken)
// and serves them in the background. Errors after start are logged.
func (s *Server) Start() error {
	var lns []net.Listener
	for _, srv := range s.servers {
		ln, err := net.Listen("tcp", srv.Addr)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return fmt.Errorf("listen on %s: %w", srv.Addr, err)
		}
		lns = append(lns, ln)
	}
	// The public listener is bounded; the others are loopback or
	// cluster-internal. All are tracked, so that Shutdown can close the
	// connections that never sent a request.
	for i, srv := range s.servers {
		limit := math.MaxInt
		if i == 0 {
			limit = s.opts.Limits.MaxConnections
		}
		l := newConnLimiter(lns[i], limit)
		s.lims = append(s.lims, l)
		lns[i] = l
		srv.ConnState = l.connState
		srv.ConnContext = l.connContext
	}
	for i, srv := range s.servers {
		s.addrs = append(s.addrs, lns[i].Addr())
		go func(srv *http.Server, ln net.Listener) {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("listener stopped", "addr", ln.Addr().String(), "err", err)
			}
		}(srv, lns[i])
	}
	attrs := []any{"public", s.addrs[0].String(), "control", s.addrs[1].String(), "metrics", s.addrs[2].String()}
	if len(s.addrs) > 3 {
		attrs = append(attrs, "console", s.addrs[3].String())
	}
	s.log.Info("listening", attrs...)
	return nil
}

// Addrs returns the bound public, control and metrics addresses after
// Start, then the console's when it is on.
func (s *Server) Addrs() []net.Addr { return s.addrs }

// Shutdown stops accepting, closes the connections that have not sent a
// request (net/http would wait up to 5 s for each: a silent socket must not
// hold the exit), lets in-flight requests finish for a moment
// (streamGrace), then cancels their contexts, which ends open event
// streams; it waits for the handlers until ctx ends, then closes what
// remains. It is idempotent.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		return nil
	}
	s.shutdown = true
	s.mu.Unlock()
	// net/http serves no request read after its Shutdown began, so a
	// connection that has not sent one has nothing left to get.
	for _, l := range s.lims {
		l.drain()
	}
	// A drain that takes long says what it waits for.
	slow := time.AfterFunc(slowDrain, func() {
		for i, l := range s.lims {
			if busy := l.states(); len(busy) > 0 {
				s.log.Warn("shutdown still waiting for connections", "listener", listenerNames[i], "states", busy)
			}
		}
	})
	defer slow.Stop()
	stop := time.AfterFunc(streamGrace, s.cancelBase)
	defer stop.Stop()
	defer s.cancelBase()
	var errs []error
	var wg sync.WaitGroup
	var emu sync.Mutex
	for _, srv := range s.servers {
		wg.Add(1)
		go func(srv *http.Server) {
			defer wg.Done()
			if err := srv.Shutdown(ctx); err != nil {
				srv.Close()
				emu.Lock()
				errs = append(errs, err)
				emu.Unlock()
			}
		}(srv)
	}
	wg.Wait()
	return errors.Join(errs...)
}
