package project

import (
	"path"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/cases"
)

// IsSensitive reports whether a Project-relative path names a file that
// commonly holds secrets: .env files, private keys, certificates with keys,
// credential stores. read_files refuses these and inspect hides them unless
// allowSensitive is sent; snapshots never keep them. Matching is by name
// (case-insensitive) and by the directories .ssh, .aws, .gnupg, .docker.
func IsSensitive(rel string) bool {
	lower := fold(rel)
	base := path.Base(lower)
	for _, dir := range strings.Split(path.Dir(lower), "/") {
		switch dir {
		case ".ssh", ".gnupg", ".aws", ".azure", ".kube":
			return true
		}
	}
	switch {
	case base == ".env" || strings.HasPrefix(base, ".env.") || strings.HasSuffix(base, ".env"):
		return !strings.HasSuffix(base, ".example") && !strings.HasSuffix(base, ".sample") && !strings.HasSuffix(base, ".template")
	case strings.HasPrefix(base, "id_rsa"), strings.HasPrefix(base, "id_dsa"), strings.HasPrefix(base, "id_ecdsa"), strings.HasPrefix(base, "id_ed25519"):
		return !strings.HasSuffix(base, ".pub")
	}
	for _, suffix := range []string{".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".kdbx", ".ppk", ".asc", ".gpg", ".tfstate", ".tfvars"} {
		if strings.HasSuffix(base, suffix) {
			return true
		}
	}
	switch base {
	case ".netrc", "_netrc", ".npmrc", ".pypirc", ".git-credentials", ".htpasswd", "credentials", "credentials.json",
		"secrets.json", "secrets.yaml", "secrets.yml", "service-account.json", "client_secret.json", ".dockercfg",
		"auth.json", "token.json", ".vault-token", "kubeconfig", "terraform.tfstate":
		return true
	}
	if strings.HasSuffix(base, ".json") && (strings.Contains(base, "service-account") || strings.Contains(base, "serviceaccount") ||
		strings.HasPrefix(base, "client_secret")) {
		return true
	}
	if path.Dir(lower) == ".docker" || strings.HasSuffix(path.Dir(lower), "/.docker") {
		return base == "config.json"
	}
	return false
}

// fold returns s under Unicode full case folding, as a case-insensitive
// filesystem compares names: ".ſsh" (long s), ".ßh" and "\u212Aubeconfig"
// (Kelvin sign) name .ssh, .ssh and kubeconfig there, which
// strings.ToLower does not see. ASCII, the common case, is only
// lowercased.
func fold(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return cases.Fold().String(s)
		}
	}
	return strings.ToLower(s)
}
