package oauth_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/devspace-dev/devspace/internal/apptest"
)

// BenchmarkTokenRefresh measures one refresh_token round trip over loopback
// HTTP (client authentication, conditional consume, new pair, JSON).
func BenchmarkTokenRefresh(b *testing.B) {
	env := apptest.Start(b, apptest.Options{})
	c, tok := env.Grant(apptest.Approval{})
	rt := tok.RefreshToken
	b.ResetTimer()
	for b.Loop() {
		tr := env.Token(c, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}})
		if tr.Status != 200 {
			b.Fatalf("refresh: %+v", tr)
		}
		rt = tr.RefreshToken
	}
}

// BenchmarkVerify measures bearer verification (the per-request cost on /mcp).
func BenchmarkVerify(b *testing.B) {
	env := apptest.Start(b, apptest.Options{})
	_, tok := env.Grant(apptest.Approval{})
	ctx := context.Background()
	for b.Loop() {
		if _, err := env.App.OAuth().Verify(ctx, tok.AccessToken); err != nil {
			b.Fatal(err)
		}
	}
}
