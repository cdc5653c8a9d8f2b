package oauth_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/oauth"
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

// BenchmarkVerify measures bearer verification (the per-request cost on
// /mcp): cached is Verify after the token's first verification (nothing
// written since), uncached reads the store every time, as Verify did
// before issue 20.
func BenchmarkVerify(b *testing.B) {
	env := apptest.Start(b, apptest.Options{})
	_, tok := env.Grant(apptest.Approval{})
	ctx := context.Background()
	srv := env.App.OAuth()
	for _, bc := range []struct {
		name   string
		verify func(context.Context, string) (*oauth.Principal, error)
	}{
		{"cached", srv.Verify},
		{"uncached", srv.VerifyUncached},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.verify(ctx, tok.AccessToken); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
