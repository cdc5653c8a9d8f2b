package app

import (
	"context"
	"log/slog"

	"github.com/devspace-dev/devspace/internal/config"
	"github.com/devspace-dev/devspace/internal/quicktunnel"
)

// ResolvePublicURL turns DEVSPACE_PUBLIC_BASE_URL=auto into the origin of
// cloudflared's quick tunnel, asked from DEVSPACE_CLOUDFLARED_METRICS with a
// bounded wait (quicktunnel.DefaultTimeout). It does nothing for a
// configured URL. serve calls it before New; New refuses an unresolved
// Config.
//
// A quick tunnel gets a new hostname whenever cloudflared restarts, and the
// OAuth issuer and resource follow it: clients then have to authorize
// again, and DevSpace has to be restarted to learn the new name.
func ResolvePublicURL(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
	if !cfg.PublicURLIsAuto() {
		return nil
	}
	origin, err := quicktunnel.Resolve(ctx, quicktunnel.Options{MetricsURL: cfg.CloudflaredMetrics, Logger: log})
	if err != nil {
		return &config.Error{Var: "DEVSPACE_PUBLIC_BASE_URL", Msg: "auto: " + err.Error()}
	}
	return cfg.ResolvePublicBaseURL(origin)
}
