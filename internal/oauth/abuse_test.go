package oauth_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/oauth"
)

var requestTokenRE = regexp.MustCompile(`name="request" value="([^"]+)"`)

// startRequest opens an authorization request for c and returns its
// step-1 request token.
func startRequest(t *testing.T, env *apptest.Env, c apptest.Client) string {
	t.Helper()
	_, challenge := apptest.PKCE()
	resp, err := apptest.NoRedirect.Get(env.AuthURL(c, challenge, "s", "", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := requestTokenRE.FindSubmatch(body)
	if resp.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("authorize: %d %s", resp.StatusCode, body)
	}
	return html.UnescapeString(string(m[1]))
}

// postPassword submits step 1 and returns the status and Retry-After.
func postPassword(env *apptest.Env, request, password string) (int, string, error) {
	return postPasswordFrom(env, request, password, "")
}

// postPasswordFrom is postPassword with clientIP in Cf-Connecting-Ip (none
// when empty), as cloudflared sends it.
func postPasswordFrom(env *apptest.Env, request, password, clientIP string) (int, string, error) {
	form := url.Values{"request": {request}, "password": {password}}
	req, _ := http.NewRequest(http.MethodPost, env.URL+"/oauth/authorize", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", env.URL)
	if clientIP != "" {
		req.Header.Set(oauth.DefaultClientIPHeader, clientIP)
	}
	resp, err := apptest.NoRedirect.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), nil
}

// TestConcurrentPasswordGuesses: 60 concurrent wrong passwords on one
// authorization request. Each 401 is one Argon2 verification (the audit
// event owner_password_failed is logged once per verification); a 429
// does no hashing. Attempts are reserved before they are verified, so at
// most Free+1 guesses are verified and all others are refused with
// Retry-After.
func TestConcurrentPasswordGuesses(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	c := env.Register("brute", "http://127.0.0.1:9/cb", "client_secret_basic")
	id := startRequest(t, env, c)
	const n = 60
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		statuses = map[int]int{}
		noRetry  int
	)
	start := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			st, retry, err := postPassword(env, id, "wrong password!")
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Error(err)
				return
			}
			statuses[st]++
			if st == http.StatusTooManyRequests && retry == "" {
				noRetry++
			}
		}()
	}
	close(start)
	wg.Wait()
	verified := strings.Count(env.Logs.String(), `"owner_password_failed"`)
	if verified != statuses[http.StatusUnauthorized] {
		t.Errorf("audit says %d verifications, %d answers were 401", verified, statuses[http.StatusUnauthorized])
	}
	if verified > 4 {
		t.Errorf("%d concurrent wrong passwords were verified with Argon2 (statuses %v); want at most 4", verified, statuses)
	}
	if statuses[http.StatusUnauthorized]+statuses[http.StatusTooManyRequests] != n {
		t.Errorf("statuses = %v, want only 401 and 429", statuses)
	}
	if noRetry > 0 {
		t.Errorf("%d answers 429 without Retry-After", noRetry)
	}
}

// TestConcurrentPasswordGuessesAcrossRequests: opening a fresh
// authorization request per guess, from a fresh address each time, does
// not escape the per-client limit. The addresses come from a trusted
// proxy, so no other key links the guesses: half are sent at once, the
// rest one after another (concurrent guesses alone are bounded by the
// verifications in flight, whatever the keys).
func TestConcurrentPasswordGuessesAcrossRequests(t *testing.T) {
	env := apptest.Start(t, apptest.Options{Env: map[string]string{"DEVSPACE_TRUSTED_PROXIES": "127.0.0.1"}})
	c := env.Register("brute", "http://127.0.0.1:9/cb", "client_secret_basic")
	const n = 30
	ids := make([]string, n)
	for i := range ids {
		ids[i] = startRequest(t, env, c)
	}
	guess := func(i int) {
		if _, _, err := postPasswordFrom(env, ids[i], "wrong password!", fmt.Sprintf("203.0.113.%d", i+1)); err != nil {
			t.Error(err)
		}
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n / 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			guess(i)
		}()
	}
	close(start)
	wg.Wait()
	for i := n / 2; i < n; i++ {
		guess(i)
	}
	if verified := strings.Count(env.Logs.String(), `"owner_password_failed"`); verified > 4 {
		t.Errorf("%d wrong passwords verified over %d requests of one client from %d addresses; want at most 4", verified, n, n)
	}
}

