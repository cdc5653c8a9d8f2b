// Package e2e tests the DevSpace container image from the outside: the
// image built by `make e2e` (Dockerfile, runtime-prebuilt target, on a base
// made locally with debootstrap) runs with the hardening of compose.yaml,
// and the tests drive it from the host as a client would — the OAuth flow
// with the consent form posted by the test, then the go-sdk MCP client — and
// look inside with `docker exec` (/proc scans by a marker).
//
// The tests carry the build tag e2e and need root and Docker: run them with
// `make e2e`. Nothing here talks to anything but 127.0.0.1 and containers on
// networks the tests create. The chart subpackage renders the Helm chart
// (`make helm-lint`).
package e2e
