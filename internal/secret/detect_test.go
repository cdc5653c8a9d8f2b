package secret

import (
	"strings"
	"testing"
)

func TestDetect(t *testing.T) {
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
			kind, found := Detect(tc.in)
			if kind != tc.kind || found != (tc.kind != "") {
				t.Errorf("Detect = %q, %v; want %q", kind, found, tc.kind)
			}
			// Redact removes exactly what Detect finds: nothing is found in
			// its result, and text without a credential is unchanged.
			red := Redact(tc.in)
			if k, found := Detect(red); found {
				t.Errorf("Redact left a %s: %q", k, red)
			}
			if (red != tc.in) != found {
				t.Errorf("Redact(%q) = %q; changed: %v, want %v", tc.in, red, red != tc.in, found)
			}
			if found && !strings.Contains(red, Redacted) {
				t.Errorf("Redact(%q) = %q, without the marker", tc.in, red)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	const pemBody = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\nVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"
	for _, tc := range []struct{ name, in, want string }{
		{"keyword kept", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY && ls",
			"aws_secret_access_key = [REDACTED] && ls"},
		{"header name kept", `curl -H "Authorization: Bearer 9f8e7d6c5b4a3928171605f4e3d2c1b0" https://api`,
			`curl -H "Authorization: Bearer [REDACTED]" https://api`},
		{"joined arguments", "curl -H Authorization: Bearer 9f8e7d6c5b4a3928171605f4e3d2c1b0 https://api",
			"curl -H Authorization: Bearer [REDACTED] https://api"},
		{"url password only", "git clone https://deploy:Xk92mQpL7vRt3zWn@git.example.com/repo.git",
			"git clone https://deploy:[REDACTED]@git.example.com/repo.git"},
		{"prefix token whole", "push ghp_abcdefghijklmnopqrstuvwxyz0123456789 now", "push [REDACTED] now"},
		{"google keeps its delimiter", "key=AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe&x=1", "key=[REDACTED]&x=1"},
		{"every occurrence", strings.Repeat("AKIAIOSFODNN7EXAMPLE ", 12), strings.Repeat("[REDACTED] ", 12)},
		{"private key to its end line", "cat <<EOF\n-----BEGIN RSA PRIVATE KEY-----\n" + pemBody + "-----END RSA PRIVATE KEY-----\nEOF",
			"cat <<EOF\n[REDACTED]\nEOF"},
		{"private key without end", "echo '-----BEGIN PRIVATE KEY-----\n" + pemBody, "echo '[REDACTED]"},
		{"placeholder untouched", `curl -H "Authorization: Bearer $TOKEN"`, `curl -H "Authorization: Bearer $TOKEN"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Redact(tc.in); got != tc.want {
				t.Errorf("Redact(%q)\n= %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	if err := Check("progress", "run the tests, then open a PR"); err != nil {
		t.Errorf("Check of plain text = %v", err)
	}
	token := "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
	err := Check("progress", "push with "+token)
	e, ok := err.(*Error)
	if !ok || *e != (Error{Field: "progress", Kind: "github_token"}) {
		t.Fatalf("Check = %#v; want *Error{progress, github_token}", err)
	}
	if strings.Contains(err.Error(), token[4:]) {
		t.Errorf("the error holds the credential: %v", err)
	}
}