// TestWrongPasswordsDoNotLockOutOwner: an attacker's wrong passwords on
// their own authorization request put only that request, their client and
// — when a trusted proxy names it — their address in back-off. Behind a
// tunnel without a trusted proxy the attacker and the Owner share the
// tunnel's address, and a forged client-address header from a peer that
// is not a trusted proxy names nobody; neither may hold the Owner's
// sign-in in back-off.
func TestWrongPasswordsDoNotLockOutOwner(t *testing.T) {
	for _, tc := range []struct {
		name                string
		proxies             string // DEVSPACE_TRUSTED_PROXIES; the test's peer is 127.0.0.1
		attackerIP, ownerIP string // Cf-Connecting-Ip sent, none when empty
		want                int    // the Owner's answer to the right password
	}{
		{name: "no trusted proxy", want: http.StatusOK},
		{name: "forged header from an untrusted peer", proxies: "10.0.0.0/8",
			attackerIP: "198.51.100.1", ownerIP: "198.51.100.1", want: http.StatusOK},
		{name: "trusted proxy names another address", proxies: "127.0.0.1",
			attackerIP: "203.0.113.7", ownerIP: "198.51.100.1", want: http.StatusOK},
		// The per-source key still works where the source is known: the
		// attacker's next client from the same address waits too.
		{name: "trusted proxy names the attacker's address", proxies: "127.0.0.1",
			attackerIP: "203.0.113.7", ownerIP: "203.0.113.7", want: http.StatusTooManyRequests},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := apptest.Start(t, apptest.Options{Env: map[string]string{"DEVSPACE_TRUSTED_PROXIES": tc.proxies}})
			attacker := env.Register("attacker", "http://127.0.0.1:9/cb", "none")
			owner := env.Register("ChatGPT", "http://127.0.0.1:9/callback", "client_secret_basic")
			id := startRequest(t, env, attacker)
			// The clock stands still, so a back-off, once started, lasts.
			statuses := make([]int, 5)
			for i := range statuses {
				st, _, err := postPasswordFrom(env, id, "wrong password!", tc.attackerIP)
				if err != nil {
					t.Fatal(err)
				}
				statuses[i] = st
			}
			if want := []int{401, 401, 401, 401, 429}; !slices.Equal(statuses, want) {
				t.Fatalf("attacker's wrong passwords: %v, want %v", statuses, want)
			}
			st, retry, err := postPasswordFrom(env, startRequest(t, env, owner), apptest.Password, tc.ownerIP)
			if err != nil {
				t.Fatal(err)
			}
			if st != tc.want {
				t.Errorf("Owner's right password on their own request: %d (Retry-After %q), want %d", st, retry, tc.want)
			}
		})
	}
}

