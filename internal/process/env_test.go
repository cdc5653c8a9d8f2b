package process

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBaseEnv(t *testing.T) {
	host := []string{
		"PATH=/usr/bin:/bin", "HOME=/home/dev", "LANG=en_US.UTF-8", "LC_TIME=C", "TZ=UTC",
		"GOPATH=/go", "DEVSPACE_MASTER_KEY_FILE=/run/key", "GITHUB_TOKEN=ghp_x", "AWS_SECRET_ACCESS_KEY=abc",
		"SSH_AUTH_SOCK=/tmp/agent", "TERM=xterm-256color", "PAGER=less", "HTTPS_PROXY=http://proxy:3128",
		"HTTP_PROXY=http://user:pw@proxy:3128", "LC_BAD-NAME=x", "NOEQUALS",
	}
	want := []string{
		"GIT_PAGER=cat", "GIT_TERMINAL_PROMPT=0", "GOPATH=/go", "HOME=/home/dev", "HTTPS_PROXY=http://proxy:3128",
		"LANG=en_US.UTF-8", "LC_TIME=C", "MANPAGER=cat", "NO_COLOR=1", "PAGER=cat", "PATH=/usr/bin:/bin",
		"TERM=dumb", "TZ=UTC",
	}
	if diff := cmp.Diff(want, BaseEnv(host)); diff != "" {
		t.Errorf("BaseEnv (-want +got):\n%s", diff)
	}
	empty := BaseEnv(nil)
	if v := envValue(empty, "PATH"); v != defaultPath {
		t.Errorf("default PATH = %q", v)
	}
	if v := envValue(empty, "LANG"); v != "C.UTF-8" {
		t.Errorf("default LANG = %q", v)
	}
}

func TestMergeEnv(t *testing.T) {
	got := MergeEnv([]string{"A=1", "TERM=dumb"}, map[string]string{"TERM": "xterm", "B": "x=y"})
	if diff := cmp.Diff([]string{"A=1", "B=x=y", "TERM=xterm"}, got); diff != "" {
		t.Errorf("MergeEnv (-want +got):\n%s", diff)
	}
}

func TestValidateEnv(t *testing.T) {
	many := map[string]string{}
	for i := 0; i <= MaxEnvEntries; i++ {
		many["V"+strings.Repeat("x", i)] = "1"
	}
	tests := []struct {
		name string
		env  map[string]string
		ok   bool
	}{
		{name: "nil", env: nil, ok: true},
		{name: "simple", env: map[string]string{"FOO": "bar", "_x1": "", "CI": "true"}, ok: true},
		{name: "ld_preload_allowed", env: map[string]string{"LD_PRELOAD": "/lib/x.so"}, ok: true},
		{name: "value_with_newline_and_equals", env: map[string]string{"A": "x=y\nz"}, ok: true},
		{name: "leading_digit", env: map[string]string{"1A": "x"}},
		{name: "dash", env: map[string]string{"MY-VAR": "x"}},
		{name: "empty_name", env: map[string]string{"": "x"}},
		{name: "equals_in_name", env: map[string]string{"A=B": "x"}},
		{name: "nul_in_name", env: map[string]string{"A\x00": "x"}},
		{name: "nul_in_value", env: map[string]string{"A": "x\x00y"}},
		{name: "unicode_name", env: map[string]string{"É": "x"}},
		{name: "too_many", env: many},
		{name: "too_big", env: map[string]string{"A": strings.Repeat("x", MaxEnvBytes)}},
		{name: "at_size_limit", env: map[string]string{"A": strings.Repeat("x", MaxEnvBytes-2)}, ok: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateEnv(tc.env)
			if tc.ok && err != nil {
				t.Errorf("ValidateEnv = %v, want nil", err)
			}
			if !tc.ok && !errors.Is(err, ErrInvalidEnv) {
				t.Errorf("ValidateEnv = %v, want ErrInvalidEnv", err)
			}
		})
	}
}

