// Package control is the owner's administrative API on the loopback-only
// control listener: its wire types and the client the CLI uses. The CLI
// authenticates with a key derived from auth.json, so only someone who can
// read the state directory can call it.
package control

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/devspace-dev/devspace/internal/oauth"
)

// KeyPurpose is the HKDF purpose of the control API key.
const KeyPurpose = "control-api"

// EncodeKey renders a derived key as the bearer value.
func EncodeKey(key []byte) string { return hex.EncodeToString(key) }

// ErrUnavailable means no server answered on the control address; the CLI
// then works on the state directory directly.
var ErrUnavailable = errors.New("control listener not reachable")

// ErrKeyRejected means a DevSpace control API answered but refused the
// key: the server there serves another state directory (its auth.json
// derives another control key).
var ErrKeyRejected = errors.New("the DevSpace server there serves another state (it refused this state's control key)")

// ErrConsoleOff means the Owner's console is off (DEVSPACE_ADMIN_LISTEN=off),
// so there is no sign-in link to give.
var ErrConsoleOff = errors.New("the Owner's console is off (DEVSPACE_ADMIN_LISTEN=off)")

// ConsoleLink is a one-time sign-in link of the Owner's console.
type ConsoleLink struct {
	URL string `json:"url"`
}

// ProjectInfo describes one configured Project for `projects list`.
type ProjectInfo struct {
	Ref        string `json:"projectRef"`
	Label      string `json:"label"`
	Path       string `json:"path"`
	Accessible bool   `json:"accessible"`
	// ToolsBytes is the size of the Project's tool home (issue 34), when
	// it was measured (`projects list`) and the Project is accessible.
	ToolsBytes *int64 `json:"toolsBytes,omitempty"`
}

// ClearToolsResult is what `projects clear-tools` did: the bytes the
// tool home held and the commands it stopped (those that could write it).
type ClearToolsResult struct {
	FreedBytes int64 `json:"freedBytes"`
	Stopped    int   `json:"stopped"`
	// Removed counts the tool homes `clear-tools --orphans` removed.
	Removed int `json:"removed,omitempty"`
}

// ErrProjectNotFound means no configured Project has the label asked for.
var ErrProjectNotFound = errors.New("no Project with that label")

// OrphanTools are the tool homes under DEVSPACE_TOOLS_DIR that no
// configured Project has: a Project removed from DEVSPACE_PROJECTS, or
// whose root directory was replaced (a new clone), left its tool home.
type OrphanTools struct {
	Count int   `json:"count"`
	Bytes int64 `json:"bytes"`
	// Unsure names a configured Project that is not accessible: its tool
	// home cannot be told from an orphan's, so none is removed ("" when
	// every Project is accessible).
	Unsure string `json:"unsure,omitempty"`
}

// ErrOrphansUnsure means orphaned tool homes were not removed because a
// configured Project is not accessible (OrphanTools.Unsure), or none is
// configured: a Project's tool home could not be told from an orphan's.
var ErrOrphansUnsure = errors.New("nothing removed: a configured Project is not accessible, or none is configured, so a Project's tool home cannot be told from an orphan's; make every Project in DEVSPACE_PROJECTS accessible first")

// RevokeAllResult reports how many grants an emergency action ended.
// NotRecorded is set when the action holds in the running server but its
// record failed (a full disk): the server retries it.
type RevokeAllResult struct {
	Revoked     int  `json:"revoked"`
	NotRecorded bool `json:"notRecorded,omitempty"`
}

// RotateRequest carries a new Owner password.
type RotateRequest struct {
	Password string `json:"password"`
}

// Error is the control API's error body.
type Error struct {
	Error string `json:"error"`
}

// Client calls the control API. The zero value is not usable; build it
// with NewClient.
type Client struct {
	base string
	key  string
	http *http.Client
}