// TestAuthorizeRequestFloodKeepsOwnersRequest: authorization requests cost
// nothing to open, so a flood of them — more than any bounded store of
// pending requests would hold — must not expire the Owner's request
// while they type the password. A request token cannot be altered or
// outlive its 10 minutes either.
func TestAuthorizeRequestFloodKeepsOwnersRequest(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	owner := env.Register("ChatGPT", "http://127.0.0.1:9/callback", "client_secret_basic")
	attacker := env.Register("attacker", "http://127.0.0.1:9/evil", "none")
	id := startRequest(t, env, owner)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, challenge := apptest.PKCE()
			for range 150 {
				resp, err := apptest.NoRedirect.Get(env.AuthURL(attacker, challenge, "s", "", nil))
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()

	if st, _, err := postPassword(env, id, apptest.Password); err != nil || st != http.StatusOK {
		t.Errorf("Owner's request after 600 others: %d (err %v), want 200", st, err)
	}

	// Sealed: the attacker's redirect URI in the Owner's token is refused.
	payload, mac, _ := strings.Cut(strings.TrimPrefix(id, "req_"), ".")
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		t.Fatalf("request token %q: %v", id, err)
	}
	forged := strings.Replace(string(raw), owner.RedirectURI, attacker.RedirectURI, 1)
	if forged == string(raw) {
		t.Fatalf("request token payload %s does not hold the redirect URI", raw)
	}
	forgedID := "req_" + base64.RawURLEncoding.EncodeToString([]byte(forged)) + "." + mac
	if st, _, err := postPassword(env, forgedID, apptest.Password); err != nil || st != http.StatusBadRequest {
		t.Errorf("altered request token: %d (err %v), want 400", st, err)
	}
	env.Clock.Advance(10*time.Minute + time.Second)
	if st, _, err := postPassword(env, id, apptest.Password); err != nil || st != http.StatusBadRequest {
		t.Errorf("request token after 10 minutes: %d (err %v), want 400", st, err)
	}
}

