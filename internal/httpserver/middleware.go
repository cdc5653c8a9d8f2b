package httpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/devspace-dev/devspace/internal/metrics"
)

type ctxKey struct{}

// RequestID returns the request ID stored by the middleware, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

// requestIDRE matches an acceptable incoming X-Request-Id; it is
// compiled on first use, not at package init: every command's launcher is
// this binary too, and runs every package's init before it can start the
// command (docs/performance.md, "Command start").
var requestIDRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`) })

// requestID accepts a well-formed incoming X-Request-Id or makes one, puts
// it in the request context and echoes it.
func requestID() gin.HandlerFunc {
	return func(c *gin.Context) {
		id := c.GetHeader("X-Request-Id")
		if !requestIDRE().MatchString(id) {
			var b [8]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), ctxKey{}, id))
		c.Header("X-Request-Id", id)
		c.Next()
	}
}

// routeLabel is the bounded route label: gin's route template, never the
// raw path.
func routeLabel(c *gin.Context) string {
	if p := c.FullPath(); p != "" {
		return p
	}
	return "unmatched"
}

// accessLog logs one line per request: method, route template, status,
// duration, request ID. Never the query string, headers or body: those may
// carry codes, tokens or passwords.
func accessLog(log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		log.LogAttrs(c.Request.Context(), slog.LevelInfo, "http request",
			slog.String("method", c.Request.Method),
			slog.String("route", routeLabel(c)),
			slog.Int("status", c.Writer.Status()),
			slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
			slog.String("request_id", RequestID(c.Request.Context())),
		)
	}
}

// instrument records http_requests_total and http_request_duration_seconds.
func instrument(m *metrics.Metrics) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		route := routeLabel(c)
		m.HTTPRequests.WithLabelValues(route, strconv.Itoa(c.Writer.Status())).Inc()
		m.HTTPRequestDuration.WithLabelValues(route).Observe(time.Since(start).Seconds())
	}
}

// recovery turns a panic into a bare 500, logging the cause with the
// request ID and never showing it to the client.
func recovery(log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				log.ErrorContext(c.Request.Context(), "panic in handler", "panic", v,
					"route", routeLabel(c), "request_id", RequestID(c.Request.Context()))
				if !c.Writer.Written() {
					c.AbortWithStatusJSON(http.StatusInternalServerError, gin.H{"error": "internal error"})
				} else {
					c.Abort()
				}
			}
		}()
		c.Next()
	}
}

// hostAllowlist rejects a request whose Host is not listed, before any body
// is read (DNS-rebinding protection for the public listener).
func hostAllowlist(allowed []string) gin.HandlerFunc {
	norm := make([]string, 0, len(allowed))
	for _, h := range allowed {
		norm = append(norm, strings.ToLower(h))
	}
	return func(c *gin.Context) {
		if !hostAllowed(norm, c.Request.Host) {
			c.AbortWithStatusJSON(http.StatusForbidden, gin.H{"error": "host not allowed"})
			return
		}
		c.Next()
	}
}

// hostAllowed matches host (with or without port) against the list, whose
// entries may carry a port or not.
func hostAllowed(allowed []string, host string) bool {
	host = strings.ToLower(host)
	if host == "" {
		return false
	}
	if slices.Contains(allowed, host) {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		return slices.Contains(allowed, h) || slices.Contains(allowed, "["+h+"]")
	}
	return false
}

// bodyLimit answers 413 for a declared body over max and caps any body
// while it is read.
func bodyLimit(max int64) gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.ContentLength > max {
			c.Header("Connection", "close")
			c.AbortWithStatusJSON(http.StatusRequestEntityTooLarge, gin.H{"error": "request body too large"})
			return
		}
		if c.Request.Body != nil {
			c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, max)
		}
		c.Next()
	}
}

// securityHeaders sets headers that are right for every public response.
func securityHeaders() gin.HandlerFunc {
	return func(c *gin.Context) {
		h := c.Writer.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		c.Next()
	}
}