// NewClient returns a client for the control listener at addr (host:port).
// A wildcard host is reached through loopback.
func NewClient(addr string, key []byte) *Client {
	host, port, err := net.SplitHostPort(addr)
	if err == nil && (host == "" || host == "0.0.0.0" || host == "::") {
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	return &Client{base: "http://" + addr, key: EncodeKey(key), http: &http.Client{Timeout: 30 * time.Second}}
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var opErr *net.OpError
		if errors.As(err, &opErr) && opErr.Op == "dial" {
			return fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		return fmt.Errorf("control request: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("control response: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		var e Error
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			if resp.StatusCode == http.StatusUnauthorized {
				return ErrKeyRejected
			}
			if resp.StatusCode == http.StatusConflict {
				for _, known := range []error{ErrConsoleOff, ErrOrphansUnsure} {
					if e.Error == known.Error() {
						return known
					}
				}
			}
			if resp.StatusCode == http.StatusNotFound {
				return fmt.Errorf("%w: %s", oauth.ErrGrantNotFound, e.Error)
			}
			return errors.New(e.Error)
		}
		return fmt.Errorf("control API answered %s", resp.Status)
	}
	if out != nil && len(data) > 0 {
		return json.Unmarshal(data, out)
	}
	return nil
}

// notRecorded is oauth.ErrNotRecorded when the server said so.
func notRecorded(r RevokeAllResult) error {
	if r.NotRecorded {
		return oauth.ErrNotRecorded
	}
	return nil
}

// Grants lists grants; all includes revoked and expired ones.
func (c *Client) Grants(ctx context.Context, all bool) ([]oauth.GrantSummary, error) {
	var out []oauth.GrantSummary
	q := ""
	if all {
		q = "?all=1"
	}
	return out, c.do(ctx, http.MethodGet, "/v1/grants"+q, nil, &out)
}

// RevokeGrant revokes one grant.
func (c *Client) RevokeGrant(ctx context.Context, id string) error {
	var out RevokeAllResult
	if err := c.do(ctx, http.MethodPost, "/v1/grants/"+url.PathEscape(id)+"/revoke", nil, &out); err != nil {
		return err
	}
	return notRecorded(out)
}

// RevokeAll ends every grant.
func (c *Client) RevokeAll(ctx context.Context) (int, error) {
	var out RevokeAllResult
	if err := c.do(ctx, http.MethodPost, "/v1/revoke-all", nil, &out); err != nil {
		return 0, err
	}
	return out.Revoked, notRecorded(out)
}

// RotatePassword sets a new Owner password; every grant ends.
func (c *Client) RotatePassword(ctx context.Context, password string) (int, error) {
	var out RevokeAllResult
	if err := c.do(ctx, http.MethodPost, "/v1/owner/rotate-password", RotateRequest{Password: password}, &out); err != nil {
		return 0, err
	}
	return out.Revoked, notRecorded(out)
}

// Projects lists the configured Projects as the running server sees them.
func (c *Client) Projects(ctx context.Context) ([]ProjectInfo, error) {
	var out []ProjectInfo
	return out, c.do(ctx, http.MethodGet, "/v1/projects", nil, &out)
}

// ConsoleLink asks the running server for a one-time sign-in link of the
// Owner's console (2 minutes, one use). ErrConsoleOff when it is off.
func (c *Client) ConsoleLink(ctx context.Context) (string, error) {
	var out ConsoleLink
	if err := c.do(ctx, http.MethodPost, "/v1/console/link", nil, &out); err != nil {
		return "", err
	}
	return out.URL, nil
}

// ProjectsWithTools is Projects with each tool home's size measured
// (slower: it walks the tool homes).
func (c *Client) ProjectsWithTools(ctx context.Context) ([]ProjectInfo, error) {
	var out []ProjectInfo
	return out, c.do(ctx, http.MethodGet, "/v1/projects?tools=1", nil, &out)
}

// OrphanTools counts and measures the tool homes no configured Project has.
func (c *Client) OrphanTools(ctx context.Context) (OrphanTools, error) {
	var out OrphanTools
	return out, c.do(ctx, http.MethodGet, "/v1/tools/orphans", nil, &out)
}

// ClearOrphanTools removes the tool homes no configured Project has;
// ErrOrphansUnsure when a configured Project is not accessible.
func (c *Client) ClearOrphanTools(ctx context.Context) (ClearToolsResult, error) {
	var out ClearToolsResult
	return out, c.do(ctx, http.MethodPost, "/v1/tools/orphans/clear", nil, &out)
}

// HumanBytes writes n bytes for a person, in the largest binary unit that
// keeps it at least 1 ("512 B", "3.0 MiB"): the CLI and the console.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// ClearTools empties the tool home of the Project labelled label, stopping
// the commands that could write it. ErrProjectNotFound when no Project has
// that label.
func (c *Client) ClearTools(ctx context.Context, label string) (ClearToolsResult, error) {
	var out ClearToolsResult
	err := c.do(ctx, http.MethodPost, "/v1/projects/"+url.PathEscape(label)+"/clear-tools", nil, &out)
	if errors.Is(err, oauth.ErrGrantNotFound) { // do's reading of a 404
		err = ErrProjectNotFound
	}
	return out, err
}

// ServesOtherState reports whether a DevSpace server answers on addr that
// does not accept key, that is, one serving another state directory. With
// a nil key it reports whether any DevSpace server answers there. Nothing
// listening, or something that is not a DevSpace control API, is false.
func ServesOtherState(ctx context.Context, addr string, key []byte) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := NewClient(addr, key).Projects(ctx)
	return errors.Is(err, ErrKeyRejected)
}

// IsUnavailable reports whether err means no server is running.
func IsUnavailable(err error) bool {
	return errors.Is(err, ErrUnavailable) || (err != nil && strings.Contains(err.Error(), "connection refused"))
}