// TestRegistrationLimitPerTrustedSource: the per-source registration limit
// counts the address in Cf-Connecting-Ip only when the peer is a trusted
// proxy; a header from any other peer is ignored (the limit is off then,
// since the peer may be a tunnel that everyone shares).
func TestRegistrationLimitPerTrustedSource(t *testing.T) {
	register := func(env *apptest.Env, header []string) (int, string) {
		t.Helper()
		body := `{"client_name":"r","redirect_uris":["http://127.0.0.1:9/cb"],"token_endpoint_auth_method":"none"}`
		req, _ := http.NewRequest(http.MethodPost, env.URL+"/oauth/register", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for _, h := range header {
			req.Header.Add(oauth.DefaultClientIPHeader, h)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	type step struct {
		header []string // Cf-Connecting-Ip values sent
		want   int
	}
	one := func(ip string, want int) step { return step{[]string{ip}, want} }
	for _, tc := range []struct {
		name    string
		proxies string // the test's peer is 127.0.0.1
		steps   []step
	}{
		{name: "trusted peer: counted per named address", proxies: "127.0.0.0/8", steps: []step{
			one("203.0.113.7", 201), one("203.0.113.7", 201), one("203.0.113.7", 429),
			one("::ffff:203.0.113.7", 429), // the same address, IPv4-mapped
			one("198.51.100.1", 201),
		}},
		{name: "trusted peer without one address: not counted", proxies: "127.0.0.1", steps: []step{
			one("203.0.113.7", 201), one("203.0.113.7", 201),
			{nil, 201}, {[]string{"203.0.113.7", "198.51.100.1"}, 201}, one("not-an-address", 201),
			one("203.0.113.7", 429),
		}},
		{name: "untrusted peer: header ignored", proxies: "10.0.0.0/8", steps: []step{
			one("203.0.113.7", 201), one("203.0.113.7", 201), one("203.0.113.7", 201), one("203.0.113.7", 201),
		}},
		{name: "no trusted proxy: header ignored", steps: []step{
			one("203.0.113.7", 201), one("203.0.113.7", 201), one("203.0.113.7", 201), one("203.0.113.7", 201),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := apptest.Start(t, apptest.Options{Env: map[string]string{
				"DEVSPACE_TRUSTED_PROXIES": tc.proxies, "DEVSPACE_OAUTH_REGISTRATIONS_PER_SOURCE": "2"}})
			for i, s := range tc.steps {
				st, retry := register(env, s.header)
				if st != s.want {
					t.Errorf("registration %d with %s %q: %d, want %d", i+1, oauth.DefaultClientIPHeader, s.header, st, s.want)
				}
				if st == http.StatusTooManyRequests && retry == "" {
					t.Errorf("registration %d: 429 without Retry-After", i+1)
				}
			}
		})
	}
}

// TestCodeMisuseLeavesGrantWorking: someone who sees a code (a log, a
// referrer, a shared screen) cannot end the grant it created or burn it.
func TestCodeMisuseLeavesGrantWorking(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	c := env.Register("legit", "http://127.0.0.1:9/cb", "client_secret_post")
	attacker := env.Register("attacker", "http://127.0.0.1:9/cb", "none")
	exchange := func(as apptest.Client, code, verifier string) apptest.TokenResponse {
		return env.Token(as, url.Values{"grant_type": {"authorization_code"}, "code": {code},
			"redirect_uri": {c.RedirectURI}, "code_verifier": {verifier}})
	}
	stillWorks := func(t *testing.T, tr apptest.TokenResponse) {
		t.Helper()
		if _, err := env.App.OAuth().Verify(context.Background(), tr.AccessToken); err != nil {
			t.Fatalf("legitimate access token: %v", err)
		}
		if r := env.Token(c, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tr.RefreshToken}}); r.Status != 200 {
			t.Fatalf("legitimate refresh: %+v", r)
		}
	}
	t.Run("consumed code presented by another client", func(t *testing.T) {
		code, verifier := authCode(t, env, c, apptest.Approval{})
		tr := exchange(c, code, verifier)
		if tr.Status != 200 {
			t.Fatalf("exchange: %+v", tr)
		}
		if r := exchange(attacker, code, verifier); r.Status != 400 || r.Error != "invalid_grant" {
			t.Fatalf("attacker's replay: %+v", r)
		}
		stillWorks(t, tr)
	})
	t.Run("fresh code presented by another client", func(t *testing.T) {
		code, verifier := authCode(t, env, c, apptest.Approval{})
		if r := exchange(attacker, code, verifier); r.Status != 400 || r.Error != "invalid_grant" {
			t.Fatalf("attacker's exchange: %+v", r)
		}
		tr := exchange(c, code, verifier)
		if tr.Status != 200 {
			t.Fatalf("legitimate exchange after the attempt: %+v", tr)
		}
		stillWorks(t, tr)
	})
	t.Run("fresh code with a wrong verifier", func(t *testing.T) {
		code, verifier := authCode(t, env, c, apptest.Approval{})
		if r := exchange(c, code, "wrong-verifier-wrong-verifier-wrong-verifier-00"); r.Status != 400 || r.Error != "invalid_grant" {
			t.Fatalf("wrong verifier: %+v", r)
		}
		tr := exchange(c, code, verifier)
		if tr.Status != 200 {
			t.Fatalf("legitimate exchange after a wrong verifier: %+v", tr)
		}
		stillWorks(t, tr)
	})
	t.Run("consumed code with a wrong verifier by its own client", func(t *testing.T) {
		code, verifier := authCode(t, env, c, apptest.Approval{})
		tr := exchange(c, code, verifier)
		if tr.Status != 200 {
			t.Fatalf("exchange: %+v", tr)
		}
		if r := exchange(c, code, "wrong-verifier-wrong-verifier-wrong-verifier-00"); r.Status != 400 {
			t.Fatalf("replay with a wrong verifier: %+v", r)
		}
		stillWorks(t, tr)
	})
	for _, ev := range []string{`"oauth_code_client_mismatch"`, `"oauth_code_verifier_mismatch"`} {
		if !strings.Contains(env.Logs.String(), ev) {
			t.Errorf("no audit event %s", ev)
		}
	}
	t.Run("replay by its own client still revokes", func(t *testing.T) {
		code, verifier := authCode(t, env, c, apptest.Approval{})
		tr := exchange(c, code, verifier)
		if r := exchange(c, code, verifier); r.Status != 400 {
			t.Fatalf("replay: %+v", r)
		}
		if _, err := env.App.OAuth().Verify(context.Background(), tr.AccessToken); !errors.Is(err, oauth.ErrTokenRevoked) {
			t.Fatalf("grant survived its own client's replay: %v", err)
		}
	})
}

// TestRegistrationFloodDoesNotLockOut: 500 unused registrations push out
// the oldest unused ones instead of refusing further registrations; a
// client that has a grant is never pushed out.
func TestRegistrationFloodDoesNotLockOut(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	used, tok := env.Grant(apptest.Approval{})
	oldest := env.Register("oldest unused", "http://127.0.0.1:9/cb", "none")
	for i := range 500 {
		body := `{"client_name":"flood","redirect_uris":["http://127.0.0.1:9/cb"],"token_endpoint_auth_method":"none"}`
		resp, err := http.Post(env.URL+"/oauth/register", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("registration %d: %s", i+1, resp.Status)
		}
	}
	// The bound still holds: the oldest unused registration was pushed out.
	_, challenge := apptest.PKCE()
	if resp, err := apptest.NoRedirect.Get(env.AuthURL(oldest, challenge, "s", "", nil)); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("oldest unused client after the flood: %s, want 400 (evicted)", resp.Status)
		}
	}
	// ChatGPT registering now gets a working client.
	c := env.Register("ChatGPT", "http://127.0.0.1:9/callback", "client_secret_basic")
	env.GrantFor(c, apptest.Approval{})
	// The client that was already in use survived.
	if r := env.Token(used, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}}); r.Status != 200 {
		t.Fatalf("used client after the flood: %+v", r)
	}
}

