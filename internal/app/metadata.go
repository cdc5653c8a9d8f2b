package app

import (
	"context"
	"net/http"

	"github.com/devspace-dev/devspace/internal/clientmeta"
	"github.com/devspace-dev/devspace/internal/oauth"
)

// metadataFetcher adapts clientmeta to the oauth package's interface.
type metadataFetcher struct{ f *clientmeta.Fetcher }

func (m metadataFetcher) IsMetadataClientID(id string) bool { return m.f.Accepts(id) }

func (m metadataFetcher) Fetch(ctx context.Context, id string) (*oauth.ClientMetadata, error) {
	doc, err := m.f.Fetch(ctx, id)
	if err != nil {
		return nil, err
	}
	return &oauth.ClientMetadata{Name: doc.ClientName, RedirectURIs: doc.RedirectURIs}, nil
}

func httpClient(v any) *http.Client {
	c, _ := v.(*http.Client)
	return c
}
