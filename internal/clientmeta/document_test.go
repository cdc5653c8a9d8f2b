package clientmeta

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/displayname"
)

const docID = "https://app.example.com/oauth/client.json"

func TestParseDocumentValid(t *testing.T) {
	tests := []struct {
		name string
		body string
		want Document
	}{
		{
			name: "minimal gets defaults",
			body: `{"client_id":"` + docID + `","redirect_uris":["https://app.example.com/cb"]}`,
			want: Document{
				ClientID:                docID,
				RedirectURIs:            []string{"https://app.example.com/cb"},
				TokenEndpointAuthMethod: "none",
				GrantTypes:              []string{"authorization_code"},
				ResponseTypes:           []string{"code"},
			},
		},
		{
			name: "full",
			body: `{
				"client_id": "` + docID + `",
				"client_name": "  My\u0000 App\u202e\n ",
				"client_uri": "https://app.example.com/",
				"logo_uri": "https://app.example.com/logo.png",
				"redirect_uris": ["https://app.example.com/cb", "http://127.0.0.1:3000/cb", "http://localhost/cb", "http://[::1]:9/cb"],
				"token_endpoint_auth_method": "none",
				"grant_types": ["authorization_code", "refresh_token"],
				"response_types": ["code"],
				"scope": "project:read",
				"unknown_extension": {"nested": [1, 2, 3]}
			}`,
			want: Document{
				ClientID:                docID,
				ClientName:              "My App",
				RedirectURIs:            []string{"https://app.example.com/cb", "http://127.0.0.1:3000/cb", "http://localhost/cb", "http://[::1]:9/cb"},
				TokenEndpointAuthMethod: "none",
				GrantTypes:              []string{"authorization_code", "refresh_token"},
				ResponseTypes:           []string{"code"},
				ClientURI:               "https://app.example.com/",
				LogoURI:                 "https://app.example.com/logo.png",
			},
		},
		{
			name: "cosmetic URLs dropped when not https",
			body: `{"client_id":"` + docID + `","redirect_uris":["https://a.example/cb"],"client_uri":"javascript:alert(1)","logo_uri":"http://a.example/l.png","client_name":null}`,
			want: Document{
				ClientID:                docID,
				RedirectURIs:            []string{"https://a.example/cb"},
				TokenEndpointAuthMethod: "none",
				GrantTypes:              []string{"authorization_code"},
				ResponseTypes:           []string{"code"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseDocument([]byte(tt.body), docID)
			if err != nil {
				t.Fatalf("parseDocument: %v", err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("parseDocument mismatch\n got: %+v\nwant: %+v", *got, tt.want)
			}
		})
	}
}

func TestParseDocumentInvalid(t *testing.T) {
	doc := func(extra string) string {
		return `{"client_id":"` + docID + `"` + extra + `}`
	}
	okRedirect := `,"redirect_uris":["https://app.example.com/cb"]`
	tests := []struct {
		name, body, reason string
	}{
		{"malformed", `{"client_id":`, "well-formed"},
		{"not an object", `["` + docID + `"]`, "JSON object"},
		{"trailing data", doc(okRedirect) + `{}`, "after the JSON object"},
		{"duplicate key", `{"client_id":"https://evil.example/x","client_id":"` + docID + `"` + okRedirect + `}`, "duplicate"},
		{"client_id mismatch", `{"client_id":"https://app.example.com/other.json"` + okRedirect + `}`, "does not match"},
		{"client_id trailing slash", `{"client_id":"` + docID + `/"` + okRedirect + `}`, "does not match"},
		{"client_id key case", `{"Client_ID":"` + docID + `"` + okRedirect + `}`, "does not match"},
		{"client_id wrong type", `{"client_id":1` + okRedirect + `}`, "client_id has the wrong type"},
		{"missing redirect_uris", doc(""), "redirect_uris is required"},
		{"empty redirect_uris", doc(`,"redirect_uris":[]`), "redirect_uris is required"},
		{"redirect_uris string", doc(`,"redirect_uris":"https://a.example/cb"`), "wrong type"},
		{"http non-loopback redirect", doc(`,"redirect_uris":["http://app.example.com/cb"]`), "redirect_uris[0] must use https"},
		{"http private redirect", doc(`,"redirect_uris":["https://a.example/cb","http://10.0.0.1/cb"]`), "redirect_uris[1] must use https"},
		{"custom scheme redirect", doc(`,"redirect_uris":["com.example.app:/cb"]`), "must use https"},
		{"relative redirect", doc(`,"redirect_uris":["/cb"]`), "absolute"},
		{"fragment redirect", doc(`,"redirect_uris":["https://a.example/cb#x"]`), "fragment"},
		{"userinfo redirect", doc(`,"redirect_uris":["https://u@a.example/cb"]`), "user information"},
		{"client_secret", doc(okRedirect + `,"client_secret":"s3cret"`), "client_secret must not be present"},
		{"client_secret_expires_at", doc(okRedirect + `,"client_secret_expires_at":0`), "client_secret_expires_at"},
		{"secret basic", doc(okRedirect + `,"token_endpoint_auth_method":"client_secret_basic"`), "needs a shared secret"},
		{"secret post", doc(okRedirect + `,"token_endpoint_auth_method":"client_secret_post"`), "needs a shared secret"},
		{"private_key_jwt", doc(okRedirect + `,"token_endpoint_auth_method":"private_key_jwt"`), "only public clients"},
		{"no authorization_code grant", doc(okRedirect + `,"grant_types":["client_credentials"]`), "authorization_code"},
		{"no code response type", doc(okRedirect + `,"response_types":["token"]`), "response_types"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseDocument([]byte(tt.body), docID)
			if !errors.Is(err, ErrInvalidDocument) {
				t.Fatalf("parseDocument = %+v, %v; want ErrInvalidDocument", got, err)
			}
			if !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("error %q does not mention %q", err, tt.reason)
			}
		})
	}
}

func TestCleanName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"ChatGPT", "ChatGPT"},
		{"  padded\t", "padded"},
		{"a\u0007b\u200bc\u202ed", "abcd"},
		{strings.Repeat("x", 250), strings.Repeat("x", displayname.MaxRunes)},
		{strings.Repeat("é", 250), strings.Repeat("é", displayname.MaxRunes)}, // runes, not bytes
	}
	for _, tt := range tests {
		if got := cleanName(tt.in); got != tt.want {
			t.Errorf("cleanName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
