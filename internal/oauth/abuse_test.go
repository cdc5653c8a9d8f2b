package oauth_test

import (
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/devspace-dev/devspace/internal/apptest"
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
	form := url.Values{"request": {request}, "password": {password}}
	req, _ := http.NewRequest(http.MethodPost, env.URL+"/oauth/authorize", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", env.URL)
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
// authorization request per guess does not escape the per-client limit.
func TestConcurrentPasswordGuessesAcrossRequests(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	c := env.Register("brute", "http://127.0.0.1:9/cb", "client_secret_basic")
	const n = 30
	ids := make([]string, n)
	for i := range ids {
		ids[i] = startRequest(t, env, c)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if _, _, err := postPassword(env, id, "wrong password!"); err != nil {
				t.Error(err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if verified := strings.Count(env.Logs.String(), `"owner_password_failed"`); verified > 4 {
		t.Errorf("%d wrong passwords verified over %d requests of one client; want at most 4", verified, n)
	}
}
