package project

import (
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
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

// fold returns s as case-insensitive filesystems compare names, so that
// every spelling one of them takes for a sensitive name is matched:
// default-ignorable code points dropped (HFS+ and Linux casefold ignore
// them: ".s\u200Dsh" and ".e\u00ADnv" are .ssh and .env there), then Unicode's
// canonical caseless form, NFD(fold(NFD(s))) with full case folding
// (Linux casefold on ext4 and f2fs, APFS: ".ſsh" and ".ßh" are .ssh,
// "\u212Aubeconfig" (Kelvin sign) is kubeconfig, "id_rs\u00E0" is id_rsa
// with a combining grave). NTFS and SMB upcase no non-ASCII letter to
// ASCII, so lowercasing covers them. docs/decisions.md says why. ASCII,
// the common case, is only lowercased.
func fold(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			s = strings.Map(dropIgnorable, s)
			return norm.NFD.String(cases.Fold().String(norm.NFD.String(s)))
		}
	}
	return strings.ToLower(s)
}

// dropIgnorable maps a default-ignorable code point to -1 (dropped) and
// every other rune to itself. It takes every format character (Cf),
// variation selector and other default-ignorable code point: a little
// more than Unicode's Default_Ignorable_Code_Point, which errs toward
// withholding a file.
func dropIgnorable(r rune) rune {
	if unicode.In(r, unicode.Cf, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point) {
		return -1
	}
	return r
}