func TestDetectSecret(t *testing.T) {
	const pemBody = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\nVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"
	tests := []struct {
		name, in, kind string
	}{
		{"aws_access_key", "aws s3 ls --access-key AKIAIOSFODNN7EXAMPLE", "aws_access_key_id"},
		{"aws_session_key", "export K=ASIAY34FZKBOKMUTVV7A", "aws_access_key_id"},
		{"aws_secret", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key"},
		{"github_classic", "git push https://ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/x/y", "github_token"},
		{"github_oauth", "GH=gho_16C7e42F292c6912E7710c838347Ae178B4a", "github_token"},
		{"github_app", "ghs_16C7e42F292c6912E7710c838347Ae178B4a", "github_token"},
		{"github_fine_grained", "github_pat_11ABCDEFG0123456789abc_0123456789abcdefghijABCDEFGHIJ0123456789abcdefghijABCDEFGH", "github_token"},
		{"bearer_header", `curl -H "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9abc.def123" https://api`, "authorization_bearer"},
		{"bearer_opaque", "Authorization: bearer 9f8e7d6c5b4a3928171605f4e3d2c1b0", "authorization_bearer"},
		{"basic_header", "authorization: Basic dXNlcjpwYXNzd29yZA==", "authorization_basic"},
		{"rsa_private_key", "-----BEGIN RSA PRIVATE KEY-----\n" + pemBody + "-----END RSA PRIVATE KEY-----", "private_key"},
		{"openssh_private_key", "echo '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n' > k", "private_key"},
		{"pkcs8_private_key", "-----BEGIN PRIVATE KEY-----\r\n" + pemBody, "private_key"},
		{"encrypted_private_key", "-----BEGIN ENCRYPTED PRIVATE KEY-----\n" + pemBody, "private_key"},
		{"slack_bot", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "slack_token"},
		{"slack_user", "token=xoxp-1234567890-abcdef", "slack_token"},
		{"slack_webhook", "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX", "slack_webhook"},
		{"gitlab", "glpat-xxxxxxxxxxxxxxxxxxxx", "gitlab_token"},
		{"stripe", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "stripe_secret_key"},
		{"google", "key=AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe", "google_api_key"},
		{"npm", "npm_abcdefghijklmnopqrstuvwxyz0123456789", "npm_token"},
		{"openai", "OPENAI_API_KEY=sk-proj-abcdefghijT3BlbkFJabcdefghijklmnop", "openai_api_key"},
		{"jwt", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "jwt"},
		{"url_credentials", "git clone https://deploy:Xk92mQpL7vRt3zWn@git.example.com/repo.git", "url_credentials"},

		{"plain_command", "go test ./... -run TestAKIA", ""},
		{"bearer_variable", `curl -H "Authorization: Bearer $GITHUB_TOKEN" https://api`, ""},
		{"bearer_braces", `curl -H "Authorization: Bearer ${TOKEN}" x`, ""},
		{"bearer_placeholder", `Authorization: Bearer <token>`, ""},
		{"bearer_word_placeholder", `Authorization: Bearer YOUR_ACCESS_TOKEN_HERE`, ""},
		{"private_key_header_only", `grep -rl -- "-----BEGIN RSA PRIVATE KEY-----" .`, ""},
		{"public_key", "-----BEGIN PUBLIC KEY-----\n" + pemBody, ""},
		{"short_ghp", "ghp_short", ""},
		{"aws_lowercase", "akiaiosfodnn7example", ""},
		{"aws_too_short", "AKIA1234", ""},
		{"password_assignment", "mysql --password=$DB_PASSWORD", ""},
		{"local_db_url", "psql postgres://postgres:postgres@localhost:5432/app", ""},
		{"git_sha", "git show 3f786850e387550fdab836ed7e6dc881de23001b", ""},
		{"uuid", "curl /items/123e4567-e89b-12d3-a456-426614174000", ""},
		{"slack_word", "xoxo-hugs", ""},
		{"basic_not_credential", "Authorization: Basic aGVsbG93b3JsZA==", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kind, found := DetectSecret(tc.in)
			if kind != tc.kind || found != (tc.kind != "") {
				t.Errorf("DetectSecret = %q, %v; want %q", kind, found, tc.kind)
			}
		})
	}
}

func TestCgroupAvailable(t *testing.T) {
	ok, reason := CgroupAvailable()
	t.Logf("cgroup available: %v (%s)", ok, reason)
	if reason == "" || strings.Contains(reason, "/") {
		t.Errorf("reason %q must be a sentence without a path", reason)
	}
}