// TestSlowOAuthBodies: unauthenticated POSTs whose bodies stall are
// answered 408 and closed within the configured idle timeout, while
// /healthz keeps answering.
func TestSlowOAuthBodies(t *testing.T) {
	env := apptest.Start(t, apptest.Options{Env: map[string]string{"DEVSPACE_HTTP_BODY_IDLE_TIMEOUT": "300ms"}})
	host := strings.TrimPrefix(env.URL, "http://")
	var conns []net.Conn
	for i := range 30 {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		path := []string{"/oauth/register", "/oauth/token", "/oauth/authorize"}[i%3]
		ct := map[string]string{"/oauth/register": "application/json"}[path]
		if ct == "" {
			ct = "application/x-www-form-urlencoded"
		}
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: 1000\r\n\r\nx", path, host, ct)
		conns = append(conns, c)
	}
	if _, m := getJSON(t, env.URL+"/healthz"); m["status"] != "ok" {
		t.Fatalf("healthz: %v", m)
	}
	for i, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		start := time.Now()
		out, err := io.ReadAll(c)
		if err != nil {
			t.Fatalf("connection %d still open after %v: %v", i, time.Since(start), err)
		}
		if !strings.HasPrefix(string(out), "HTTP/1.1 408") {
			t.Errorf("connection %d: %q, want 408", i, out)
		}
	}
}

// TestMetadataClientAfterRegistrationFlood: after a registration flood a
// new client ID metadata document client can still authorize, and the
// name from its document is shown cleaned.
func TestMetadataClientAfterRegistrationFlood(t *testing.T) {
	var clientID string
	doc := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"client_id": clientID, "client_name": "Meta\u202edata\u200b Client",
			"redirect_uris": []string{"http://127.0.0.1:9/cimd-cb"}, "token_endpoint_auth_method": "none"})
	}))
	defer doc.Close()
	clientID = doc.URL + "/client.json"
	env := apptest.Start(t, apptest.Options{AllowLoopbackMetadata: true, MetadataHTTPClient: doc.Client()})
	for i := range 100 {
		body := `{"client_name":"flood","redirect_uris":["http://127.0.0.1:9/cb"],"token_endpoint_auth_method":"none"}`
		resp, err := http.Post(env.URL+"/oauth/register", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("registration %d: %s", i+1, resp.Status)
		}
	}
	c := apptest.Client{ID: clientID, RedirectURI: "http://127.0.0.1:9/cimd-cb", AuthMethod: "none"}
	_, challenge := apptest.PKCE()
	resp, err := apptest.NoRedirect.Get(env.AuthURL(c, challenge, "s", "", nil))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("metadata client after the flood: %s %s", resp.Status, page)
	}
	if !strings.Contains(string(page), "Metadata Client") || strings.ContainsAny(string(page), "\u202e\u200b") {
		t.Errorf("metadata client name not shown cleaned")
	}
	env.GrantFor(c, apptest.Approval{})
}
