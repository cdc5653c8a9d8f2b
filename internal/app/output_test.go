package app_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/devspace-dev/devspace/internal/apptest"
)

// TestOutputGrantShare: DEVSPACE_OUTPUT_GRANT_SHARE reaches the process
// manager (devspace_output_grant_share_bytes says what it enforces; a
// share past the 1 GiB spool is the whole spool), and the largest
// grant's use is exported without a grant label.
func TestOutputGrantShare(t *testing.T) {
	for _, tt := range []struct {
		name, share, want string
	}{
		{"default", "", "2.68435456e+08"},
		{"set", "64MiB", "6.7108864e+07"},
		{"past the spool", "2GiB", "1.073741824e+09"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := apptest.Start(t, apptest.Options{Env: map[string]string{"DEVSPACE_OUTPUT_GRANT_SHARE": tt.share}})
			rec := httptest.NewRecorder()
			env.App.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			var got []string
			for _, line := range strings.Split(rec.Body.String(), "\n") {
				if strings.HasPrefix(line, "devspace_output_") && !strings.HasPrefix(line, "devspace_output_bytes_retained ") {
					got = append(got, line)
				}
			}
			want := []string{"devspace_output_bytes_retained_grant_max 0", "devspace_output_grant_share_bytes " + tt.want}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("metrics (-want +got):\n%s", diff)
			}
		})
	}
}
